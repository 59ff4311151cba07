package detect

import (
	"fmt"
	"path"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "escaped-tree",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindConnect, event.KindPeer},
		Summary:  "the tree reached a process outside it over a Unix socket or a FIFO, which can act for it unrecorded (a terminal multiplexer's server, a helper started before the session, a container daemon)",
		Severity: SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1559"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		Escalated:  Frameworks{ATTACK: []string{"T1041"}, OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		Escalation: "a credential was read earlier in the session, or the process on the other end runs containers or any command it is sent (a terminal multiplexer)",
		Needs:      []string{"sensitive-read", "agent-config-read"},
		check:      escapedTree,
	})
}

// Container daemons run whatever they are asked to, as root, with the
// host's files a bind mount away.
var containerDaemons = []string{"dockerd", "containerd", "podman", "buildkitd", "crio"}

// Terminal multiplexer servers run any command a client sends them
// (tmux run-shell, send-keys, new-window), in shells that are theirs:
// the tree's work goes on, untraced, as the user.
var commandServers = []string{"tmux", "screen", "zellij", "dtach", "abduco"}

// escapedTree is the escaped-tree rule: a Unix stream connect that
// reached a process outside the tree (the kernel names the listener) or a
// FIFO whose other end an outside process holds, other than the system's
// services the policy lists (unix_peers). What the outside process does in
// response is not in the session: it is not traced.
func escapedTree(s *run) []Finding {
	secretAt, secret := firstSecretRead(s.needs)
	var g groups
	for i := range s.byEvent {
		e := s.events[i]
		var channel string
		switch {
		case e.Kind == event.KindConnect && e.Family() == "unix" && succeeded(e) && e.PeerInTree() != nil && !*e.PeerInTree() && e.PeerPID() != 0:
			channel = "a Unix socket (" + e.Addr() + ")"
		case e.Kind == event.KindPeer && e.PeerPID() != 0:
			channel = "a FIFO (" + e.Path + ")"
		default:
			continue
		}
		if s.byEvent[i].flags&fOwn != 0 {
			continue // the agent's own channels (its sandbox's proxy, its helpers)
		}
		peerNames := policy.ProgramNames(e.PeerExe(), nil)
		if e.PeerExe() != "" && s.pol.UnixPeer(peerNames) {
			continue
		}
		peer := fmt.Sprintf("pid %d", e.PeerPID())
		if e.PeerExe() != "" {
			peer = fmt.Sprintf("%s (pid %d)", path.Base(e.PeerExe()), e.PeerPID())
		}
		sev, why := s.rule.Severity, ""
		switch {
		case secret && secretAt < e.Seq:
			sev, why = SeverityHigh, "a credential was read earlier in the session (see the sensitive-read / agent-config-read findings): what the outside process does with it is not recorded"
		case anyName(containerDaemons, peerNames):
			sev, why = SeverityHigh, "it runs containers as root, with the host's files a bind mount away"
		case anyName(commandServers, peerNames):
			sev, why = SeverityHigh, "it runs any command it is sent, in shells of its own that are not traced"
		}
		call, who := s.actor(e)
		g.add(fmt.Sprint(e.PeerPID())+"\x00"+s.actorKey(e), func() *accessGroup {
			return &accessGroup{path: peer, who: who, call: call, sev: sev, note: joinNote("through "+channel, why)}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("%s reached %s, a process outside the traced tree, %s. The process on the other end can act for the tree "+
			"(run commands, read files, send data) and nothing it does is recorded.", x.who, x.path, x.note)
		escalated := x.sev == SeverityHigh
		out = append(out, s.finding(x.sev, "Reached a process outside the tree: "+x.path, detail, x.call, capped(x.seqs, 20), escalated))
	}
	return out
}

// anyName reports whether any of names is one of set.
func anyName(set, names []string) bool {
	for _, n := range names {
		for _, m := range set {
			if strings.EqualFold(n, m) {
				return true
			}
		}
	}
	return false
}
