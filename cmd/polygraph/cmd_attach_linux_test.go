package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestAttachInterruptReports: Ctrl-C ends an attach, and the report of
// what was recorded still follows: the interrupt that stopped the
// recording must not cancel the analysis too.
func TestAttachInterruptReports(t *testing.T) {
	testenv.RequireRoot(t)
	tree := exec.Command("sleep", "30")
	if err := tree.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Process.Kill(); tree.Wait() })

	cmd := polygraphCmd(t, t.TempDir(), "attach", "--pid", strconv.Itoa(tree.Process.Pid), "--transcript", "none")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var stderr bytes.Buffer
	started := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			// The ready line: the tree is tracked from here on.
			if strings.HasPrefix(sc.Text(), "polygraph: attached to pid "+strconv.Itoa(tree.Process.Pid)+" (sleep) and 0 processes below it") {
				started <- true
			}
		}
		started <- false
	}()
	select {
	case ok := <-started:
		if !ok {
			<-done
			t.Fatalf("attach ended before recording:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("attach did not start recording within 30s")
	}
	if !strings.HasPrefix(stderr.String(), "polygraph: loading the sensor to attach to pid ") {
		t.Errorf("attach did not say it was loading first:\n%s", stderr.String())
	}
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-done
	code := exitCodeOf(t, cmd.Wait())
	if code != exitInterrupt {
		t.Errorf("exit = %d, want %d", code, exitInterrupt)
	}
	for _, want := range []string{"polygraph: session ", "\nFINDINGS (", "\nCLAIMS (0)\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no report after the interrupt: stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
