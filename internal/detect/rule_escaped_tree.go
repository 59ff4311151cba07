package detect

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "escaped-tree",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindConnect, event.KindPeer, event.KindFollow, event.KindOpen, event.KindExec, event.KindSend, event.KindNet},
		Summary:  "the tree reached a process outside it over a Unix socket or a FIFO, which can act for it unrecorded (a terminal multiplexer's server, a helper started before the session, a container daemon), or a process outside it that the tree reached (a message, a FIFO) acted for it while followed: it executed a program, read a secret or sent data out; or one that only opened a file the tree wrote (a watcher re-running a script, a dev server reloading a module) read a secret and then sent data over the network",
		Severity: SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1559"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		Escalated:  Frameworks{ATTACK: []string{"T1041"}, OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		Escalation: "a credential was read earlier in the session, or the process on the other end runs containers or any command it is sent (a terminal multiplexer), or, followed, it read a secret or, reached by a message or a FIFO, sent data anywhere but back to the tree (medium when it only executed a program)",
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
		blocked := e.Kind == event.KindConnect && s.edgeRefused("unix", e.PID) ||
			e.Kind == event.KindPeer && s.edgeRefused("fifo", e.PID)
		if s.byEvent[i].flags&fOwn != 0 && !blocked {
			continue // the agent's own channels (its sandbox's proxy, its helpers), unless the isolation refused one
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
		if blocked {
			why = joinNote(why, "the isolation stopped it before it could send and killed it (a process outside the session that the policy's unix_peers do not name)")
		}
		key := fmt.Sprint(e.PeerPID()) + "\x00" + s.actorKey(e)
		if blocked {
			key += "\x00blocked"
		}
		g.add(key, func() *accessGroup {
			return &accessGroup{path: peer, who: who, call: call, sev: sev, note: joinNote("through "+channel, why), blocked: blocked}
		}, e.Seq)
	}
	acted := followedActs(s, &g)
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		slices.Sort(x.seqs)
		x.seqs = slices.Compact(x.seqs)
		detail := fmt.Sprintf("%s reached %s, a process outside the traced tree, %s. The process on the other end can act for the tree "+
			"(run commands, read files, send data) and nothing it does is recorded.", x.who, x.path, x.note)
		if x.blocked {
			detail = fmt.Sprintf("%s reached %s, a process outside the traced tree, %s.", x.who, x.path, x.note)
		}
		if a := acted[k]; a != "" {
			detail = fmt.Sprintf("%s reached %s, a process outside the traced tree, %s. It was followed from then on (what it does "+
				"is recorded as the tree's, for 10 s after the tree last reached it) and acted for the tree: %s.", x.who, x.path, x.note, a)
		}
		escalated := x.sev == SeverityHigh
		title := "Reached a process outside the tree: " + x.path
		if x.blocked {
			title += " (blocked)"
		}
		f := s.finding(x.sev, title, detail, x.call, capped(x.seqs, 20), escalated)
		f.Blocked = x.blocked
		out = append(out, f)
	}
	return out
}

// weakSecretRead reports whether events[i], an event of a process
// followed for opening a file the tree wrote (weakFollow, whose events no
// other rule judges), read a credential file: by a name the sensitive
// list matches, or by the identity of one the session knew (secretMatch),
// its own client's read or not. An agent's configuration, any read by an
// agent program (another agent on the host, at its own start-up), and a
// file the tree wrote before (a .env the agent made, which the dev server
// it was written for reloads) are not one.
func (s *run) weakSecretRead(i int) bool {
	e := s.events[i]
	if e.Kind != event.KindOpen || !succeeded(e) || !strings.Contains(e.Access, "read") ||
		s.pol.AgentProgram(s.programNames(e.ExecID)) {
		return false
	}
	id := s.pathID(e.Path)
	if at, wrote := s.writtenAt[id]; wrote && id >= 0 && at < e.Seq {
		return false
	}
	if _, _, ok := s.secretMatch(setAgentConfig, i, id); ok {
		return false
	}
	_, _, ok := s.secretMatch(setSensitive, i, id)
	return ok
}

