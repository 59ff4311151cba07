package guard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// v1Controllers are the controllers a hybrid machine may keep in cgroup
// v1 that guard accounts and limits with, by their v1 names; the value
// is a file the v2 session cgroup has when v2 provides the controller.
var v1Controllers = map[string]string{"memory": "memory.current", "pids": "pids.current", "blkio": "io.stat"}

// v1Parents returns, for each controller in v1Controllers mounted as
// cgroup v1, the polygraph parent for session cgroups: under this
// process's own cgroup in that hierarchy, so the session stays inside
// whatever limits polygraph itself runs under.
func v1Parents() map[string]string {
	mi, err1 := os.ReadFile("/proc/self/mountinfo")
	pc, err2 := os.ReadFile("/proc/self/cgroup")
	if err1 != nil || err2 != nil {
		return nil
	}
	mounts, own := parseV1Mounts(mi), parseOwnV1(pc)
	out := map[string]string{}
	for c := range v1Controllers {
		if m, ok := mounts[c]; ok {
			out[c] = filepath.Join(m, own[c], parentName)
		}
	}
	return out
}

// parseV1Mounts maps each v1 controller to its mount point, from the
// super options of the "cgroup" mounts in mountinfo.
func parseV1Mounts(mountinfo []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, pf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(pf) < 3 || pf[0] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(pf[2], ",") {
			if _, want := v1Controllers[opt]; want {
				out[opt] = unescapeMount(f[4])
			}
		}
	}
	return out
}

// parseOwnV1 maps each v1 controller to this process's cgroup path in
// it, from /proc/self/cgroup ("4:memory:/a/b", "2:cpu,cpuacct:/").
func parseOwnV1(procCgroup []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(procCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// makeV1 creates session id's v1 cgroups for the controllers the v2
// session cgroup at v2dir lacks.
func makeV1(v2dir, id string) (map[string]string, error) {
	out := map[string]string{}
	for c, parent := range v1Parents() {
		if exists(filepath.Join(v2dir, v1Controllers[c])) {
			continue
		}
		dir := filepath.Join(parent, sessionPrefix+id)
		if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return out, fmt.Errorf("create v1 %s cgroup: %w", c, err)
		}
		out[c] = dir
	}
	return out, nil
}

// v1Leftovers lists the session IDs that have v1 cgroups.
func v1Leftovers() []string {
	var ids []string
	for _, parent := range v1Parents() {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), sessionPrefix) {
				ids = append(ids, strings.TrimPrefix(e.Name(), sessionPrefix))
			}
		}
	}
	return ids
}

// removeV1 removes session id's v1 cgroups, killing what runs in them.
func removeV1(id string) ([]Leftover, error) {
	var out []Leftover
	var errs []error
	for _, parent := range v1Parents() {
		dir := filepath.Join(parent, sessionPrefix+id)
		if !exists(dir) {
			continue
		}
		n, err := removeCgroup(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Leftover{Path: dir, Killed: n})
	}
	return out, errors.Join(errs...)
}
