package record

// The kernel-tier tests of the opened file's object: real programs under
// the sensor (recordScript, find and the helper modes of TestMain).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// planted is a credentials file under a temporary HOME, and its identity.
type planted struct {
	jail, home, path string // path is real: no symlink on the way
	dev, ino         uint64
}

func plantCredentials(t *testing.T) planted {
	t.Helper()
	jail, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(jail, "home", "u")
	p := filepath.Join(home, ".aws", "credentials")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("[default]\naws_secret_access_key = planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return planted{jail: jail, home: home, path: p, dev: statID(t, p).dev, ino: statID(t, p).ino}
}

func findLast(evs []*event.Event, pred func(*event.Event) bool) *event.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if pred(evs[i]) {
			return evs[i]
		}
	}
	return nil
}

type fileID struct{ dev, ino uint64 }

func statID(t *testing.T, p string) fileID {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return fileID{uint64(st.Dev), st.Ino}
}

// TestOpenRecordsTheObject reads a planted secret every indirect way the
// issue lists and checks that each open names the file the kernel opened
// (path and identity), with what the process asked for beside it. The
// table of cases is most of its length.
// One function over 80 lines: a table of tricks recorded in one run.
func TestOpenRecordsTheObject(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pl := plantCredentials(t)
	work := filepath.Join(pl.jail, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	aws, awz := filepath.Join(pl.home, ".aws"), filepath.Join(pl.home, ".awz")

	cases := []struct {
		name   string
		script string // one line, run in a subshell
		// reader is the end of the last argument of the process that
		// reads the secret; requested is the path it names (empty: that
		// whole argument).
		reader, requested string
		path              string // the path the event must carry
		differs           string
		nlink             uint32
	}{
		{name: "symlink", script: fmt.Sprintf("ln -s %s %s/notes.txt && cat %[2]s/notes.txt", pl.path, work),
			reader: work + "/notes.txt", path: pl.path, differs: "symlink", nlink: 1},
		{name: "renamed parent", script: fmt.Sprintf("mv %s %s && cat %[2]s/credentials; mv %[2]s %[1]s", aws, awz),
			reader: awz + "/credentials", path: awz + "/credentials", nlink: 1},
		{name: "proc self root", script: "cat /proc/self/root" + pl.path,
			reader: "/proc/self/root" + pl.path, path: pl.path, differs: "proc", nlink: 1},
		{name: "proc self cwd", script: fmt.Sprintf("cd %s && cat /proc/self/cwd/credentials", aws),
			reader: "/proc/self/cwd/credentials", path: pl.path, differs: "proc", nlink: 1},
		{name: "inherited dirfd", script: fmt.Sprintf("exec 3<%s; cat /proc/self/fd/3/credentials; true", aws),
			reader: "/proc/self/fd/3/credentials", path: pl.path, differs: "proc", nlink: 1},
		// "; true" keeps the shell from exec'ing the reader in its own
		// process, where the decoder knows fd 3 from the shell's open:
		// the reader is a child that inherited it, as an agent's tool is.
		// Below, the subshell holds fd 4 and its grandchild reads
		// through the subshell's fd table.
		{name: "parent's fd", script: fmt.Sprintf(`exec 4<%s; sh -c 'cat /proc/$PPID/fd/4/credentials 4<&-'; true`, aws),
			reader: "/fd/4/credentials", path: pl.path, differs: "proc", nlink: 1},
		{name: "dup'd dirfd", script: fmt.Sprintf("exec 6<%s; exec 7<&6 6<&-; cat /proc/self/fd/7/credentials; true", aws),
			reader: "/proc/self/fd/7/credentials", path: pl.path, differs: "proc", nlink: 1},
		{name: "openat2 through a symlinked directory", script: fmt.Sprintf("ln -s %s %s/cfg && %s __openat2 %[2]s/cfg/credentials", aws, work, self),
			reader: work + "/cfg/credentials", path: pl.path, differs: "differs", nlink: 1},
		{name: "openat on an inherited dirfd", script: fmt.Sprintf("exec 5<%s; %s __openat 5 credentials", aws, self),
			reader: " credentials", requested: pl.path, path: pl.path, nlink: 1},
		{name: "chroot", script: fmt.Sprintf("%s __chroot %s /home/u/.aws/credentials", self, pl.jail),
			reader: " /home/u/.aws/credentials", path: pl.path, differs: "chroot", nlink: 1},
		// last: the second name stays until the end
		{name: "hard link", script: fmt.Sprintf("ln %s %s/hard.txt && cat %[2]s/hard.txt", pl.path, work),
			reader: work + "/hard.txt", path: work + "/hard.txt", nlink: 2},
	}
	// One recording for all: each case runs in its own subshell, and its
	// reading process is told apart by its exec's argv.
	var sb strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&sb, "(%s) >/dev/null || echo %q failed >&2\n", c.script, c.name)
	}
	_, evs := recordScript(t, work, sb.String(), 0)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reader := findLast(evs, func(e *event.Event) bool { // the last: after ln, which names it too
				return e.Kind == event.KindExec && len(e.Argv()) > 1 && strings.HasSuffix(" "+e.Argv()[len(e.Argv())-1], c.reader) &&
					!strings.HasPrefix(e.Argv()[len(e.Argv())-1], "-") // not the sh -c of "parent's fd"
			})
			if reader == nil {
				t.Fatalf("no exec whose last argument ends in %q", c.reader)
			}
			requested := c.requested
			if requested == "" {
				requested = reader.Argv()[len(reader.Argv())-1]
			}
			open := find(evs, func(e *event.Event) bool {
				if e.Kind != event.KindOpen || e.ExecID != reader.ExecID || e.Failed() || e.Object == nil {
					return false
				}
				return e.PathRequested() == requested || e.PathRequested() == "" && e.Path == requested
			})
			if open == nil {
				t.Fatalf("no open of %q by %v", requested, reader.Argv())
			}
			if open.Path != c.path {
				t.Errorf("path = %q, want %q", open.Path, c.path)
			}
			if open.Dev() != pl.dev || open.Ino() != pl.ino {
				t.Errorf("identity = %d:%d, want %d:%d (stat of the planted file)", open.Dev(), open.Ino(), pl.dev, pl.ino)
			}
			if open.FileType() != "file" || open.Nlink() != c.nlink {
				t.Errorf("file type %q nlink %d, want file, %d", open.FileType(), open.Nlink(), c.nlink)
			}
			wantReq := requested
			if requested == c.path {
				wantReq = ""
			}
			if open.PathRequested() != wantReq || open.PathDiffers() != c.differs {
				t.Errorf("path_requested %q path_differs %q, want %q %q", open.PathRequested(), open.PathDiffers(), wantReq, c.differs)
			}
		})
	}
}

