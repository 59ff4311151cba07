//go:build linux

package redteam

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// mode is one of the four ways a technique runs under polygraph.
type mode struct{ user, isolate bool }

var modes = []mode{{false, false}, {false, true}, {true, false}, {true, true}}

func (m mode) String() string {
	s := "root"
	if m.user {
		s = "user"
	}
	if m.isolate {
		s += "+isolate"
	}
	return s
}

// run is one execution of one technique: bare (the technique's own check
// that it works) or under `polygraph run`, in a fresh HOME and workspace
// with secrets carrying a canary of its own.
type run struct {
	t      *testing.T
	w      *world
	tech   *technique
	mode   mode
	traced bool
	id     string // r001…: names the run in canaries, sockets, DNS names
	canary string

	dir        string   // the run's own directory (the user's, in user mode): sockets, FIFOs, logs
	home, work string   // HOME and the workspace (the tree's cwd)
	acct       *account // nil: root
	uid, gid   int

	vars    map[string]string // shell variables the script starts with
	secrets map[string]*secret
	helpers map[string]*helper
	acts    []string // paths whose change or open is the technique's act (trigger files, sysctls)
	cleanup []func()

	out      []byte        // what the script (or polygraph) printed
	exitErr  error         // how it exited
	took     time.Duration // how long the script (or polygraph) ran
	pghome   string        // traced: the POLYGRAPH_HOME the session is in
	pgreport []byte        // traced: polygraph's report (stderr)
}

// secret is a planted credential: its path and identity, the names the
// technique reaches it by, and the words a finding naming it would use.
type secret struct {
	path     string
	dev, ino uint64
	aliases  []string
}

// helper is a process outside the traced tree, started before polygraph.
type helper struct {
	name  string
	pid   int
	paths []string // the socket or FIFOs the tree reaches it through
}

var runN atomic.Int64

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRun prepares a run's directories: root runs get a fresh HOME and
// workspace under the matrix's directory; user runs get the account's
// home, emptied, with the workspace in it.
func newRun(t *testing.T, w *world, tc *technique, m mode, traced bool, acct *account) *run {
	n := runN.Add(1)
	r := &run{t: t, w: w, tech: tc, mode: m, traced: traced, id: fmt.Sprintf("r%03d", n),
		vars: map[string]string{}, secrets: map[string]*secret{}, helpers: map[string]*helper{}}
	r.canary = "RTC" + r.id + "x" + randHex(5)
	r.dir = filepath.Join(w.dir, r.id)
	must(t, os.MkdirAll(r.dir, 0o755))
	if m.user {
		r.acct, r.uid, r.gid, r.home = acct, acct.uid, acct.gid, acct.home
		emptyDir(t, r.home)
		must(t, os.Chown(r.dir, r.uid, r.gid))
	} else {
		r.home = filepath.Join(r.dir, "home")
		must(t, os.MkdirAll(r.home, 0o700))
	}
	r.work = filepath.Join(r.home, "work")
	if !m.user {
		r.work = filepath.Join(r.dir, "work")
	}
	r.mkdir(r.work)
	return r
}

// emptyDir removes what dir holds, keeping dir.
func emptyDir(t *testing.T, dir string) {
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
}

// close stops the run's helpers and undoes what its setup did, last first.
func (r *run) close() {
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
	if !r.w.keep {
		os.RemoveAll(r.dir)
		if r.pghome != "" {
			os.RemoveAll(r.pghome)
		}
	}
}

// abs resolves a path of the technique: ~/x is in HOME, ./x in the
// workspace, /x as it is.
func (r *run) abs(p string) string {
	switch {
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(r.home, p[2:])
	case strings.HasPrefix(p, "./"):
		return filepath.Join(r.work, p[2:])
	}
	return p
}

// mkdir makes a directory (and its parents under HOME) owned by the
// run's user.
func (r *run) mkdir(dir string) {
	var made []string
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		made = append(made, d)
	}
	must(r.t, os.MkdirAll(dir, 0o755))
	for _, d := range made {
		must(r.t, os.Chown(d, r.uid, r.gid))
	}
}

// file writes a file owned by the run's user; perm 0 is 0644.
func (r *run) file(p, content string, perm os.FileMode) string {
	p = r.abs(p)
	if perm == 0 {
		perm = 0o644
	}
	r.mkdir(filepath.Dir(p))
	must(r.t, os.WriteFile(p, []byte(content), perm))
	must(r.t, os.Chmod(p, perm))
	must(r.t, os.Chown(p, r.uid, r.gid))
	return p
}

// plant writes a secret (mode 0600) under name, its content with %s for
// the canary, and keeps its identity; aliases are the other names the
// technique reaches it by.
func (r *run) plant(name, p, content string, aliases ...string) *secret {
	path := r.file(p, strings.ReplaceAll(content, "%s", r.canary), 0o600)
	var st syscall.Stat_t
	must(r.t, syscall.Stat(path, &st))
	s := &secret{path: path, dev: st.Dev, ino: st.Ino}
	for _, a := range aliases {
		s.aliases = append(s.aliases, r.abs(a))
	}
	r.secrets[name] = s
	return s
}

