package detect

import (
	"path"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
)

// Secrets by identity. A credential file is the file, not its name: a
// rename into the workspace, a hard link, a bind mount or a renamed parent
// directory reach the same (dev, ino) under another path. The facts know
// the identities of the credential files the session began with
// (meta.Secrets) and of those opened by their own name during the
// session, and an open of the same identity under any other name is a
// read of that secret (secretMatch), judged as a read by its name would
// be.

// fileID is a file's identity: its device and inode as stat(2) gives them.
type fileID struct{ dev, ino uint64 }

// secretSpan is a credential file's identity while it stands for that
// file: from the event that bound it (0: the session's start) until the
// name's file was replaced or removed (a rename onto the name, an unlink
// of it), after which the inode number can be given to another file.
type secretSpan struct {
	path     int32  // the credential file's name
	from, to uint64 // seqs; to 0 while it lasts
}

// learnSecrets fills s.secrets: the identities of meta.Secrets from the
// start, then of every file opened by the name of a credential file (the
// sensitive and agent-config lists), each for as long as it is that
// file. A credential moved away keeps its identity (that is what the
// identity is for); the file a name held is gone once another is renamed
// onto the name or the name is removed.
func (s *facts) learnSecrets() {
	s.secrets = map[fileID][]secretSpan{}
	byPath := map[int32]fileID{} // the identity each name holds now
	bind := func(k fileID, id int32, seq uint64) {
		if old, ok := byPath[id]; ok && old != k {
			s.endSecret(old, seq)
		}
		if spans := s.secrets[k]; len(spans) > 0 && spans[len(spans)-1].to == 0 {
			return // already bound
		}
		s.secrets[k] = append(s.secrets[k], secretSpan{path: id, from: seq})
		byPath[id] = k
	}
	for _, x := range s.in.Meta.Secrets {
		bind(fileID{x.Dev, x.Ino}, s.addPath(x.Path), 0)
	}
	for i := range s.byEvent {
		e := s.events[i]
		switch e.Kind {
		case event.KindRename, event.KindUnlink:
			if e.Failed() {
				continue
			}
			// The name that lost its file: a rename's target, an
			// unlink's path.
			lost := s.byEvent[i].path
			if e.Kind == event.KindRename {
				lost = s.pathID(e.Path2)
			}
			if k, ok := byPath[lost]; ok {
				s.endSecret(k, e.Seq)
				delete(byPath, lost)
			}
		case event.KindOpen:
			if e.Object == nil || s.byEvent[i].path < 0 || e.Failed() {
				continue
			}
			id := s.byEvent[i].path
			if _, ok := s.matchOf(setSensitive, i, id); !ok {
				if _, ok := s.matchOf(setAgentConfig, i, id); !ok {
					continue
				}
			}
			bind(fileID{e.Object.Dev, e.Object.Ino}, id, e.Seq)
		}
	}
}

// endSecret ends identity k's current span at seq.
func (s *facts) endSecret(k fileID, seq uint64) {
	if spans := s.secrets[k]; len(spans) > 0 && spans[len(spans)-1].to == 0 {
		spans[len(spans)-1].to = seq
	}
}

// secretAt returns the name of the credential file identity k stood for
// at event seq.
func (s *facts) secretAt(k fileID, seq uint64) (int32, bool) {
	for _, sp := range s.secrets[k] {
		if sp.from <= seq && (sp.to == 0 || seq < sp.to) {
			return sp.path, true
		}
	}
	return -1, false
}

