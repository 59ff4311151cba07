package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Session is one isolated session: its cgroup, its egress programs and
// the spec its child applies. Close ends it. Allow, Denials and Usage may
// be called from another goroutine than the one that runs the tree.
type Session struct {
	mu     sync.Mutex // guards egress and usage against a concurrent Close
	opts   Options
	dir    string
	v1     map[string]string // v1 controller -> its session cgroup
	cgfd   *os.File
	lock   *os.File
	egress *egress
	enf    *enforcer
	usage  *Usage
	denied []Denial // what Close read last
	killed []Killed
	gated  []Gated
}

// Start creates the session's cgroup, sets its limits and attaches the
// egress programs. The tree is not running yet: Apply prepares its
// command. Leftovers of killed sessions with the same ID are removed
// first; call Cleanup for all of them.
func Start(ctx context.Context, o Options) (_ *Session, err error) {
	if !idPattern.MatchString(o.ID) {
		return nil, fmt.Errorf("session id %q: want 1-64 of [A-Za-z0-9._-]", o.ID)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, p := range append(append([]string(nil), o.Mask...), o.Keep...) {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("mask and keep paths must be absolute: %q", p)
		}
	}
	s := &Session{opts: o}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.lock, err = lockSession(o.ID); err != nil {
		return nil, err
	}
	parent, err := parentCgroup()
	if err != nil {
		return nil, err
	}
	s.dir = filepath.Join(parent, sessionPrefix+o.ID)
	left, err := removeSession(parent, o.ID)
	for _, l := range left {
		slog.Warn("removed a leftover of a killed session", "path", l.Path, "killed", l.Killed)
	}
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create session cgroup: %w", err)
	}
	if s.v1, err = makeV1(s.dir, o.ID); err != nil {
		return nil, err
	}
	if err := setLimits(s.cgroups(), o); err != nil {
		return nil, err
	}
	if s.cgfd, err = os.OpenFile(s.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("open session cgroup: %w", err)
	}
	if o.Egress != nil {
		if s.egress, err = attachEgress(s.dir, pinDirFor(o.ID), o.Egress); err != nil {
			return nil, err
		}
	}
	if o.Kill != nil || o.Gate != nil || o.UnixPeer != nil {
		if s.enf, err = attachEnforce(s.dir, o); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Dir is the session cgroup's directory.
func (s *Session) Dir() string { return s.dir }

// Apply prepares cmd to start isolated: in a new mount namespace, born
// into the session cgroup (CLONE_INTO_CGROUP, so not one instruction of
// it runs outside), with the mask spec in its environment. cmd must run a
// program that becomes the real command with Exec: polygraph itself, as
// the sensor's shim or through HelperArg. A Credential in
// cmd.SysProcAttr is moved into the spec: the child has to stay root
// until its mounts are done, and Exec drops to that user.
func (s *Session) Apply(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	sp := spec{Mask: s.opts.Mask, Keep: s.opts.Keep, Init: s.opts.PIDNamespace, NoIOUring: s.opts.NoIOUring}
	for _, d := range s.v1 {
		sp.Join = append(sp.Join, filepath.Join(d, "cgroup.procs"))
	}
	if c := a.Credential; c != nil {
		uid := c.Uid
		sp.UID, sp.GID, sp.Groups = &uid, c.Gid, c.Groups
		// NoSetGroups is not honoured: keeping the groups would keep
		// root's, so the tree gets exactly c.Groups (none if empty).
		a.Credential = nil
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	a.Cloneflags |= unix.CLONE_NEWNS
	if s.opts.PIDNamespace {
		a.Cloneflags |= unix.CLONE_NEWPID
	}
	a.UseCgroupFD = true
	a.CgroupFD = int(s.cgfd.Fd())
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, specEnv+"="+string(b))
	return nil
}

// Allow adds destinations to a running session's allowlist, for
// addresses learned outside the kernel's own reading of DNS answers
// (Egress.Names): a lookup over TCP or HTTPS the recorder saw, a name
// re-resolved by the caller.
func (s *Session) Allow(eps ...Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.egress == nil {
		return errors.New("allow: the session has no egress control")
	}
	for _, ep := range eps {
		if err := s.egress.allow(ep); err != nil {
			return err
		}
	}
	return nil
}

// AllowName adds an allowed host name to a running session (see
// Egress.Names).
func (s *Session) AllowName(n Name) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.egress == nil {
		return errors.New("allow name: the session has no egress control")
	}
	return s.egress.allowName(n)
}

// Denials returns the destinations refused so far; after Close, those
// refused during the whole session.
func (s *Session) Denials() ([]Denial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.egress == nil {
		return s.denied, nil
	}
	return s.egress.denials()
}

// Kills returns the processes the kill rules killed so far; after Close,
// during the whole session.
func (s *Session) Kills() ([]Killed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enf == nil {
		return s.killed, nil
	}
	return s.enf.kills()
}

// Gated returns the execs the gate judged so far; after Close, during the
// whole session.
func (s *Session) Gated() []Gated {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enf == nil {
		return s.gated
	}
	return s.enf.gatedSoFar()
}

// Usage reads the session cgroup's accounting now; after Close it
// returns what Close read last.
func (s *Session) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usage != nil {
		return *s.usage
	}
	return readUsage(s.cgroups())
}

func (s *Session) cgroups() cgroups { return cgroups{v2: s.dir, v1: s.v1} }

// Close ends the session after its tree has exited: it reads the
// accounting, kills whatever the tree left running, removes the cgroup
// and detaches the programs. Mounts need no removal: the namespace goes
// away with its last process. Close is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.dir != "" && s.usage == nil {
		u := readUsage(s.cgroups())
		s.usage = &u
		if _, err := removeCgroup(s.dir); err != nil {
			errs = append(errs, err)
		}
		for _, d := range s.v1 {
			if _, err := removeCgroup(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if s.enf != nil {
		var err error
		s.killed, err = s.enf.kills()
		s.gated = s.enf.gatedSoFar()
		errs = append(errs, err, s.enf.close())
		s.enf = nil
	}
	if s.egress != nil {
		var err error
		s.denied, err = s.egress.denials()
		errs = append(errs, err, s.egress.close())
		s.egress = nil
	}
	if s.cgfd != nil {
		s.cgfd.Close()
		s.cgfd = nil
	}
	if s.lock != nil {
		os.Remove(s.lock.Name())
		s.lock.Close()
		s.lock = nil
	}
	return errors.Join(errs...)
}

// HelperArg is the hidden first argument that makes polygraph act as the
// isolation helper: `polygraph __polygraph_guard CMD ARGS...` enters the
// isolation and execs CMD. The sensor's shim does the same by calling
// Exec itself; the helper is for starting a tree without the sensor.
const HelperArg = "__polygraph_guard"

// MaybeRunHelper runs the helper and never returns when os.Args asks
// for it; main calls it first thing.
func MaybeRunHelper() {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(HelperMain(os.Args[2:]))
	}
}

// HelperMain enters the isolation and execs args (see Exec). It returns
// only on failure, with the shell's status for it.
func HelperMain(args []string) int {
	if len(args) == 0 {
		return 0
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "polygraph: %s: command not found\n", args[0])
		return 127
	}
	err = Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "polygraph: isolated exec of %s failed: %v\n", args[0], err)
	return 126
}

// Command returns a command running name with args through the helper
// (polygraph re-executed with HelperArg). Set its Credential, then Apply
// it to the session.
func (s *Session) Command(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find polygraph's own binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, append([]string{HelperArg, name}, args...)...)
	cmd.Args[0] = name
	return cmd, nil
}
