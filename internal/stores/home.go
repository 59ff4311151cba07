// Package stores says where polygraph keeps what it writes and who owns
// it: its home, each home's sessions directory, the root-owned sudo store
// (sessions, pins and baselines a sudo run trusts, which the traced tree,
// running as the user, cannot write) and the access the invoking user is
// given to them. It knows files and owners, not their contents: the session
// store (SQLite), the integrity store and the baselines build on it, and
// the packages that judge a session link none of the storage engines.
package stores

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/polygraph/polygraph/internal/accounts"
)

// Home returns polygraph's home: $POLYGRAPH_HOME, else the invoking
// user's ~/.local/share/polygraph. Under sudo that is SUDO_USER's home,
// not root's, so pins and baselines are the user's. Sessions live in
// home/sessions, except those recorded under sudo into this default home:
// those go to the root-owned sudo store (see Dirs and Create), which
// readers of the default home search too. The directory is created if
// absent, owned by the invoking user.
func Home() (string, error) {
	dir := os.Getenv("POLYGRAPH_HOME")
	if dir == "" {
		_, _, _, home := accounts.InvokingUser()
		if home == "" {
			return "", errors.New("cannot find the invoking user's home directory; set POLYGRAPH_HOME")
		}
		dir = filepath.Join(home, ".local", "share", "polygraph")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("polygraph home: %w", err)
	}
	if err := MkdirOwned(dir, 0o700); err != nil {
		return "", fmt.Errorf("polygraph home: %w", err)
	}
	return dir, nil
}

// SudoOwner returns the uid and gid files we create should be handed to:
// the invoking user when we run as root on their behalf. ok is false when
// no chown is needed.
func SudoOwner() (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	_, uid, gid, _ = accounts.InvokingUser()
	return uid, gid, uid != 0
}

// ChownToInvoker gives path to the invoking user under sudo. A missing
// file is not an error: SQLite removes its -wal and -shm files at will.
func ChownToInvoker(path string) error {
	uid, gid, ok := SudoOwner()
	if !ok {
		return nil
	}
	if err := os.Lchown(path, uid, gid); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// MkdirOwned creates dir and any missing parents, the parents 0755 and dir
// itself with perm, and chowns every directory it created (and only those)
// to the invoking user.
func MkdirOwned(dir string, perm fs.FileMode) error {
	var missing []string
	for d := dir; ; {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := fs.FileMode(0o755)
		if i == 0 {
			p = perm
		}
		if err := os.Mkdir(missing[i], p); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := ChownToInvoker(missing[i]); err != nil {
			return err
		}
	}
	return nil
}
