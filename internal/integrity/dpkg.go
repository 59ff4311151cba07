package integrity

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDpkgDir is where dpkg keeps each package's file list and md5sums.
const DefaultDpkgDir = "/var/lib/dpkg/info"

// dpkgIndex answers "which package owns this path, and what MD5 does it
// list". Building reads every *.list once (the owner of each path, ~40 ms
// on a desktop's 2,000 packages); the *.md5sums of a package are read
// only when one of its files is checked, and kept. It is built on first
// use, or ahead of it by WarmDpkg: a recorder warms it while it loads
// the sensor, before the traced command starts, so the first exec does
// not pay for it inside the command's time. One index per directory is
// shared by every Checker of the process (sharedDpkgIndex): the sessions
// watch records one after another reuse it while dpkg's directory is
// unchanged.
type dpkgIndex struct {
	dir string
	// stamp is the directory's modification time when the index was
	// made: dpkg renames each new or removed package's *.list into or
	// out of it, which changes it.
	stamp time.Time

	once sync.Once
	err  error
	pkgs []string // package stems: "coreutils", "libc6:amd64"
	// owner maps a listed path, by its seeded hash, to its package. A
	// path listed by more than one package (a diversion, a file moved
	// between packages in an upgrade) keeps the others in extra. The
	// paths themselves are not kept: 120,000 strings were ~15 MB of the
	// sensor's memory while it traced. The seed is random per process,
	// so no path can be made to collide with a packaged one; a collision
	// by chance (~1e-10 here) would name a package whose md5sums then
	// has no entry for the path.
	seed  maphash.Seed
	owner map[uint64]int32
	extra map[uint64][]int32
	// aliases are the merged-/usr links (/bin -> /usr/bin): dpkg lists
	// /bin/true while the kernel reports /usr/bin/true.
	aliases [][2]string  // {link, target}
	buildNS atomic.Int64 // how long build took, for the log and the bench

	mu   sync.Mutex
	sums map[int32]map[string]string // package -> path -> md5
}

func newDpkgIndex(dir string) *dpkgIndex {
	return &dpkgIndex{dir: dir, sums: make(map[int32]map[string]string)}
}

var dpkgShared struct {
	mu sync.Mutex
	m  map[string]*dpkgIndex
}

// sharedDpkgIndex is the process's index of dir, made anew when dpkg's
// directory changed since the last one was made (a package installed or
// removed) or cannot be read.
func sharedDpkgIndex(dir string) *dpkgIndex {
	var stamp time.Time
	if st, err := os.Stat(dir); err == nil {
		stamp = st.ModTime()
	}
	dpkgShared.mu.Lock()
	defer dpkgShared.mu.Unlock()
	if x := dpkgShared.m[dir]; x != nil && !stamp.IsZero() && x.stamp.Equal(stamp) {
		return x
	}
	if dpkgShared.m == nil {
		dpkgShared.m = make(map[string]*dpkgIndex)
	}
	x := newDpkgIndex(dir)
	x.stamp = stamp
	dpkgShared.m[dir] = x
	return x
}

// WarmDpkg builds the index of DefaultDpkgDir in the background, so the
// first exec a Checker judges finds it made. It returns at once; a
// lookup meanwhile waits for the build in progress instead of starting
// another.
func WarmDpkg() {
	sharedDpkgIndex(DefaultDpkgDir).warm()
}

func (x *dpkgIndex) warm() {
	go x.once.Do(x.build)
}

// lookup returns the packages owning path and the MD5 each lists for it
// ("" when the package has no md5sums entry, as for conffiles). ok is
// false when dpkg owns no such path or its database cannot be read.
func (x *dpkgIndex) lookup(path string) (pkgs []string, md5s []string, ok bool) {
	x.once.Do(x.build)
	if x.err != nil {
		return nil, nil, false
	}
	for _, p := range x.candidates(path) {
		ids := x.owners(p)
		if len(ids) == 0 {
			continue
		}
		for _, id := range ids {
			pkgs = append(pkgs, x.pkgs[id])
			md5s = append(md5s, x.md5(id, p))
		}
		return pkgs, md5s, true
	}
	return nil, nil, false
}