// secretMatch is matchOf for a list of credential files (setSensitive,
// setAgentConfig): the entry the path of events[i] matches by name, or
// else, for an open, the entry the name of the credential file it opened
// by identity matches, or the name it has under the source of a mount
// the open went through (mountAliasOf); alias is that name ("" for a
// match by name).
func (s *facts) secretMatch(l *pathList, i int, id int32) (r policy.PathRule, alias string, ok bool) {
	if r, ok := s.matchOf(l, i, id); ok {
		return r, "", true
	}
	e := s.events[i]
	// A credential file is a regular file: a directory or a device with
	// its (dev, ino) is the number given again after the file was
	// removed outside the tree (another session's home emptied).
	if e.Object != nil && (e.Object.FileType == "" || e.Object.FileType == "file") {
		if canon, known := s.secretAt(fileID{e.Object.Dev, e.Object.Ino}, e.Seq); known && canon != id {
			if r, ok := s.matchOf(l, i, canon); ok {
				return r, s.paths.strs[canon], true
			}
		}
	}
	// Through a mount of the store (mounts.go): an overlay gives the file
	// an identity of its own.
	if alias, ok := s.mountAliasOf(i); ok {
		if r, ok := s.matchOf(l, i, alias); ok {
			return r, s.paths.strs[alias], true
		}
	}
	return policy.PathRule{}, "", false
}

// otherEnviron reports whether e opened another process's environment
// (/proc/PID/environ, /proc/PID/task/TID/environ of a PID not e's own),
// and which process's: otherProcFile's environ case.
func otherEnviron(e *event.Event) (pid int, ok bool) {
	pid, _, ok = otherProcFile(e)
	return pid, ok && strings.HasSuffix(e.Path, "/environ")
}

// A credential's own client is trusted with it when it uses it with its
// own service (ssh connecting with the key, git pushing with the stored
// password). Asked to hand it over (print it, or run with a library or a
// helper program someone else chose), it is an oracle, and its read is a
// read like any other's. oracleUse says why, "" for an ordinary use.
func (s *facts) oracleUse(e *event.Event, clients []string) string {
	// What the caller asked for is the command of the topmost client in
	// the chain that reads it (git push, which runs git-remote-https,
	// which runs git credential-store get): walk up while the parent is
	// a client too.
	top := s.tree.Image(e.ExecID)
	for n := 0; top != nil && top.Process != nil && top.Process.Parent != nil && n < 16; n++ {
		parent := top.Process.Parent
		if !policy.NameSet(clients).Has(s.programNames(parent.ID)) {
			break
		}
		top = parent
	}
	for _, id := range []string{e.ExecID, topID(top)} {
		x := s.tree.ExecOf(id)
		if x == nil {
			continue
		}
		for _, kv := range x.Env() {
			name, _, _ := strings.Cut(kv, "=")
			switch name {
			case "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "NODE_OPTIONS", "BASH_ENV":
				return "run with " + name + " set, which loads or runs a program of the caller's choosing"
			}
		}
		if h := helperOption(x.Argv()); h != "" {
			return "run with " + h + ", which runs a program of the caller's choosing"
		}
		if r := redirectOption(x.Argv()); r != "" {
			return "run with " + r + ", which sends it to an address of the caller's choosing"
		}
	}
	if x := s.tree.ExecOf(topID(top)); x != nil && printsCredential(x.Argv()) {
		return "asked to print it (`" + excerpt(strings.Join(x.Argv(), " "), 60) + "`): the output goes to whoever asked"
	}
	// A client uses its credential where its own convention says; one
	// whose command names the file (git diff ~/.git-credentials, curl
	// file://…/.netrc, git config --file ~/.pypirc) is reading a file for
	// whoever named it.
	for _, id := range []string{e.ExecID, topID(top)} {
		if x := s.tree.ExecOf(id); x != nil {
			if a := namesFile(x, e.Path); a != "" {
				return "asked to read it by name (`" + excerpt(a, 60) + "`): the output goes to whoever asked"
			}
		}
	}
	return ""
}

// credentialOptions are the options through which a client is handed a
// credential file to use (ssh -i KEY, curl --netrc-file F, gcloud
// --key-file F, kubectl --kubeconfig F): naming the file there is a use.
var credentialOptions = []string{"-i", "-F", "--identity", "--identity-file", "--netrc-file", "--key-file", "--keyfile",
	"--kubeconfig", "--credentials", "--credential-file", "--credentials-file", "--cert", "--key", "--cacert", "--config", "--profile"}

