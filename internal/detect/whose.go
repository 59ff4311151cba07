package detect

import (
	"path"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
)

// Whose home, which program, which directory. What the rules trust about
// a process comes from the kernel's record of it, never from what the
// process calls itself: a home is the HOME its exec had (or any /home/NAME
// and /root, which the policy's "~/" always covers), a program is the file
// the kernel executed (the binary, the #! script, the script an
// interpreter was handed) and only when that file was installed before
// the session rather than written or shipped in the workspace, and the
// workspace is where the agent works, wherever that is, so nothing in it
// passes for temporary.

// learnHomes fills homes and imageHome from the exec events: an image
// runs with the HOME its exec recorded, else the one of the image it came
// from (the environment is inherited), else the session's.
func (s *facts) learnHomes() {
	s.homes = []string{strings.TrimRight(s.home, "/")}
	imgs := s.tree.Images()
	s.imageHome = make([]int32, len(imgs))
	done := make([]bool, len(imgs))
	var of func(im *lineage.Image, depth int) int32
	of = func(im *lineage.Image, depth int) int32 {
		if done[im.Index] {
			return s.imageHome[im.Index]
		}
		h := int32(0)
		switch {
		case im.Exec != nil && im.Exec.Home() != "":
			h = s.homeIndex(im.Exec.Home())
		case im.Parent != nil && depth < len(imgs):
			h = of(im.Parent, depth+1)
		}
		done[im.Index], s.imageHome[im.Index] = true, h
		return h
	}
	for _, im := range imgs {
		of(im, 0)
	}
	// The machine's account homes: "~/" is any account's home, whatever
	// HOME the reader had. /root and /home/NAME count already. They come
	// after the HOMEs (ownHomes): the workspace is found among those
	// only, so a project that is an account's home (useradd -d /app app)
	// is still the workspace, and its files are not that account's "~/".
	s.ownHomes = len(s.homes)
	for _, h := range s.in.Meta.Homes {
		h = path.Clean(h)
		if h == "/root" || path.Dir(h) == "/home" {
			continue
		}
		if i := s.homeIndex(h); i > 0 && !slices.Contains(s.accountHomes, i) {
			s.accountHomes = append(s.accountHomes, i)
		}
	}
	slices.SortStableFunc(s.accountHomes, func(a, b int32) int { return len(s.homes[b]) - len(s.homes[a]) })
}

// accountHome returns the index in homes of the account home the path
// with id lies in, 0 for none and for a path in the workspace.
func (s *facts) accountHome(id int32) int32 {
	if len(s.accountHomes) == 0 || id < 0 {
		return 0
	}
	if n, ok := s.accountOf[id]; ok {
		return max(n, 0)
	}
	if s.accountOf == nil {
		s.accountOf = map[int32]int32{}
	}
	p := s.paths.strs[id]
	n := int32(-1)
	if s.inWorkspace(p) {
		s.accountOf[id] = n
		return 0
	}
	for _, h := range s.accountHomes {
		if strings.HasPrefix(p, s.homes[h]+"/") {
			n = h
			break
		}
	}
	s.accountOf[id] = n
	return max(n, 0)
}

// homeIndex returns the index in homes of home h, adding it if new; 0
// (the session's) for the session's own, "" and "/".
func (s *facts) homeIndex(h string) int32 {
	h = path.Clean(h)
	if h == "/" || h == "." || !path.IsAbs(h) {
		return 0
	}
	if i := slices.Index(s.homes, h); i >= 0 {
		return int32(i)
	}
	s.homes = append(s.homes, h)
	return int32(len(s.homes) - 1)
}

// homeOf returns the index in homes of the HOME e's process had.
func (s *facts) homeOf(e *event.Event) int32 {
	if im := s.tree.Image(e.ExecID); im != nil && im.Index < len(s.imageHome) {
		return s.imageHome[im.Index]
	}
	return 0
}

