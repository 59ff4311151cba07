package integrity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/untrusted"
)

// The files under $POLYGRAPH_HOME/integrity. JSON rather than SQLite: the
// pin file is the user's to read, diff and keep in a dotfiles repo.
const (
	PinsFile = "pins.json"
	SeenFile = "seen.json"
	lockFile = ".lock"
)

// Pin is a hash the user vouches for at a path.
type Pin struct {
	SHA256   string    `json:"sha256"`
	Size     int64     `json:"size"`
	PinnedAt time.Time `json:"pinned_at"`
}

// Seen is what this host knew of a path before: the hash it first ran
// with, and the hash it last ran with (which a later change is compared
// against, so one upgrade is news once, not in every session after).
type Seen struct {
	FirstSHA256 string    `json:"first_sha256"`
	FirstSeen   time.Time `json:"first_seen"`
	SHA256      string    `json:"sha256"`
	Since       time.Time `json:"since"`
	Changes     int       `json:"changes,omitempty"`
}

// pinsDoc and seenDoc are the files' shapes. Seen hashes are kept per
// host: a home directory shared over NFS must not teach one machine what
// another runs.
type pinsDoc struct {
	Version int            `json:"version"`
	Pins    map[string]Pin `json:"pins"`
}

type seenDoc struct {
	Version int                        `json:"version"`
	Hosts   map[string]map[string]Seen `json:"hosts"`
}

// Store is the integrity directory. Every change is read-modify-write
// under an exclusive lock on a separate lock file, replacing the file by
// rename, so two polygraphs finishing at once lose nothing and a crash
// leaves the old file whole.
type Store struct {
	Dir string
	// protected: the sudo store's (session.ProtectedPath), whose files
	// stay root's.
	protected bool
}

// MaxFileBytes bounds a pin or first-seen file the store reads: a line
// per file pinned or seen, far less. A larger one is refused in one line.
const MaxFileBytes = 64 << 20

// OpenStore returns the store of home (stores.Home()). Under sudo, for
// the default home, that is the invoking user's integrity directory in
// the sudo store, root's: the traced tree runs as the user and once
// vouched for its own script by writing it into the user's pin file. The
// pins in the user's home are then not used, and a store that has some
// says so in one line. Otherwise it is home/integrity, owned by the
// invoking user.
func OpenStore(home string) (*Store, error) {
	dir, protected := stores.ProtectedPath(home, "integrity")
	if protected {
		if err := stores.MkdirProtected(dir); err != nil {
			return nil, fmt.Errorf("integrity store: %w", err)
		}
		if own := filepath.Join(home, "integrity", PinsFile); fileExists(own) {
			slog.Warn(fmt.Sprintf("integrity: the pins in %s are not used under sudo, since anything you run can write them; a sudo run trusts the pins in %s (sudo polygraph integrity pin)", own, dir))
		}
		return &Store{Dir: dir, protected: true}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("integrity store: %w", err)
	}
	if err := chownInvoker(dir); err != nil {
		return nil, fmt.Errorf("integrity store: %w", err)
	}
	return &Store{Dir: dir}, nil
}

// fileExists says whether path names anything.
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Pins reads the pin file; a missing file is no pins.
func (s *Store) Pins() (map[string]Pin, error) {
	var d pinsDoc
	if err := s.read(PinsFile, &d); err != nil {
		return nil, err
	}
	if d.Pins == nil {
		d.Pins = map[string]Pin{}
	}
	return d.Pins, nil
}

// UpdatePins applies fn to the pins under the lock and writes the result.
func (s *Store) UpdatePins(fn func(map[string]Pin) error) error {
	return s.locked(func() error {
		pins, err := s.Pins()
		if err != nil {
			return err
		}
		if err := fn(pins); err != nil {
			return err
		}
		return s.write(PinsFile, pinsDoc{Version: 1, Pins: pins})
	})
}

// Seen reads host's first-seen hashes.
func (s *Store) Seen(host string) (map[string]Seen, error) {
	d, err := s.seenDoc()
	if err != nil {
		return nil, err
	}
	m := d.Hosts[host]
	if m == nil {
		m = map[string]Seen{}
	}
	return m, nil
}

