package record

import (
	"context"
	"fmt"
	"github.com/polygraph/polygraph/internal/procfs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/guard"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
)

// isolation is a running isolated session: the guard session and what
// the session's metadata will say about it.
type isolation struct {
	sess    *guard.Session
	info    manifest.Isolation
	root    atomic.Bool // PID-namespace mode: the command's pid is known
	checker *integrity.Checker
	cwd     string
	stop    context.CancelFunc // ends the lookups at start
	lookups sync.WaitGroup
}

// startIsolation removes what killed sessions left (and says so), then
// starts the guard session for the session meta describes.
func startIsolation(ctx context.Context, o Options, meta session.Meta) (*isolation, error) {
	iso := &isolation{cwd: meta.Cwd}
	left, err := guard.Cleanup()
	if err != nil {
		slog.Warn("could not look for leftovers of killed sessions", "err", err)
	}
	for _, l := range left {
		iso.info.Removed = append(iso.info.Removed, l.String())
	}
	if len(left) > 0 {
		slog.Warn("removed what killed isolated sessions left behind", "removed", strings.Join(iso.info.Removed, ", "))
	}
	pol := o.Isolate.Policy
	if pol == nil {
		pol = policy.Default()
	}
	own := ownAgent(o.Command, o.Env)
	mask, keep := masks(meta.Home, own)
	eg, desc := egressOf(ctx, pol, o.Env)
	g := guard.Options{
		ID: meta.ID, Mask: mask, Keep: keep, PIDNamespace: true, NoIOUring: true, Egress: eg,
		MemoryMax: o.Isolate.MemoryMax, PidsMax: o.Isolate.PidsMax,
	}
	if k := pol.Kill; len(k.Exec)+len(k.Write) > 0 {
		g.Kill = &guard.Kill{Exec: expandHome(k.Exec, meta.Home), Write: expandHome(k.Write, meta.Home)}
	}
	// The tree's edge: a Unix connect to a listener outside the session,
	// or an open of a FIFO a process outside it holds, is let through
	// only to the policy's system services (unix_peers), the same list
	// escaped-tree judges by.
	g.UnixPeer = func(pid, peer uint32) (bool, string) { return iso.unixPeer(pol, pid, peer) }
	if pol.ExecGate {
		if iso.checker, err = gateChecker(o, meta); err != nil {
			return nil, err
		}
		g.Gate = iso.gate
	}
	if iso.sess, err = guard.Start(ctx, g); err != nil {
		return nil, fmt.Errorf("isolate: %w", err)
	}
	iso.resolve(ctx, eg.Names)
	iso.info.Masked, iso.info.Kept, iso.info.Egress = present(mask), present(keep), desc
	iso.info.PIDNamespace, iso.info.MemoryMax, iso.info.PidsMax = true, g.MemoryMax, g.PidsMax
	slog.Debug("isolated", "masked", iso.info.Masked, "kept", iso.info.Kept, "egress", desc)
	return iso, nil
}

