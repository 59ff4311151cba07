package baseline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/untrusted"
)

// Store keeps the profiles as one JSON file each under the polygraph
// home's baselines directory: $POLYGRAPH_HOME/baselines/KEY.json. A
// profile is small (sets and a few numbers per session), and a file a
// person can read and diff is worth more than a table.
type Store struct {
	dir       string
	protected bool // the sudo store's: made root's (stores.MkdirProtected)
}

// Open returns the store of the polygraph home home (stores.Home()):
// under sudo, for the default home, the invoking user's baselines
// directory in the sudo store, which only root can write
// (session.ProtectedPath), since anything the user runs can write their
// home's; else home/baselines.
func Open(home string) *Store {
	dir, protected := stores.ProtectedPath(home, "baselines")
	return &Store{dir: dir, protected: protected}
}

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

// fileName turns a profile key into a file name: agent names and
// versions are words, dots and dashes; anything else becomes _.
func fileName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '@' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b) + ".json"
}

// MaxFileBytes bounds a baseline file the store reads: a profile holds
// sets and a few numbers per session, far less. The files sit where
// anything the user runs can write, so a larger one, like a FIFO or a
// device in its place, is refused in one line rather than read.
const MaxFileBytes = 64 << 20

// maxFiles bounds the files List reads: one per agent and version.
const maxFiles = 10000

// Load returns the profile with key, nil (and no error) when there is
// none.
func (s *Store) Load(key string) (*Profile, error) {
	p, err := readProfile(filepath.Join(s.dir, fileName(key)), key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return p, err
}

// readProfile reads one profile file (untrusted.ReadFile), whole
// (Normalize).
func readProfile(path, name string) (*Profile, error) {
	b, err := untrusted.ReadFile(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	return parseProfile(b, name)
}

// parseProfile decodes a profile file's content, whole (Normalize).
func parseProfile(b []byte, name string) (*Profile, error) {
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", name, err)
	}
	p.Normalize()
	return &p, nil
}

// Save writes p, replacing the file atomically.
func (s *Store) Save(p *Profile) error {
	mkdir := func(d string) error { return os.MkdirAll(d, 0o700) }
	if s.protected {
		mkdir = stores.MkdirProtected
	}
	if err := mkdir(s.dir); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	path := filepath.Join(s.dir, fileName(p.Key()))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	return nil
}

// List returns every profile, by key.
func (s *Store) List() ([]*Profile, error) {
	d, err := untrusted.OpenDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	ents, err := d.ReadDir(maxFiles + 1)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if len(ents) > maxFiles {
		return nil, fmt.Errorf("baseline: %s holds more than %d files", s.dir, maxFiles)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var out []*Profile
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		p, err := readProfile(filepath.Join(s.dir, e.Name()), name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *Profile) int { return strings.Compare(a.Key(), b.Key()) })
	return out, nil
}

// Select returns the profile to judge a session of agent (at version)
// by: the agent's profile for that version, else the agent's profile with
// the most sessions (another version behaves much the same more often
// than not; the finding names the profile used). nil when the agent has
// none.
func (s *Store) Select(agent, version string) (*Profile, error) {
	if agent == "" {
		return nil, nil
	}
	if p, err := s.Load(Key(agent, version)); p != nil || err != nil {
		return p, err
	}
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var best *Profile
	for _, p := range all {
		if p.Agent == agent && (best == nil || len(p.Sessions) > len(best.Sessions)) {
			best = p
		}
	}
	return best, nil
}