// set gives the script a variable.
func (r *run) set(name, value string) { r.vars[name] = value }

// act names a path whose open, change or connect is the technique's act.
func (r *run) act(p ...string) {
	for _, x := range p {
		r.acts = append(r.acts, r.abs(x))
	}
}

// cmd returns a command running as the run's user (root: as root), with
// a plain environment whose HOME is the run's.
func (r *run) cmd(ctx context.Context, asRoot bool, argv ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = r.work
	name := "root"
	home := r.home
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.acct != nil && !asRoot {
		name = r.acct.name
		c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: []uint32{uint32(r.gid)}}
	} else if r.acct != nil {
		home = "/root"
	}
	c.Env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "SHELL=/bin/bash", "LANG=C.UTF-8", "TERM=xterm",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	return c
}

// start starts a helper outside the tree (as the run's user, or root)
// and waits until it says it is ready (rt.py writes its pid to the file
// named by its last argument, which start appends); it is killed, with
// its process group, when the run closes.
func (r *run) start(name string, asRoot bool, env []string, argv ...string) *helper {
	ready := filepath.Join(r.dir, name+".ready")
	c := r.cmd(context.Background(), asRoot, append(argv, ready)...)
	c.Env = append(c.Env, env...)
	logf, err := os.Create(filepath.Join(r.dir, name+".log"))
	must(r.t, err)
	c.Stdout, c.Stderr = logf, logf
	must(r.t, c.Start())
	r.cleanup = append(r.cleanup, func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_ = c.Wait()
		logf.Close()
	})
	h := &helper{name: name, pid: c.Process.Pid}
	end := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(end) {
			log, _ := os.ReadFile(filepath.Join(r.dir, name+".log"))
			r.t.Fatalf("helper %s did not start: %s", name, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.helpers[name] = h
	return h
}

// rt is the path of the helper program.
func (r *run) rt() string { return filepath.Join(r.w.bin, "rt.py") }

// script is the file the tree runs: the prelude (PATH, HOME, the
// variables) and the technique's body.
func (r *run) script() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# polygraph red team: %s, %s (%s)\n# %s\nset -u\n", r.tech.name, r.mode, r.id, r.tech.goal)
	b.WriteString("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 GIT_TERMINAL_PROMPT=0\n")
	vars := map[string]string{
		"HOME": r.home, "W": r.work, "RUN": r.id, "BIN": r.w.bin, "RT": r.rt(), "DIR": r.dir,
		"SINK": strconv.Itoa(r.w.sinks.tcpPort), "UDP": strconv.Itoa(r.w.sinks.udpPort), "DNS": r.w.sinks.dnsAddr,
		"HTTPS": r.w.sinks.https,
	}
	for k, v := range r.vars {
		vars[k] = v
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(vars[k]))
	}
	b.WriteString("cd \"$W\"\n")
	b.WriteString(r.tech.script)
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// exec runs the technique's script: bare, or under `polygraph run` (as
// root, or as the account through `sudo polygraph run`).
func (r *run) exec(timeout time.Duration) {
	sh := filepath.Join(r.dir, "technique.sh")
	must(r.t, os.WriteFile(sh, []byte(r.script()), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := []string{"/bin/bash", sh}
	if r.traced {
		r.pghome = filepath.Join(r.w.dir, "sessions", r.id)
		must(r.t, os.MkdirAll(r.pghome, 0o700))
		pg := []string{r.w.pg, "run", "--linger", "2s"}
		if r.mode.isolate {
			pg = append(pg, "--isolate")
		}
		argv = append(append(pg, "--"), argv...)
		if r.mode.user {
			argv = append([]string{"/usr/bin/sudo", "-n", "POLYGRAPH_HOME=" + r.pghome}, argv...)
		}
	}
	c := r.cmd(ctx, false, argv...)
	if r.traced && !r.mode.user {
		c.Env = append(c.Env, "POLYGRAPH_HOME="+r.pghome)
	}
	// Traced, stderr is polygraph's report with the script's own stderr.
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if r.traced {
		c.Stderr = &errb
	}
	start := time.Now()
	r.exitErr = c.Run()
	r.took = time.Since(start)
	r.out = out.Bytes()
	if r.traced {
		r.pgreport = errb.Bytes()
	}
	if ctx.Err() != nil {
		r.exitErr = fmt.Errorf("timed out after %v (%w)", timeout, r.exitErr)
	}
}

// loot is the file read techniques put what they took in.
func (r *run) loot() string { return filepath.Join(r.work, "loot") }

// lootHas checks that the workspace's loot holds the run's canary.
func lootHas(r *run) error {
	b, err := os.ReadFile(r.loot())
	if err != nil {
		return fmt.Errorf("no loot: %v", err)
	}
	if !bytes.Contains(b, []byte(r.canary)) {
		return fmt.Errorf("the loot (%d bytes) does not hold the canary", len(b))
	}
	return nil
}

// sinkHas checks that the run's canary reached a loopback sink.
func sinkHas(r *run) error {
	if !r.w.sinks.has(r.canary, 5*time.Second) {
		return fmt.Errorf("the canary did not reach a sink")
	}
	return nil
}
