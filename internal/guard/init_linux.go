package guard

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exec becomes the command path with args and env, isolated as the
// session that started this process asked (see Session.Apply); when the
// process was not started isolated it is a plain execve. The sensor's
// shim calls it where it would call syscall.Exec. It returns only on
// failure; in a PID namespace it runs the tree's init and exits with the
// command's status instead.
func Exec(path string, args, env []string) error { return ExecPrepared(path, args, env, nil) }

// ExecPrepared is Exec with prepare run once the isolation is entered and
// just before the command starts: on the calling thread before the execve,
// or in a PID namespace in the init before it forks the command. It is
// where a caller gives up what the isolation's own set-up needed (the
// sensor's shim drops a root tree's capabilities there: the mounts need
// them, the command must not have them). A prepare error stops the
// command: Exec returns it, or the init prints it and exits with 1. The
// caller locks its goroutine to its thread when prepare changes
// per-thread state (capabilities are).
func ExecPrepared(path string, args, env []string, prepare func() error) error {
	sp, ok, err := enter()
	if err != nil {
		return err
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return len(kv) > len(specEnv) && kv[:len(specEnv)+1] == specEnv+"="
	})
	if ok && sp.Init {
		os.Exit(runInit(sp, path, args, env, prepare))
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	return syscall.Exec(path, args, env)
}

// forwarded are the signals the init passes to the command. The kernel
// delivers to a namespace's init only the signals it handles, so without
// this a SIGTERM from polygraph would be lost.
var forwarded = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
}

// ttySignals reach the command from the terminal itself when both share
// the terminal's foreground process group; forwarding them would double
// them.
var ttySignals = []os.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGWINCH}

// runInit is PID 1 of the tree's PID namespace: it starts the command as
// the target user, forwards signals to it, reaps every orphan the tree
// leaves (the namespace reparents them here) and, when the command
// exits, exits with its status, which makes the kernel kill what is left
// in the namespace. A command killed by a signal gives 128+signal.
// prepare (see ExecPrepared) runs in the init before the fork: what it
// drops of this thread's capabilities the command never gets, and the init
// itself needs none of them after the mounts (it forks, waits and signals
// its own uid's processes).
func runInit(sp spec, path string, args, env []string, prepare func() error) int {
	if prepare != nil {
		if err := prepare(); err != nil {
			fmt.Fprintf(os.Stderr, "polygraph: %v\n", err)
			return 1
		}
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{}}
	if sp.UID != nil {
		attr.Sys.Credential = &syscall.Credential{Uid: *sp.UID, Gid: sp.GID, Groups: sp.Groups}
	}
	pid, err := syscall.ForkExec(path, args, attr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "polygraph: %s: %v\n", args[0], err)
		return 126
	}
	fg := foreground()
	go func() {
		for sig := range sigs {
			if fg && slices.Contains(ttySignals, sig) {
				continue
			}
			syscall.Kill(pid, sig.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 1 // ECHILD: the command is gone without a status
		}
		if wpid != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// foreground reports that stdin is a terminal whose foreground process
// group is this process's.
func foreground() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