// TestCreatThroughSymlink: creat(2) through a dangling symlink makes the
// file the link points to, and the record names that file.
func TestCreatThroughSymlink(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("creat(2) is x86-64's only")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target, link := filepath.Join(dir, "hidden", "loot"), filepath.Join(dir, "out.log")
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, evs := recordScript(t, dir, self+" __creat "+link, 0)
	id := statID(t, target)
	e := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindOpen && e.Object != nil && e.PathRequested() == link
	})
	if e == nil {
		t.Fatalf("no open with path_requested %s", link)
	}
	if e.Path != target || e.Dev() != id.dev || e.Ino() != id.ino || e.PathDiffers() != "symlink" || !strings.Contains(e.Access, "create") {
		t.Errorf("creat through a symlink: %+v %+v, want path %s identity %d:%d", e, e.Object, target, id.dev, id.ino)
	}
}

// raceC opens one of two files while a second thread flips one byte of
// the path between them, and prints, per open, the inode it got.
const raceC = `#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char buf[4096];
static volatile char *flip;
static volatile int done;

static void *flipper(void *arg) {
	while (!done)
		*flip = *flip == 'a' ? 'b' : 'a';
	return 0;
}

int main(int argc, char **argv) {
	int n = atoi(argv[2]);
	int how = argc > 3 ? O_RDWR : O_RDONLY; /* "rw": opens for writing are never counted (bpf/reopen.h) */
	pthread_t th;
	strcpy(buf, argv[1]);
	flip = strstr(buf, "/a/") + 1;
	pthread_create(&th, 0, flipper, 0);
	for (int i = 0; i < n; i++) {
		int fd = open(buf, how);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			printf("0\n");
			continue;
		}
		printf("%lu\n", (unsigned long)st.st_ino);
		close(fd);
	}
	done = 1;
	pthread_join(th, 0);
	return 0;
}
`