// edgeRefused reports whether the isolation killed process pid for
// reaching a process outside the session: a Unix connect (what "unix") or
// an open of a FIFO ("fifo"), as the session's isolation metadata lists
// its kills. The kill's target may be another process than the one the
// sensor names (the listening socket's other holder, the FIFO's other
// end): the process is the same, and it made one such call.
func (s *run) edgeRefused(what string, pid uint32) bool {
	iso := s.in.Meta.Isolation
	if iso == nil {
		return false
	}
	for _, k := range iso.Killed {
		if k.What == what && k.PID == pid {
			return true
		}
	}
	return false
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

// followChannels names a follow event's channel (event.Call.Method).
var followChannels = map[string]string{"unix_stream": "a Unix stream socket", "unix_dgram": "a Unix datagram socket",
	"unix_seqpacket": "a Unix seqpacket socket", "unix": "a Unix socket", "fifo": "a FIFO",
	"file": "a file the tree wrote", "exec": "a program the tree wrote"}

// followedActs judges what the processes outside the tree that the tree
// reached did while followed (a follow event: the process and what it
// forked and executed from then, attributed to the call that reached it).
// Being followed is nothing; a read of a secret (the needed findings' reads)
// or a connection or datagram out of the tree (not DNS, not to a server of
// the tree's, not allowed by the policy) is high, an exec medium. A
// followed process the policy lists as a system service (unix_peers) is
// judged on secret reads only. One followed for opening or running a file
// the tree wrote (weakFollow) was asked nothing, and is judged on the
// flow alone: a secret it read (weakSecretRead) and then bytes it sent
// over the network (a connection, a datagram, or what it wrote on a
// connection it accepted: a dev server's answer to the tree's own
// request) are high; either alone, or anything else it did, nothing. It
// adds to g under the key the channel's own finding has (the outside
// process and the asking call) and returns, per key, what the process did.
func followedActs(s *run, g *groups) map[string]string {
	secrets := secretReadSeqs(s.needs)
	acted := map[string]string{}
	for i := range s.byEvent {
		f := s.events[i]
		if f.Kind != event.KindFollow || s.byEvent[i].flags&fOwn != 0 {
			continue
		}
		weak := weakFollow(f)
		names := policy.ProgramNames(f.TargetExe(), nil)
		service := f.TargetExe() != "" && s.pol.UnixPeer(names)
		var seqs []uint64
		var did []string
		sev := SeverityInfo
		var file string
		// weak: the flow, the first secret read and the last send (the
		// subtree's images are not in time order)
		var readAt, sentAt time.Time
		for _, im := range s.tree.Subtree(f.ExecID) {
			for _, j := range im.Events {
				e := s.events[j]
				if file == "" && e.Kind == event.KindOpen && im.ID == f.ExecID {
					file = e.Path
				}
				var what string
				switch {
				case secrets[e.Seq] || weak && s.weakSecretRead(int(j)):
					what, sev = "read "+e.Path, SeverityHigh
					if readAt.IsZero() || e.TS.Before(readAt) {
						readAt = e.TS
					}
				case service:
				case (isEgress(e) || (e.Kind == event.KindSend || weak && e.Kind == event.KindNet && e.BytesSent() > 0) &&
					(e.Family() == "ipv4" || e.Family() == "ipv6")) &&
					offTree(s.facts, e) && !s.allowed(e, s.peerOf(e)):
					what, sev = "sent to "+s.peerOf(e).display(e), SeverityHigh
					if e.TS.After(sentAt) {
						sentAt = e.TS
					}
				case e.Kind == event.KindExec:
					what = "executed " + e.Path
					if sev.Rank() < SeverityMedium.Rank() {
						sev = SeverityMedium
					}
				}
				if what != "" {
					seqs = append(seqs, e.Seq)
					if len(did) < 6 && !slices.Contains(did, what) {
						did = append(did, what)
					}
				}
			}
		}
		if sev.Rank() < SeverityMedium.Rank() || weak && (readAt.IsZero() || sentAt.Before(readAt)) {
			continue
		}
		peer := fmt.Sprintf("pid %d", f.PID)
		if n := path.Base(f.TargetExe()); f.TargetExe() != "" {
			peer = fmt.Sprintf("%s (pid %d)", n, f.PID)
		} else if f.Comm != "" {
			peer = fmt.Sprintf("%s (pid %d)", f.Comm, f.PID)
		}
		channel := followChannels[f.Method()]
		if channel == "" {
			channel = "a channel"
		}
		if file != "" && (f.Method() == "file" || f.Method() == "exec") {
			channel += " (" + file + ")"
		}
		key := fmt.Sprint(f.PID) + "\x00" + s.actorKey(f)
		call, who := s.actor(f)
		g.add(key, func() *accessGroup {
			return &accessGroup{path: peer, who: who, call: call, sev: sev, note: "through " + channel}
		}, f.Seq)
		x := g.m[key]
		if sev.Rank() > x.sev.Rank() {
			x.sev = sev
		}
		x.seqs = append(x.seqs, seqs...)
		if acted[key] != "" {
			acted[key] += "; "
		}
		acted[key] += strings.Join(did, ", ")
	}
	return acted
}