// programNames are the names of the program image id runs, for client
// lists and build tools: policy.ProgramName of the file the kernel
// executed, of the #! script it ran and of the script an interpreter was
// handed (node …/npm-cli.js is npm), each only when the file is
// installed; and the module `python -m` runs, unless the workspace holds
// a file of that name. argv[0] never counts (exec -a aws cat is cat), nor
// a script the session wrote or the workspace holds (aws.py is no aws).
// A fork child that has not exec'd runs its parent's program; one that
// exec'd is what it exec'd, whoever its parent was.
func (s *facts) programNames(id string) []string {
	im := s.tree.Image(id)
	if im == nil {
		return nil
	}
	if s.progNames == nil {
		s.progNames = make([][]string, len(s.tree.Images()))
	}
	if im.Index < len(s.progNames) && s.progNames[im.Index] != nil {
		return s.progNames[im.Index]
	}
	out := []string{}
	if e := s.tree.ExecOf(id); e != nil {
		out = s.execNames(e)
	} else if im.Comm != "" {
		out = []string{im.Comm} // no exec recorded: the kernel's comm is all there is
	}
	if im.Index < len(s.progNames) {
		s.progNames[im.Index] = out
	}
	return out
}

// processNames are the programNames of every image of the process
// image id belongs to: what the process ran, before and after each exec.
func (s *facts) processNames(id string) []string {
	im := s.tree.Image(id)
	if im == nil || im.Process == nil {
		return s.programNames(id)
	}
	var out []string
	for _, x := range im.Process.Images {
		for _, n := range s.programNames(x.ID) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// commandNames are the program names of the session's command (what run
// started, or the root attach and watch joined).
func (s *facts) commandNames() []string {
	if len(s.in.Meta.Command) == 0 {
		return nil
	}
	return policy.ProgramNames(s.in.Meta.Command[0], s.in.Meta.Command)
}

// execNames are programNames for exec e.
func (s *facts) execNames(e *event.Event) []string {
	var out []string
	add := func(file string) {
		if file == "" || !s.installed(file, e.Seq) {
			return
		}
		if n := policy.ProgramName(file); n != "" && n != "." && n != "/" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	add(e.Path)
	if len(e.Argv()) == 0 {
		return out
	}
	resolved := append([]string{e.Path}, e.Argv()[1:]...) // the program, not what argv[0] says
	switch {
	case e.Script() != "":
		add(e.Script())
	default:
		if sa := policy.ScriptArg(resolved); sa != "" {
			if !path.IsAbs(sa) {
				sa = path.Join(e.Cwd(), sa)
			}
			add(path.Clean(sa))
		}
	}
	if mod := pythonModule(resolved); mod != "" && !s.shadowed(mod, e.Cwd()) && !slices.Contains(out, mod) {
		out = append(out, mod)
	}
	return out
}

// pythonModule returns the module `python -m MOD` runs, "" for none.
func pythonModule(argv []string) string {
	if policy.ProgramName(argv[0]) != "python" {
		return ""
	}
	for i := 1; i+1 < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-m":
			return strings.SplitN(argv[i+1], ".", 2)[0]
		case a == "-c" || !strings.HasPrefix(a, "-"):
			return ""
		}
	}
	return ""
}

// shadowed reports whether the session names a file or package of module
// mod in cwd or the workspace, which `python -m mod` would run instead of
// the installed one.
func (s *facts) shadowed(mod, cwd string) bool {
	for _, d := range append([]string{cwd}, s.workspace...) {
		if d == "" {
			continue
		}
		if s.pathID(path.Join(d, mod+".py")) >= 0 || s.pathID(path.Join(d, mod, "__main__.py")) >= 0 {
			return true
		}
	}
	return false
}

// tempRoots hold scratch files outside any workspace.
var tempRoots = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/user"}

// temporary reports whether p is in a temporary directory and not in the
// workspace, nor in a home a process of the session had: a home is a
// home wherever it lies (CI runners and sandboxes put HOME under /tmp),
// and what is planted there runs for its user like any other.
func (s *facts) temporary(p string) bool {
	for _, r := range tempRoots {
		if under(p, r) {
			return !s.inWorkspace(p) && !s.inHome(p)
		}
	}
	return false
}

// inHome reports whether p is in one of the homes the session's
// processes had.
func (s *facts) inHome(p string) bool {
	for _, h := range s.homes {
		if h != "" && h != "/" && !slices.Contains(tempRoots, h) && under(p, h) {
			return true // an account whose home is /tmp itself makes no scratch file a home's
		}
	}
	return false
}

// installed reports whether file was on the system before the program
// exec'd at seq ran it: an absolute path outside temporary directories
// and the workspace, that the session had not written before seq.
func (s *facts) installed(file string, seq uint64) bool {
	if !path.IsAbs(file) || s.inWorkspace(file) {
		return false
	}
	for _, r := range tempRoots {
		if under(file, r) {
			return false
		}
	}
	if id := s.pathID(file); id >= 0 {
		if at, ok := s.writtenAt[id]; ok && at < seq {
			return false
		}
	}
	return true
}

// learnWorkspace finds the workspace: the session's cwd, the git top
// level above it (the nearest directory whose .git the session opened),
// and each directory the agent's own write and edit tools wrote into,
// but for caches, temporary roots, homes and their dot-directories.
// (The file system is not asked: the session may be read elsewhere.)
func (s *facts) learnWorkspace() {
	cwd := ""
	if c := s.in.Meta.Cwd; path.IsAbs(c) {
		cwd = path.Clean(c)
	}
	s.addWorkspace(cwd)
	top := ""
	for _, p := range s.paths.strs {
		dir, _, ok := strings.Cut(p, "/.git/")
		if !ok {
			dir, ok = strings.CutSuffix(p, "/.git")
		}
		if ok && cwd != "" && under(cwd, dir) && len(dir) > len(top) {
			top = dir
		}
	}
	s.addWorkspace(top)
	if s.attr == nil {
		return
	}
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.written < 0 {
			continue
		}
		if at, ok := s.attr.get(s.events[i].Seq); ok && at.ToolCallID != "" && at.Reason == correlate.ReasonInProcess {
			s.addWorkspace(path.Dir(s.paths.strs[f.written]))
		}
	}
}