// unixPeer judges a process outside the session that process pid of the
// tree reached (guard.UnixPeerFunc: a Unix listener, a FIFO's holder):
// the policy's system services (unix_peers, by the outside process's
// program names, as escaped-tree judges them) are allowed, whoever in the
// tree asked: the agent's own process too, since its in-process tools
// (a file write to a FIFO) are the tree's work. A listener whose
// listening process is gone (a daemon that forked after listen) cannot be
// named: it is let through, and the connect is still recorded and judged.
func (iso *isolation) unixPeer(pol *policy.Policy, pid, peer uint32) (bool, string) {
	if peer == 0 {
		return true, ""
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", peer))
	// A daemon whose binary was upgraded under it runs "… (deleted)".
	exe = strings.TrimSuffix(exe, " (deleted)")
	return exe != "" && pol.UnixPeer(policy.ProgramNames(exe, nil)), exe
}

// present keeps the paths that exist: a mask of nothing hides nothing.
func present(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ownAgent is the agent the command runs, from its resolved executable
// (and the script a runtime runs for it); nil when it is none polygraph
// knows.
func ownAgent(command, env []string) *agent.Profile {
	if len(command) == 0 {
		return nil
	}
	path := command[0]
	if !strings.Contains(path, "/") {
		for _, dir := range filepath.SplitList(envValue(env, "PATH")) {
			if p := filepath.Join(dir, path); isExecutable(p) {
				path = p
				break
			}
		}
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	argv := slices.Clone(command)
	if len(argv) > 1 {
		if r, err := filepath.EvalSymlinks(argv[1]); err == nil && filepath.IsAbs(argv[1]) {
			argv[1] = r
		}
	}
	if p, ok := agent.Executable(path, argv); ok && !p.Generic {
		return p
	}
	return nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// egressOf builds the allowlist from the policy's egress entries, its
// registries, the model endpoints env points the agent at and, with
// egress.dns, the resolvers. Names are followed in the kernel (and
// resolved by resolve). It returns the allowlist and its description.
func egressOf(ctx context.Context, pol *policy.Policy, env []string) (*guard.Egress, []string) {
	if env == nil {
		env = os.Environ() // the command's, as exec gives it
	}
	eg := &guard.Egress{}
	names := map[string][]uint16{}
	var order, desc []string
	entries := append(append(slices.Clone(pol.Egress.Allow), pol.Registries...), endpointEntries(env)...)
	for _, e := range entries {
		ep, name, ok := egressEntry(e)
		switch {
		case !ok:
			slog.Debug("isolate: egress entry the kernel cannot follow (a wildcard or a prefix); not allowed", "entry", e)
		case name == "":
			eg.Allow = append(eg.Allow, ep)
			desc = append(desc, ep.String())
		default:
			if _, seen := names[name]; !seen {
				order = append(order, name)
			}
			names[name] = append(names[name], ep.Port)
		}
	}
	if pol.Egress.DNS == nil || *pol.Egress.DNS {
		for _, r := range resolvers("/etc/resolv.conf") {
			eg.Allow = append(eg.Allow, guard.Endpoint{Addr: r, Port: 53})
			desc = append(desc, guard.Endpoint{Addr: r, Port: 53}.String())
		}
	}
	for _, n := range order {
		ports := names[n]
		if slices.Contains(ports, 0) || len(ports) > 4 {
			ports = nil // any port: the entry said so, or more than the kernel keeps per name
		}
		eg.Names = append(eg.Names, guard.Name{Host: n, Ports: ports})
		desc = append(desc, n+portsDesc(ports))
	}
	return eg, desc
}

// resolve looks the allowed names up in the background and allows what
// they resolve to: lookups the kernel will not see (a cache outside the
// tree, DNS over TCP) still find the addresses allowed. In the
// background because a machine without a reachable resolver would make
// every start wait for the lookups to time out (2 s here); the tree's own
// lookups are followed in the kernel meanwhile.
func (iso *isolation) resolve(ctx context.Context, names []guard.Name) {
	ctx, iso.stop = context.WithCancel(ctx)
	iso.lookups.Add(1)
	go func() {
		defer iso.lookups.Done()
		if eps := resolveNow(ctx, names); len(eps) > 0 && ctx.Err() == nil {
			if err := iso.sess.Allow(eps...); err != nil {
				slog.Debug("isolate: allowing the names' addresses", "err", err)
			}
		}
	}()
}

func portsDesc(ports []uint16) string {
	if len(ports) == 0 {
		return ":*"
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = fmt.Sprint(p)
	}
	return ":" + strings.Join(s, ",")
}

// resolveNow looks the names up, in parallel and within two seconds.
func resolveNow(ctx context.Context, names []guard.Name) []guard.Endpoint {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out []guard.Endpoint
	)
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", n.Host)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range addrs {
				if len(n.Ports) == 0 {
					out = append(out, guard.Endpoint{Addr: a.Unmap()})
				}
				for _, p := range n.Ports {
					out = append(out, guard.Endpoint{Addr: a.Unmap(), Port: p})
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// apply prepares the command to start isolated. SSH_AUTH_SOCK goes: the
// ssh agent is one of the policy's system services, and would sign with
// the masked keys. A make jobserver outside the tree goes from MAKEFLAGS
// (--jobserver-auth and its old spelling): its FIFO's other end is the
// outer make, which the edge gate would refuse, and a make in the tree
// runs its own jobs alone without it.
func (iso *isolation) apply(cmd *exec.Cmd) error {
	if iso == nil {
		return nil
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "SSH_AUTH_SOCK=") })
	for i, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "MAKEFLAGS="); ok {
			cmd.Env[i] = "MAKEFLAGS=" + withoutJobserver(v)
		}
	}
	return iso.sess.Apply(cmd)
}

// withoutJobserver is MAKEFLAGS without the words that hand a jobserver
// down (--jobserver-auth=…, --jobserver-fds=…).
func withoutJobserver(flags string) string {
	words := strings.Fields(flags)
	words = slices.DeleteFunc(words, func(w string) bool {
		return strings.HasPrefix(w, "--jobserver-auth=") || strings.HasPrefix(w, "--jobserver-fds=")
	})
	return strings.Join(words, " ")
}

// shimEvent sees the events of the shim's image, which the recorder
// drops. In PID-namespace mode the shim never execs the command: it
// stays the namespace's init and the command is its first child, so the
// first fork names the session's root process.
func (iso *isolation) shimEvent(ev *event.Event, w *session.Writer) {
	if iso == nil || ev.Kind != event.KindFork || ev.Process == nil || ev.Process.ChildPID == 0 {
		return
	}
	if iso.root.CompareAndSwap(false, true) {
		w.SetRootPID(int(ev.Process.ChildPID))
	}
}

// collect stores what the session enforced, refused and used in the
// session's metadata; the tree is done.
func (iso *isolation) collect(w *session.Writer) {
	if iso == nil {
		return
	}
	denied, err := iso.sess.Denials()
	if err != nil {
		slog.Warn("could not read the egress denials", "err", err)
	}
	for _, d := range denied {
		md := manifest.Denial{Hook: d.Hook, Protocol: d.Protocol, Count: d.Count, PID: d.PID}
		if d.Dest.IsValid() {
			md.Dest = d.Dest.String()
			if d.Dest.Addr().Unmap().IsLoopback() && (d.Hook == "connect4" || d.Hook == "connect6") {
				// Who the tree tried to reach on this host: a process
				// outside the tree serving that port.
				if l, ok := procfs.ListenerOf(d.Dest); ok {
					md.ListenerPID, md.ListenerExe = uint32(l.PID), l.Exe
				}
			}
		}
		iso.info.Denied = append(iso.info.Denied, md)
	}
	kills, err := iso.sess.Kills()
	if err != nil {
		slog.Warn("could not read the kill rules' kills", "err", err)
	}
	for _, k := range kills {
		iso.info.Killed = append(iso.info.Killed, manifest.Kill{PID: k.PID, What: k.What, Path: k.Path, Target: k.Target})
	}
	for _, g := range iso.sess.Gated() {
		iso.info.Gated = append(iso.info.Gated, manifest.Gate{PID: g.PID, Path: g.Path, Status: g.Verdict,
			Allowed: g.Allowed, WaitNS: g.Wait.Nanoseconds()})
	}
	u := iso.sess.Usage()
	iso.info.Usage = &manifest.Usage{CPUUserNS: u.CPUUser.Nanoseconds(), CPUSystemNS: u.CPUSystem.Nanoseconds(),
		MemoryPeak: u.MemoryPeak, IORead: u.IORead, IOWrite: u.IOWrite, PidsPeak: u.PidsPeak, Missing: u.Missing}
	info := iso.info
	w.SetIsolation(&info)
}

// close ends the guard session: what the tree left running in its cgroup
// is killed, the cgroup and the programs go.
func (iso *isolation) close() {
	if iso == nil {
		return
	}
	iso.stop()
	iso.lookups.Wait()
	if err := iso.sess.Close(); err != nil {
		slog.Warn("closing the isolated session", "err", err)
	}
}

// gateChecker is the integrity checker the exec gate asks, with the
// user's pins and first sightings.
func gateChecker(o Options, meta session.Meta) (*integrity.Checker, error) {
	store, err := integrity.OpenStore(o.Home)
	if err != nil {
		return nil, fmt.Errorf("exec gate: %w", err)
	}
	c, err := integrity.New(integrity.Options{Store: store, Workspaces: []string{meta.Cwd}, PATH: envValue(o.Env, "PATH")})
	if err != nil {
		return nil, fmt.Errorf("exec gate: %w", err)
	}
	return c, nil
}

// gate judges one stopped exec: a binary or script a trusted source
// knows under another hash (modified) does not run; anything else does.
func (iso *isolation) gate(ctx context.Context, pid uint32) (bool, string, string) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false, "", "unavailable"
	}
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	res := iso.checker.Check(ctx, integrity.Request{PID: pid, Path: exe, Argv: procArgv(int(pid)), Cwd: cwd})
	for _, v := range res.Verdicts() {
		if v.Status == integrity.Modified {
			return false, v.Path, string(v.Status)
		}
	}
	return true, exe, string(res.Binary.Status)
}

// execCommand is the shim's exec: a plain exec unless the command was
// started isolated (guard enters the isolation first). prepare, when not
// nil, runs just before the command starts (guard.ExecPrepared).
func execCommand(path string, args, env []string, prepare func() error) error {
	return guard.ExecPrepared(path, args, env, prepare)
}
