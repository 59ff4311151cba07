package stores

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/accounts"
)

// defaultSudoStore is where sessions recorded under sudo live, one
// root-owned directory per invoking user: users/<uid>/sessions.
const defaultSudoStore = "/var/lib/polygraph"

// sudoStore is the root of the sudo store: $POLYGRAPH_SUDO_STORE (for
// tests and packagers; sudo's env_reset keeps a user from setting it),
// else /var/lib/polygraph.
func sudoStore() string {
	if d := os.Getenv("POLYGRAPH_SUDO_STORE"); d != "" {
		return d
	}
	return defaultSudoStore
}

// sudoSessionsDir is the directory of uid's sessions in the sudo store.
func sudoSessionsDir(uid int) string {
	return filepath.Join(sudoStore(), "users", strconv.Itoa(uid), "sessions")
}

// defaultHome is the home Home returns without $POLYGRAPH_HOME, "" when
// $POLYGRAPH_HOME is set or the invoking user has no home.
func defaultHome() string {
	if os.Getenv("POLYGRAPH_HOME") != "" {
		return ""
	}
	_, _, _, home := accounts.InvokingUser()
	if home == "" {
		return ""
	}
	dir, err := filepath.Abs(filepath.Join(home, ".local", "share", "polygraph"))
	if err != nil {
		return ""
	}
	return dir
}

// isDefault says whether home is the invoking user's default home, the
// only one the sudo store stands in for: $POLYGRAPH_HOME or any other
// directory a caller names keeps its sessions in home/sessions.
func isDefault(home string) bool {
	d := defaultHome()
	if d == "" {
		return false
	}
	abs, err := filepath.Abs(home)
	return err == nil && abs == d
}

// Dirs returns the directories the sessions of home are read from: for
// the default home, the invoking user's directory in the sudo store
// (where `sudo polygraph run` records) and home/sessions; for any other
// home, home/sessions alone.
func Dirs(home string) []string {
	var out []string
	for _, d := range StoreDirs(home) {
		out = append(out, d.Path)
	}
	return out
}

// StoreDir is one directory sessions are read from.
type StoreDir struct {
	Path string
	Sudo bool // the invoking user's directory in the sudo store
}

// StoreDirs is Dirs, with the sudo store marked.
func StoreDirs(home string) []StoreDir {
	var dirs []StoreDir
	if isDefault(home) {
		if _, uid, _, _ := accounts.InvokingUser(); uid != 0 {
			dirs = append(dirs, StoreDir{sudoSessionsDir(uid), true})
		}
	}
	return append(dirs, StoreDir{Path: SessionsDir(home)})
}

// ProtectedDir says whether dir, in the sudo store, is as CreateDir left
// it: root's, and writable by no one else, from the store's root down. A
// session in it was written by root and by nothing the user ran; a store
// someone else can write is read like any other directory.
func ProtectedDir(dir string) bool {
	root := filepath.Clean(sudoStore())
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Lstat(d)
		if err != nil || !st.IsDir() || st.Mode().Perm()&0o022 != 0 {
			return false
		}
		if uid, _, ok := OwnerAndChange(st); !ok || uid != 0 {
			return false
		}
		if d == root || d == filepath.Dir(d) {
			return d == root
		}
	}
}

// Guard is how a session recorded as root on behalf of an unprivileged
// user is protected from that user (and so from anything the traced tree
// leaves behind): every file and directory belongs to root, and the user
// is given read access only, through a group only they are in or, without
// one, a POSIX ACL entry. The user cannot write the file, and cannot
// delete or replace it, since the directory is not theirs either.
type Guard struct {
	uid int // the user given read access
	gid int // a group whose only member is that user; -1: use an ACL
}

// CreateDir returns the directory Create writes home's sessions to and
// the Guard their files get (nil: the invoking user owns them, as before).
// Under sudo, recording into the default home, the directory is the
// user's in the sudo store, root-owned, created and secured here.
func CreateDir(home string) (string, *Guard, error) {
	uid, gid, ok := SudoOwner()
	if !ok || !isDefault(home) {
		dir := SessionsDir(home)
		return dir, nil, MkdirOwned(dir, 0o700)
	}
	g, err := sudoUserDir(uid, gid)
	if err != nil {
		return "", nil, err
	}
	d := sudoSessionsDir(uid)
	if err := os.Mkdir(d, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, err
	}
	if err := g.Apply(d, true); err != nil {
		return "", nil, err
	}
	return d, g, nil
}

// sudoUserDir makes the sudo store's root, users/ and uid's directory in
// it, root's, and returns the Guard that gives uid read access.
func sudoUserDir(uid, gid int) (*Guard, error) {
	g := &Guard{uid: uid, gid: -1}
	if privateGroup(uid, gid) {
		g.gid = gid
	}
	root := sudoStore()
	if err := os.MkdirAll(filepath.Join(root, "users"), 0o755); err != nil {
		return nil, err
	}
	// users/ is searchable, not listable: who records is nobody's business.
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{root, 0o755}, {filepath.Join(root, "users"), 0o711}} {
		if err := rootDir(d.path, d.mode); err != nil {
			return nil, err
		}
	}
	userDir := filepath.Dir(sudoSessionsDir(uid))
	if err := os.Mkdir(userDir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if err := g.Apply(userDir, true); err != nil {
		return nil, err
	}
	return g, nil
}