// addWorkspace adds directory d to the workspace unless it is no
// project's: "/", a temporary or system root, a home or inside a home's
// dot-directory, or a cache the policy names (node_modules, .git).
func (s *facts) addWorkspace(d string) {
	if d == "" || d == "/" || !path.IsAbs(d) {
		return
	}
	for _, r := range append(slices.Clone(tempRoots), "/home", "/root", "/usr", "/etc", "/proc", "/sys", "/dev", "/run", "/var", "/opt", "/srv", "/mnt") {
		if d == r {
			return
		}
	}
	for _, r := range []string{"/usr/", "/etc/", "/proc/", "/sys/", "/dev/", "/run/", "/var/cache/", "/var/lib/", "/var/log/"} {
		if strings.HasPrefix(d, r) {
			return
		}
	}
	if h, ok := homeRoot(d, s.homes[:s.ownHomes]); ok {
		if d == h {
			return
		}
		if rest := strings.TrimPrefix(d, h+"/"); strings.HasPrefix(rest, ".") {
			return // ~/.cache/…, ~/.claude/…
		}
	}
	if s.pol.Noise(strings.TrimPrefix(d, "/")+"/x", "") {
		return // a cache the policy names at any depth
	}
	for _, w := range s.workspace {
		if under(d, w) {
			return
		}
	}
	s.workspace = slices.DeleteFunc(s.workspace, func(w string) bool { return under(w, d) })
	s.workspace = append(s.workspace, d)
}

// homeRoot returns the home d lies in (or is): /root, /home/NAME or one of
// homes.
func homeRoot(d string, homes []string) (string, bool) {
	for _, h := range homes {
		if h != "" && under(d, h) {
			return h, true
		}
	}
	switch {
	case under(d, "/root"):
		return "/root", true
	case strings.HasPrefix(d, "/home/"):
		name, _, _ := strings.Cut(d[len("/home/"):], "/")
		return "/home/" + name, true
	}
	return "", false
}

// workspaceOf returns the workspace directory p is in, "" for none.
func (s *facts) workspaceOf(p string) string {
	for _, w := range s.workspace {
		if under(p, w) {
			return w
		}
	}
	return ""
}

// inWorkspace reports whether p is in the workspace.
func (s *facts) inWorkspace(p string) bool { return s.workspaceOf(p) != "" }

// noise is the noise path list: the policy's outside the workspace; inside
// it only what the policy names at any depth (caches, lock files, VCS
// internals), read relative to the workspace, so that a project under
// /tmp or in a dot-directory is not scratch.
func (s *facts) noise(p, home string) bool {
	if w := s.workspaceOf(p); w != "" {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, w), "/")
		return rel != "" && s.pol.Noise(rel, "")
	}
	return s.pol.Noise(p, home)
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	if dir == "" {
		return false
	}
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