func (s *Store) seenDoc() (seenDoc, error) {
	var d seenDoc
	if err := s.read(SeenFile, &d); err != nil {
		return d, err
	}
	if d.Hosts == nil {
		d.Hosts = map[string]map[string]Seen{}
	}
	return d, nil
}

// MergeSeen records hashes observed by a session, keyed by path: a path
// new to host is added, a path whose hash changed gets the new hash as the
// one to compare against next time. It re-reads the file under the lock
// so sightings of concurrent sessions are merged, not overwritten.
func (s *Store) MergeSeen(host string, observed map[string]Seen) error {
	if len(observed) == 0 {
		return nil
	}
	return s.locked(func() error {
		d, err := s.seenDoc()
		if err != nil {
			return err
		}
		m := d.Hosts[host]
		if m == nil {
			m = map[string]Seen{}
			d.Hosts[host] = m
		}
		for p, o := range observed {
			old, ok := m[p]
			switch {
			case !ok:
				m[p] = o
			case old.SHA256 != o.SHA256:
				old.SHA256, old.Since = o.SHA256, o.Since
				old.Changes++
				m[p] = old
			}
		}
		d.Version = 1
		return s.write(SeenFile, d)
	})
}

func (s *Store) read(name string, v any) error {
	b, err := untrusted.ReadFile(filepath.Join(s.Dir, name), MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("integrity store: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("integrity store %s: %w", name, err)
	}
	return nil
}

// write replaces name by rename of a synced temp file.
func (s *Store) write(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("integrity store: %w", err)
	}
	f, err := os.CreateTemp(s.Dir, name+".*")
	if err != nil {
		return fmt.Errorf("integrity store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly after the rename
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !s.protected {
		err = chownInvoker(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.Dir, name))
	}
	if err != nil {
		return fmt.Errorf("integrity store %s: %w", name, err)
	}
	return nil
}

// locked runs fn holding the store's lock.
func (s *Store) locked(fn func() error) error {
	p := filepath.Join(s.Dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("integrity lock: %w", err)
	}
	defer f.Close()
	if !s.protected {
		if err := chownInvoker(p); err != nil {
			return fmt.Errorf("integrity lock: %w", err)
		}
	}
	if err := lockFD(f); err != nil {
		return fmt.Errorf("integrity lock: %w", err)
	}
	defer unlockFD(f)
	return fn()
}

// chownInvoker hands a file we created under sudo to the user who ran
// sudo, so their own `polygraph integrity list` can read it.
func chownInvoker(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	_, uid, gid, _ := accounts.InvokingUser()
	if uid == 0 {
		return nil
	}
	if err := os.Lchown(path, uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// PinPaths hashes each path and pins it under its absolute,
// symlink-resolved name, the name the kernel reports an exec by. It
// returns the names pinned, in order.
func (s *Store) PinPaths(paths []string, now time.Time) ([]string, error) {
	pinned := make(map[string]Pin, len(paths))
	var names []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("pin %s: %w", p, err)
		}
		f, err := os.Open(abs)
		if err != nil {
			return nil, fmt.Errorf("pin: %w", err)
		}
		fi, err := f.Stat()
		var d digest
		if err == nil && !fi.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err == nil {
			d, err = hashFile(context.Background(), f, false)
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("pin %s: %w", abs, err)
		}
		pinned[abs] = Pin{SHA256: d.sha256, Size: d.size, PinnedAt: now.UTC()}
		names = append(names, abs)
	}
	return names, s.UpdatePins(func(m map[string]Pin) error {
		for p, pin := range pinned {
			m[p] = pin
		}
		return nil
	})
}

// Unpin removes the pins of paths (resolved as PinPaths does, or taken as
// given when the file is gone) and returns those that were pinned.
func (s *Store) Unpin(paths []string) ([]string, error) {
	var removed []string
	err := s.UpdatePins(func(m map[string]Pin) error {
		for _, p := range paths {
			abs, err := filepath.Abs(p)
			if err != nil {
				return fmt.Errorf("unpin %s: %w", p, err)
			}
			if r, err := filepath.EvalSymlinks(abs); err == nil {
				abs = r
			}
			if _, ok := m[abs]; ok {
				delete(m, abs)
				removed = append(removed, abs)
			}
		}
		return nil
	})
	return removed, err
}
