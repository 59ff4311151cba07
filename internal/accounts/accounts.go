// Package accounts reads the machine's account databases (/etc/passwd,
// /etc/group): whose homes exist, who is in a group. It is the one reader
// of them; the recorder asks it which homes to guard, the session store
// which users share a group.
package accounts

import (
	"bufio"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Passwd and Group are the files read.
const (
	Passwd = "/etc/passwd"
	Group  = "/etc/group"
)

// ColonFile reads a colon-separated file such as /etc/group: one slice of
// fields per line, blank lines and # comments skipped.
func ColonFile(file string) ([][]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out, sc.Err()
}

// Homes lists /root, every directory in /home (accounts a directory
// service holds are not in /etc/passwd) and the home directories of the
// accounts in passwd (normally Passwd) that exist as directories now,
// each once. A home that is a system directory ("/", /bin, /usr/…, /proc, …;
// daemons' accounts have them) is left out: it is nobody's private files,
// and reading it as "~" would make system files credentials.
func Homes(passwd string) []string {
	out := []string{"/root"}
	if m, err := filepath.Glob("/home/*"); err == nil {
		for _, h := range m {
			if fi, err := os.Stat(h); err == nil && fi.IsDir() {
				out = append(out, h)
			}
		}
	}
	fields, err := ColonFile(passwd)
	if err != nil {
		return out
	}
	for _, f := range fields {
		if len(f) < 7 {
			continue
		}
		h := filepath.Clean(f[5])
		if !filepath.IsAbs(h) || systemDir(h) || slices.Contains(out, h) {
			continue
		}
		if fi, err := os.Stat(h); err == nil && fi.IsDir() {
			out = append(out, h)
		}
	}
	return out
}

// systemDir reports whether d is a directory of the system rather than
// anyone's home: the root, the program and library trees, the kernel's
// file systems, and /tmp and /var/tmp (a daemon's home there is scratch).
func systemDir(d string) bool {
	switch d {
	case "/", "/lib32", "/lib64", "/libx32", "/run", "/tmp", "/var", "/var/tmp", "/var/run", "/nonexistent":
		return true
	}
	// these and everything under them
	for _, top := range []string{"/usr", "/proc", "/sys", "/dev", "/etc", "/boot", "/bin", "/sbin", "/lib"} {
		if d == top || strings.HasPrefix(d, top+"/") {
			return true
		}
	}
	return false
}

// InvokingUser names the person behind this process: the user sudo was
// run by when we are root and SUDO_UID is set, else the current user.
// Lookups that fail degrade to what the environment says rather than
// erroring, since callers only use the answer for ownership and display.
func InvokingUser() (name string, uid, gid int, home string) {
	if os.Geteuid() == 0 {
		if u, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil && u >= 0 {
			uid = u
			gid = uid
			if g, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil && g >= 0 {
				gid = g
			}
			name = os.Getenv("SUDO_USER")
			if pw, err := user.LookupId(strconv.Itoa(uid)); err == nil {
				home = pw.HomeDir
				if name == "" {
					name = pw.Username
				}
			} else if name != "" {
				if pw, err := user.Lookup(name); err == nil {
					home = pw.HomeDir
				}
			}
			return name, uid, gid, home
		}
	}
	uid, gid = os.Getuid(), os.Getgid()
	if u, err := user.Current(); err == nil {
		name, home = u.Username, u.HomeDir
	} else {
		name = os.Getenv("USER")
	}
	if h := os.Getenv("HOME"); h != "" {
		// $HOME wins over the passwd entry for an ordinary user, as it
		// does for every other XDG-style tool.
		home = h
	}
	return name, uid, gid, home
}

// InHome reads a path written from a home: "~" is home and "~/x" is x in
// home. ok is false for a path not written that way, which is returned as
// it is, and for "~" forms when home is "". It is the one expansion of
// "~" of the policy's patterns, the agent profiles' locations, watch's
// stores and the paths commands name.
func InHome(p, home string) (path string, ok bool) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, false
	}
	if home == "" {
		return "", false
	}
	return filepath.Join(home, p[1:]), true
}