// namesFile returns the argument of exec x that names file p (as a path,
// relative to x's directory or its HOME, or a file:// URL) other than as
// the value of a credential option, "" for none.
func namesFile(x *event.Event, p string) string {
	argv := x.Argv()
	for i, a := range argv[min(1, len(argv)):] {
		v := a
		if opt, after, ok := strings.Cut(v, "="); ok && strings.HasPrefix(v, "-") {
			if slices.Contains(credentialOptions, opt) {
				continue
			}
			v = after // --file=PATH
		} else if i > 0 && slices.Contains(credentialOptions, argv[i]) {
			continue // the value of the option before it (argv[i] is the argument before a)
		}
		v = strings.TrimPrefix(v, "file://")
		switch {
		case v == "":
			continue
		case strings.HasPrefix(v, "~/") && x.Home() != "":
			v = path.Join(x.Home(), v[2:])
		case !path.IsAbs(v) && x.Cwd() != "":
			v = path.Join(x.Cwd(), v)
		}
		if path.Clean(v) == p {
			return a
		}
	}
	return ""
}

// topID is im's id, "" for none.
func topID(im *lineage.Image) string {
	if im == nil {
		return ""
	}
	return im.ID
}

// helperOption returns the option of argv that makes a credential's
// client run another program: ssh's ProxyCommand or LocalCommand, scp's
// and rsync's transport, git's ssh command or askpass.
func helperOption(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	prog := policy.ProgramName(argv[0])
	for i, a := range argv[1:] {
		la := strings.ToLower(a)
		switch {
		case (prog == "ssh" || prog == "scp" || prog == "sftp") && (strings.Contains(la, "proxycommand") || strings.Contains(la, "localcommand") || strings.Contains(la, "permitlocalcommand")):
			return a
		case prog == "scp" && a == "-S", prog == "rsync" && (a == "-e" || strings.HasPrefix(a, "--rsh")):
			if i+2 < len(argv) || strings.HasPrefix(a, "--rsh=") {
				return a
			}
		case prog == "git" && (strings.HasPrefix(la, "core.sshcommand=") || strings.HasPrefix(la, "core.askpass=") || strings.HasPrefix(la, "credential.helper=")):
			return a
		}
	}
	return ""
}

// redirectOption returns the option of argv that points a client's
// service name at another address (curl --resolve api.github.com:443:
// 127.0.0.1, --connect-to): the credential for the name goes wherever
// the caller said.
func redirectOption(argv []string) string {
	if len(argv) == 0 || policy.ProgramName(argv[0]) != "curl" {
		return ""
	}
	for _, a := range argv[1:] {
		for _, o := range []string{"--resolve", "--connect-to"} {
			if a == o || strings.HasPrefix(a, o+"=") {
				return o
			}
		}
	}
	return ""
}

// printsCredential reports whether argv asks its program to print a
// credential rather than use it: git's credential subcommands, the cloud
// command lines' token and export commands, kubectl's raw config, a
// docker credential helper's get, the password stores' show and read.
func printsCredential(argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	prog, args := policy.ProgramName(argv[0]), argv[1:]
	has := func(words ...string) bool {
		for _, w := range words {
			if !slices.Contains(args, w) {
				return false
			}
		}
		return true
	}
	switch {
	case prog == "git":
		return has("credential", "fill") || has("credential", "get") || has("credential-store", "get") || has("credential-cache", "get")
	case strings.HasPrefix(prog, "git-credential-"), strings.HasPrefix(prog, "docker-credential-"):
		return has("get")
	case prog == "gh":
		return has("auth", "token") || has("auth", "status", "--show-token") || has("auth", "status", "-t")
	case prog == "aws":
		return has("configure", "get") || has("configure", "export-credentials") || has("sts", "get-session-token")
	case prog == "gcloud":
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "print-") && strings.HasSuffix(a, "-token") })
	case prog == "az":
		return has("account", "get-access-token")
	case prog == "kubectl":
		return has("config", "view", "--raw") || has("config", "view", "--flatten")
	case prog == "npm":
		return has("token") || has("config", "get")
	case prog == "op":
		return has("read") || has("item", "get")
	case prog == "pass":
		return has("show") || len(args) == 1 && !strings.HasPrefix(args[0], "-")
	case prog == "secret-tool":
		return has("lookup")
	case prog == "vault":
		return has("read") || has("kv", "get") || has("token", "lookup")
	}
	return false
}