// TestOpenPathRace: a second thread rewrites the path buffer while the
// first opens it, so the string at sys_exit may name the other file
// (forged evidence, when the sensor took the path from there). Every
// recorded open must name the file its fd refers to. Opened for reading
// and writing, every open is recorded; opened for reading, the repeats
// of each file are counted (bpf/reopen.h), and the counts must be the
// program's.
func TestOpenPathRace(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build the racing program")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, bin := filepath.Join(dir, "race.c"), filepath.Join(dir, "race")
	if err := os.WriteFile(src, []byte(raceC), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cc cannot build the racing program: %v\n%s", err, out)
	}
	paths := map[uint64]string{}
	for _, d := range []string{"a", "b"} {
		p := filepath.Join(dir, d, "credentials")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(d), 0o600); err != nil {
			t.Fatal(err)
		}
		paths[statID(t, p).ino] = p
	}
	const tries = 2000
	run := func(how string) (got []uint64, opens []*event.Event) {
		out := filepath.Join(dir, "inodes-"+how+".txt")
		_, evs := recordScript(t, dir, fmt.Sprintf("%s %s %d %s > %s", bin, filepath.Join(dir, "a", "credentials"), tries, how, out), 0)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// the inode of each successful open, as the program saw it
		for _, l := range strings.Fields(string(b)) {
			if ino, _ := strconv.ParseUint(l, 10, 64); ino != 0 {
				got = append(got, ino)
			}
		}
		for _, e := range evs {
			if e.Kind == event.KindOpen && e.Comm == "race" && !e.Failed() && e.Object != nil && paths[e.Ino()] != "" {
				opens = append(opens, e)
			}
		}
		return got, opens
	}

	// read-only: per file, the recorded opens and the counted ones sum to the program's
	got, opens := run("")
	want, have := map[uint64]uint64{}, map[uint64]uint64{}
	for _, ino := range got {
		want[ino]++
	}
	for _, e := range opens {
		n := e.Object.Repeats // a sum of counted repeats
		if n == 0 {
			n = 1 // an open recorded
		}
		have[e.Ino()] += n
		if e.Path != paths[e.Ino()] {
			t.Errorf("read-only: an open recorded as %s names ino %d (%s)", e.Path, e.Ino(), paths[e.Ino()])
		}
	}
	for ino, n := range want {
		if have[ino] != n {
			t.Errorf("read-only: %s opened %d times, the session says %d", paths[ino], n, have[ino])
		}
	}
	if len(opens) > 8 {
		t.Errorf("read-only: %d open events for %d opens of two files: the repeats were not counted", len(opens), len(got))
	}

	got, opens = run("rw")
	if len(opens) != len(got) {
		t.Fatalf("%d opens of the two files recorded, the program made %d", len(opens), len(got))
	}
	forged := 0 // opens where the string at sys_exit named the other file
	for i, e := range opens {
		if e.Ino() != got[i] || e.Path != paths[got[i]] {
			t.Fatalf("open %d: recorded %s (ino %d), the fd is ino %d (%s)", i, e.Path, e.Ino(), got[i], paths[got[i]])
		}
		if e.PathRequested() != "" {
			forged++
		}
	}
	t.Logf("%d tries, %d opened, %d with the buffer rewritten by sys_exit (recorded from the object)", tries, len(got), forged)
}

// TestExecDeleted: an image whose file was unlinked before it ran
// (executed through /proc/self/fd/N), or a memfd's, is flagged deleted; a
// normal one is not.
func TestExecDeleted(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, evs := recordScript(t, t.TempDir(), self+" __fexec; "+self+" __memfd; /bin/true", 0)
	del := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindExec && len(e.Argv()) == 1 && e.Argv()[0] == "deltrue"
	})
	if del == nil {
		t.Fatal("no exec of the deleted copy of /bin/true")
	}
	if !del.Deleted() || !strings.HasSuffix(del.Path, "/deltrue") {
		t.Errorf("exec of the deleted file: deleted %v path %q, want true, .../deltrue", del.Deleted(), del.Path)
	}
	// a memfd has no link from the start
	mem := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindExec && len(e.Argv()) == 1 && e.Argv()[0] == "memtrue"
	})
	if mem == nil || !mem.Deleted() {
		t.Errorf("exec from a memfd = %+v, want deleted", mem)
	}
	normal := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindExec && len(e.Argv()) == 1 && e.Argv()[0] == "/bin/true"
	})
	if normal == nil || normal.Deleted() {
		t.Errorf("exec of /bin/true = %+v, want one not deleted", normal)
	}
}
