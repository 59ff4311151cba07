package detect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "sensitive-read",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen, event.KindExec, event.KindKey, event.KindRename, event.KindLink, event.KindMount},
		Summary:  "a credential file (cloud, SSH, registry tokens, .env, browser cookie and login stores) was read, taken under another name (a link, a rename, a mount) or tried (a refused or masked attempt), a key of the kernel keyring the tree did not make was read (keyctl(2), request_key(2)), or a secret store's command line asked to print a secret (the kernel keyring, the desktop keyring)",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1552.001"}, ATLAS: []string{"AML.T0055"},
			OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		check: sensitiveRead,
	})
}

// sensitiveRead is the sensitive-read rule: credential files read.
func sensitiveRead(s *run) []Finding {
	var g groups
	for i := range s.byEvent {
		f := &s.byEvent[i]
		e := s.events[i]
		if what, ok := s.refusedProcOpen(e); ok {
			// Another process's environment or open file, refused: no
			// agent's bookkeeping reads another process's secrets either.
			call, who := s.actor(e)
			g.add(e.Path+"\x00"+s.actorKey(e)+"\x00refused", func() *accessGroup {
				return &accessGroup{path: e.Path, who: who, call: call, sev: SeverityMedium, note: what, refused: true}
			}, e.Seq)
			continue
		}
		if f.flags&fRead == 0 && !s.blockedRead(e) {
			continue
		}
		if _, _, ok := s.secretMatch(setAgentConfig, i, f.path); ok {
			continue // agent-config-read's
		}
		r, alias, ok := s.secretMatch(setSensitive, i, f.path)
		if !ok {
			if pid, env := otherEnviron(e); env {
				// Another process's environment: its API keys and tokens.
				call, who := s.actor(e)
				g.add(e.Path+"\x00"+s.actorKey(e), func() *accessGroup {
					return &accessGroup{path: e.Path, who: who, call: call, sev: s.rule.Severity,
						note: fmt.Sprintf("the environment of process %d, where API keys and tokens live", pid)}
				}, e.Seq)
			} else if m := s.maskOf(e.Path); m != "" && !s.agentOwn(e) {
				// A store the isolation masked, opened as what it is (the
				// directory) or through it: it read the mask.
				store, _, found := s.storeIn(i, m)
				if !found {
					continue // a mask over no credential file (another agent's settings): agent-config-read's
				}
				p := s.paths.strs[store]
				call, who := s.actor(e)
				g.add(p+"\x00"+s.actorKey(e)+"\x00blocked", func() *accessGroup {
					return &accessGroup{path: p, who: who, call: call, sev: s.rule.Severity,
						note: "opened as " + s.display(e.Path), blocked: true}
				}, e.Seq)
			}
			continue
		}
		// A followed process (outside the tree) is outside the isolation's
		// mount namespace too: the mask hid nothing from its read.
		blocked := s.masked(e.Path) && (f.flags&fFollowed == 0 || e.Failed())
		sev := severity(r.Severity, s.rule.Severity)
		note := ""
		names := s.programNames(e.ExecID)
		switch {
		case s.agentOwn(e):
			sev, note = SeverityInfo, "the agent's own start-up or bookkeeping read"
		case r.IsClient(names):
			if why := s.oracleUse(e, r.Clients); why != "" {
				note = fmt.Sprintf("its own client (%s), %s", strings.Join(names, "/"), why)
			} else {
				sev, note = SeverityInfo, fmt.Sprintf("read by its own client (%s)", strings.Join(names, "/"))
			}
		}
		path := e.Path
		if alias != "" {
			// The same file under another name: a rename, a link, a bind
			// mount. No client reads its credential that way.
			sev, note = severity(r.Severity, s.rule.Severity), "opened as "+s.display(e.Path)+", the same file by another name"
			path = alias
		}
		call, who := s.actor(e)
		key := path + "\x00" + e.Path + "\x00" + s.actorKey(e) + "\x00" + string(sev) // a client's read never hides another's
		if blocked {
			key += "\x00blocked"
		}
		g.add(key, func() *accessGroup {
			return &accessGroup{path: path, who: who, call: call, sev: sev, note: note, blocked: blocked}
		}, e.Seq)
	}
	// Secrets that live in no file: the kernel keyring and the desktop
	// keyring hand them to whoever asks their command line to print one.
	for _, i := range s.execs {
		e := s.events[i]
		store, ok := storePrint(e.Argv())
		if !ok || s.agentOwn(e) {
			continue
		}
		call, who := s.actor(e)
		g.add(store+"\x00"+s.actorKey(e), func() *accessGroup {
			return &accessGroup{path: store, who: who, call: call, sev: s.rule.Severity,
				note: "`" + excerpt(strings.Join(e.Argv(), " "), 80) + "` prints a secret that lives in no file"}
		}, e.Seq)
	}
	storeMoves(s, &g)
	maskedArgs(s, &g)
	// The kernel keyring read through its calls, whatever program made
	// them: one group with keyctl's command line above when it was keyctl.
	keys := map[string][]string{} // the keys each group read
	for _, r := range s.keyringReads() {
		e := s.events[r.i]
		call, who := s.actor(e)
		sev, note := s.rule.Severity, "its payload handed to the reader"
		if e.KeyOp() == "request" {
			note = "found for the caller with request_key(2)"
		}
		if s.agentOwn(e) {
			sev, note = SeverityInfo, "the agent's own read"
		}
		k := storeKeyring + "\x00" + s.actorKey(e)
		if sev != s.rule.Severity {
			k += "\x00" + string(sev)
		}
		g.add(k, func() *accessGroup {
			return &accessGroup{path: storeKeyring, who: who, call: call, sev: sev, note: note}
		}, e.Seq)
		if name := r.name.label(e.KeySerial()); !slices.Contains(keys[k], name) {
			keys[k] = append(keys[k], name)
		}
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("%s was read by %s", s.display(x.path), x.who)
		switch {
		case x.title != "":
			detail = fmt.Sprintf("%s was taken by %s", s.display(x.path), x.who)
		case x.refused:
			detail = fmt.Sprintf("%s tried to open %s", x.who, s.display(x.path))
		case len(keys[k]) > 0:
			detail = fmt.Sprintf("%s of the kernel keyring was read by %s", list(keys[k], 3), x.who)
		}
		if x.note != "" {
			detail += ": " + x.note
		}
		if len(x.seqs) > 1 {
			detail += fmt.Sprintf(" (%d times)", len(x.seqs))
		}
		title := "Credential file read: " + s.display(x.path)
		switch {
		case x.title != "":
			title = x.title + s.display(x.path)
		case x.refused:
			title = "Secret read attempted: " + s.display(x.path)
		case !strings.HasPrefix(x.path, "/"):
			title = "Secret read from " + x.path // a store with no file (storePrint)
		}
		switch {
		case x.blocked:
			title += " (blocked)"
			detail += "; the isolation masked it, so it read nothing"
		case x.refused:
			title += " (blocked)"
			detail += "; the kernel refused it, so it read nothing"
		}
		f := s.finding(x.sev, title, detail+".", x.call, capped(x.seqs, 20), false)
		f.Blocked = x.blocked || x.refused
		out = append(out, f)
	}
	return append(out, s.storeMounts()...) // mounts.go
}

// storePrint reports whether argv asks a secret store that keeps no file
// of its own to print a secret, and names the store: keyctl's print,
// pipe and read of a key (the kernel keyring), secret-tool's lookup (the
// desktop keyring), security's find-*-password -w (the macOS keychain).
func storePrint(argv []string) (string, bool) {
	if len(argv) < 2 {
		return "", false
	}
	switch prog := policy.ProgramName(argv[0]); {
	case prog == "keyctl" && (argv[1] == "print" || argv[1] == "pipe" || argv[1] == "read"):
		return storeKeyring, true
	case prog == "secret-tool" && argv[1] == "lookup":
		return "the desktop keyring", true
	case prog == "security" && strings.HasPrefix(argv[1], "find-") && strings.HasSuffix(argv[1], "-password") && slices.Contains(argv[2:], "-w"):
		return "the keychain", true
	}
	return "", false
}

// storeKeyring names the kernel keyring as a store in findings.
const storeKeyring = "the kernel keyring"
