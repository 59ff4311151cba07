package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/testenv"
)

// alive reports whether pid is running (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitPids waits for file to hold the pids the traced command wrote.
func waitPids(t *testing.T, file string, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if f := strings.Fields(string(b)); len(f) == n && strings.HasSuffix(string(b), "\n") {
			var pids []int
			for _, s := range f {
				p, _ := strconv.Atoi(s)
				pids = append(pids, p)
			}
			return pids
		}
	}
	t.Fatalf("the traced command never wrote %d pids to %s", n, file)
	return nil
}

// watchdogOf returns the pid of polygraph's watchdog, a child of pid.
func watchdogOf(t *testing.T, pid int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		st := string(b)
		if i := strings.LastIndexByte(st, ')'); i > 0 {
			if f := strings.Fields(st[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				argv, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				if strings.HasPrefix(string(argv), "polygraph-watchdog\x00") {
					n, _ := strconv.Atoi(e.Name())
					return n
				}
			}
		}
	}
	t.Fatalf("polygraph %d has no watchdog", pid)
	return 0
}

// TestRunPolygraphKilled: SIGKILL of polygraph ends the traced command
// and what it daemonised within a second by default; with
// --on-polygraph-exit=leave both keep running. A tree that kills the
// watchdog first loses only the command (the parent-death signal): its
// daemon survives, as README says.
func TestRunPolygraphKilled(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tc := range []struct {
		name, flag   string
		killWatchdog bool
		wantAlive    []bool // the command, its daemon
	}{
		{name: "default kill", wantAlive: []bool{false, false}},
		{name: "leave", flag: "--on-polygraph-exit=leave", wantAlive: []bool{true, true}},
		{name: "watchdog killed first", killWatchdog: true, wantAlive: []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			args := []string{"run", "--transcript", "none"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			// The daemon leaves the command's process group and session.
			script := fmt.Sprintf("setsid sleep 60 & echo $$ $! > %s; sleep 60", pidFile)
			cmd := polygraphCmd(t, t.TempDir(), append(args, "--", "sh", "-c", script)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pids := waitPids(t, pidFile, 2)
			t.Cleanup(func() {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
			})
			if tc.killWatchdog {
				syscall.Kill(watchdogOf(t, cmd.Process.Pid), syscall.SIGKILL)
				time.Sleep(100 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			time.Sleep(time.Second)
			for i, p := range pids {
				if got := alive(p); got != tc.wantAlive[i] {
					t.Errorf("pid %d alive = %v a second after polygraph's SIGKILL, want %v", p, got, tc.wantAlive[i])
				}
			}
		})
	}
}

// TestRootTreeKillsPolygraph records what dropping CAP_KILL does not
// achieve: a root command can still SIGKILL polygraph, both being root
// (kill(2) needs no capability within one uid). The recording ends
// there, and by default the tree with it; the session says it was not
// closed cleanly.
func TestRootTreeKillsPolygraph(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	marker := filepath.Join(t.TempDir(), "survived")
	cmd := polygraphCmd(t, home, "run", "--transcript", "none", "--",
		"sh", "-c", fmt.Sprintf("kill -9 $PPID; sleep 1; touch %s", marker))
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("polygraph ended with %v, want killed by the tree's SIGKILL", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command outlived polygraph")
	}
	var errb bytes.Buffer
	ev := polygraphCmd(t, home, "events", "last")
	ev.Stderr = &errb
	ev.Run()
	if !strings.Contains(errb.String(), "not closed cleanly") {
		t.Errorf("events on the cut session does not warn: %q", errb.String())
	}
}