func (x *dpkgIndex) owners(p string) []int32 {
	h := maphash.String(x.seed, p)
	id, ok := x.owner[h]
	if !ok {
		return nil
	}
	return append([]int32{id}, x.extra[h]...)
}

// candidates are the names dpkg may list path under: itself and, for a
// path under a merged-/usr target, the same file under the old link.
func (x *dpkgIndex) candidates(path string) []string {
	c := []string{path}
	for _, a := range x.aliases {
		if rest, ok := strings.CutPrefix(path, a[1]+"/"); ok {
			c = append(c, a[0]+"/"+rest)
		}
		if rest, ok := strings.CutPrefix(path, a[0]+"/"); ok {
			c = append(c, a[1]+"/"+rest)
		}
	}
	return c
}

// build scans every *.list. Directories are listed too; they cost memory
// but telling them apart would cost a stat per line.
func (x *dpkgIndex) build() {
	start := time.Now()
	defer func() { x.buildNS.Store(int64(time.Since(start))) }()
	lists, err := filepath.Glob(filepath.Join(x.dir, "*.list"))
	if err != nil || len(lists) == 0 {
		x.err = fmt.Errorf("no dpkg file lists in %s", x.dir)
		return
	}
	x.seed = maphash.MakeSeed()
	x.owner = make(map[uint64]int32, 1<<17)
	x.extra = make(map[uint64][]int32)
	for _, l := range lists {
		id := int32(len(x.pkgs))
		x.pkgs = append(x.pkgs, strings.TrimSuffix(filepath.Base(l), ".list"))
		if err := x.readList(l, id); err != nil {
			x.err = err
			return
		}
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/libo32"} {
		if t, err := os.Readlink(d); err == nil {
			x.aliases = append(x.aliases, [2]string{d, resolve("/", t)})
		}
	}
}

func (x *dpkgIndex) readList(path string, id int32) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("dpkg list: %w", err)
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if len(line) < 2 || line[0] != '/' || unexecuted(line) {
			continue // "/." and blanks
		}
		h := maphash.Bytes(x.seed, line)
		if prev, ok := x.owner[h]; ok {
			if prev != id {
				x.extra[h] = append(x.extra[h], id)
			}
			continue
		}
		x.owner[h] = id
	}
	return nil
}

// unexecutedDirs hold what no exec runs: documentation, translations,
// headers. They are 45% of a desktop's dpkg paths; leaving them out of
// the index halves its memory. A script run from one of them falls
// through to first-seen.
var unexecutedDirs = [][]byte{
	[]byte("/usr/share/doc/"), []byte("/usr/share/man/"), []byte("/usr/share/locale/"),
	[]byte("/usr/share/info/"), []byte("/usr/share/help/"), []byte("/usr/share/icons/"),
	[]byte("/usr/share/zoneinfo/"), []byte("/usr/share/i18n/"), []byte("/usr/share/lintian/"),
	[]byte("/usr/share/bash-completion/"), []byte("/usr/share/gtk-doc/"), []byte("/usr/share/fonts/"),
	[]byte("/usr/share/terminfo/"), []byte("/usr/include/"),
}

func unexecuted(p []byte) bool {
	for _, d := range unexecutedDirs {
		if bytes.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// md5 returns the MD5 package id lists for path, reading its md5sums the
// first time the package is asked about.
func (x *dpkgIndex) md5(id int32, path string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	m, ok := x.sums[id]
	if !ok {
		m = readMD5Sums(filepath.Join(x.dir, x.pkgs[id]+".md5sums"))
		x.sums[id] = m
	}
	return m[strings.TrimPrefix(path, "/")]
}

// readMD5Sums parses "md5  relative/path" lines; a package without the
// file yields an empty map.
func readMD5Sums(path string) map[string]string {
	m := make(map[string]string)
	f, err := os.Open(path)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		sum, p, ok := strings.Cut(sc.Text(), "  ")
		if ok && len(sum) == 32 {
			m[p] = sum
		}
	}
	return m
}