// ProtectedUser returns the invoking user when polygraph runs as root on
// their behalf (sudo) and the sudo store stands in for their own stores
// (no $POLYGRAPH_HOME): what that user can write, the traced tree can,
// and a sudo run must not trust it.
func ProtectedUser() (uid int, ok bool) {
	uid, _, ok = SudoOwner()
	return uid, ok && os.Getenv("POLYGRAPH_HOME") == ""
}

// ProtectedPath returns where home keeps the store called name (the
// integrity pins and first-seen hashes, the baselines): under sudo, for
// the default home, the invoking user's directory in the sudo store
// (users/<uid>/name), which only root can write, so that nothing the
// traced tree does (it runs as the user) can change what a sudo run
// trusts; else home/name, as before. protected says which. Like the
// sessions, $POLYGRAPH_HOME keeps its stores in itself.
func ProtectedPath(home, name string) (dir string, protected bool) {
	uid, _, ok := SudoOwner()
	if !ok || !isDefault(home) {
		return filepath.Join(home, name), false
	}
	return filepath.Join(filepath.Dir(sudoSessionsDir(uid)), name), true
}

// MkdirProtected creates dir, a protected path ProtectedPath returned,
// root's and 0700, with the sudo store's directories above it as Create
// makes them. What is in it is root's alone: the user reads it with sudo.
func MkdirProtected(dir string) error {
	uid, gid, ok := SudoOwner()
	if !ok {
		return errors.New("a protected store is made only as root on behalf of a user")
	}
	if _, err := sudoUserDir(uid, gid); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return rootDir(dir, 0o700)
}

// rootDir makes the existing directory path root's with mode: a directory
// someone else owns or can write could have its contents swapped.
func rootDir(path string, mode fs.FileMode) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	if err := os.Lchown(path, 0, 0); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// apply gives path to root with read access (and search, for a directory)
// for g's user only. A missing file is not an error: SQLite removes its
// -wal and -shm files at will. When neither a private group nor an ACL is
// available the file is left readable by everyone, with a warning: the
// user must be able to read their session, and it still cannot be
// written by them.
func (g *Guard) Apply(path string, dir bool) error {
	mode, open := fs.FileMode(0o640), fs.FileMode(0o644)
	if dir {
		mode, open = 0o750, 0o755
	}
	gid := g.gid
	if gid < 0 {
		gid = 0
	}
	if err := os.Lchown(path, 0, gid); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("chown %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if g.gid >= 0 {
		return nil
	}
	if err := grantACL(path, g.uid, dir); err != nil {
		slog.Warn("session: cannot give the invoking user read access with an ACL; the session is readable by every user (but writable only by root)",
			"path", path, "uid", g.uid, "error", err)
		if err := os.Chmod(path, open); err != nil {
			return fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	return nil
}

// privateGroup says whether gid is a group whose only member is uid: no
// other user has it as primary group or is listed in it (the per-user
// private groups of most distributions).
func privateGroup(uid, gid int) bool {
	if gid <= 0 {
		return false
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return false
	}
	members, found := groupMembers(accounts.Group, gid)
	if !found {
		return false
	}
	for _, m := range members {
		if m != u.Username {
			return false
		}
	}
	others, err := primaryUsers(accounts.Passwd, gid)
	if err != nil {
		return false
	}
	for _, o := range others {
		if o != uid {
			return false
		}
	}
	return true
}

// groupMembers returns the listed members of gid in an /etc/group file.
func groupMembers(file string, gid int) (members []string, found bool) {
	fields, err := accounts.ColonFile(file)
	if err != nil {
		return nil, false
	}
	for _, f := range fields {
		if len(f) >= 4 && f[2] == strconv.Itoa(gid) {
			found = true
			for _, m := range strings.Split(f[3], ",") {
				if m != "" {
					members = append(members, m)
				}
			}
		}
	}
	return members, found
}

// primaryUsers returns the uids whose primary group is gid in an
// /etc/passwd file.
func primaryUsers(file string, gid int) ([]int, error) {
	fields, err := accounts.ColonFile(file)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range fields {
		if len(f) >= 4 && f[3] == strconv.Itoa(gid) {
			if u, err := strconv.Atoi(f[2]); err == nil {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// own gives a file Create made its owner: the Guard's root-and-reader
// ownership, or without a Guard the invoking user under sudo.
func (g *Guard) Own(path string) error {
	if g == nil {
		return ChownToInvoker(path)
	}
	return g.Apply(path, false)
}

// SessionsDir is where a home keeps its session files (but for the sudo
// store's).
func SessionsDir(home string) string { return filepath.Join(home, "sessions") }
