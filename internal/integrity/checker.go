package integrity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options configure a Checker. The zero value checks against dpkg only.
type Options struct {
	// Store holds the pins and first-seen hashes; nil skips both.
	Store *Store
	// Host keys the first-seen hashes; default os.Hostname().
	Host string
	// DpkgDir is dpkg's info directory; default DefaultDpkgDir. NoDpkg
	// skips the source.
	DpkgDir string
	NoDpkg  bool
	// Workspaces are the directories the agent works in (the traced
	// command's cwd, its repository root).
	Workspaces []string
	// TempDirs replace the temp directories (os.TempDir, /tmp, /var/tmp,
	// /dev/shm, /run/user) when set.
	TempDirs []string
	// PATH is searched for the tools a file may shadow: the traced
	// command's PATH, which under sudo is not ours; default $PATH.
	PATH string
	// CacheSize bounds the hash cache (files); default 4096.
	CacheSize int
	// MaxSize is the largest file hashed; default 1 GiB.
	MaxSize int64
	// Now stamps first sightings; default time.Now.
	Now func() time.Time
	// Session names the recorded session whose execs are checked, in the
	// taints it leaves (taint.go).
	Session string
}

// Checker judges execs. It is safe for concurrent use; the Pool runs it
// off the recorder's event path.
type Checker struct {
	opts  Options
	cache *hashCache
	dpkg  *dpkgIndex
	loc   *locator
	pins  map[string]Pin
	seen  map[string]Seen // the host's sightings before this session
	// taints are the trusted-source files a traced session rewrote that
	// still stand as it left them; pinTaint is the pin file's, when it is
	// one (its pins are then not used).
	taints   map[string]Taint
	pinTaint *Taint

	mu       sync.Mutex
	observed map[string]Seen    // sightings of this session, merged on Flush
	memo     map[string]Verdict // path+NUL+sha256 -> verdict, so one session judges a file one way
}

// New loads the pins and first-seen hashes; dpkg is read on first use
// (or ahead of it, WarmDpkg).
func New(opts Options) (*Checker, error) {
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.DpkgDir == "" {
		opts.DpkgDir = DefaultDpkgDir
	}
	if opts.PATH == "" {
		opts.PATH = os.Getenv("PATH")
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = 1 << 30
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Checker{
		opts:     opts,
		cache:    newHashCache(opts.CacheSize),
		loc:      newLocator(opts.Workspaces, opts.TempDirs, opts.PATH),
		observed: make(map[string]Seen),
		memo:     make(map[string]Verdict),
	}
	if !opts.NoDpkg {
		c.dpkg = sharedDpkgIndex(opts.DpkgDir)
	}
	if opts.Store != nil {
		var err error
		if c.pins, err = opts.Store.Pins(); err != nil {
			return nil, err
		}
		if c.seen, err = opts.Store.Seen(opts.Host); err != nil {
			return nil, err
		}
		if err := c.loadTaints(opts.Store); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Check judges one exec now, in the caller's goroutine. The recorder
// should use a Pool instead; Check is for tests and the command line.
func (c *Checker) Check(ctx context.Context, req Request) Result {
	return c.judge(ctx, c.open(req))
}

// Stats reports the hash cache's hits and misses so far.
func (c *Checker) Stats() Stats {
	return Stats{Hits: c.cache.hits.Load(), Misses: c.cache.misses.Load()}
}

// warmDpkg starts building the Checker's dpkg index in the background.
func (c *Checker) warmDpkg() {
	if c.dpkg != nil {
		c.dpkg.warm()
	}
}

// DpkgIndexTime is how long building the dpkg index took (0 before it
// was built; the index may have been built for an earlier Checker).
func (c *Checker) DpkgIndexTime() time.Duration {
	if c.dpkg == nil {
		return 0
	}
	return time.Duration(c.dpkg.buildNS.Load())
}

// Flush merges this session's sightings into the store's first-seen
// hashes. Call it when the recording ends; calling it again is harmless.
func (c *Checker) Flush() error {
	if c.opts.Store == nil {
		return nil
	}
	c.mu.Lock()
	obs := make(map[string]Seen, len(c.observed))
	for p, s := range c.observed {
		obs[p] = s
	}
	c.mu.Unlock()
	return c.opts.Store.MergeSeen(c.opts.Host, obs)
}

// opened is a request with its files open: the recorder's side of the
// work, done as the exec is seen so a file deleted a moment later can
// still be read.
type opened struct {
	req                Request
	bin, script        *os.File
	binVia             Via
	binErr, scriptErr  error
	scriptPath, interp string
}

func (c *Checker) open(req Request) *opened {
	o := &opened{req: req}
	o.bin, o.binVia, o.binErr = openImage(req.PID, req.Path)
	cwd := req.Cwd
	if cwd == "" {
		cwd = procCwd(req.PID)
	}
	if o.scriptPath = scriptOf(req, cwd); o.scriptPath != "" {
		o.interp = req.Path
		o.script, o.scriptErr = os.Open(o.scriptPath)
	}
	return o
}

func (o *opened) close() {
	if o.bin != nil {
		o.bin.Close()
	}
	if o.script != nil {
		o.script.Close()
	}
}

// judge hashes and judges the open files, and closes them.
func (c *Checker) judge(ctx context.Context, o *opened) Result {
	return c.judgeFiles(ctx, o, true)
}

// judgeFiles judges o's files; with read false it reads none of them (a
// verdict that would need an MD5 the cache lacks is unavailable).
func (c *Checker) judgeFiles(ctx context.Context, o *opened, read bool) Result {
	defer o.close()
	r := Result{ExecID: o.req.ExecID, PID: o.req.PID}
	r.Binary = c.verdict(ctx, RoleBinary, o.req.Path, o.bin, o.binVia, o.binErr, read)
	if o.scriptPath != "" {
		v := c.verdict(ctx, RoleScript, o.scriptPath, o.script, ViaPath, o.scriptErr, read)
		v.Interpreter = o.interp
		r.Script = &v
	}
	return r
}

// judgeCached judges o without reading any file, if every file it opened
// is in the hash cache; otherwise it leaves o open and returns false.
func (c *Checker) judgeCached(o *opened) (Result, bool) {
	// A file that failed to open needs no reading either.
	if o.binErr == nil {
		if _, ok := c.cache.cached(o.bin); !ok {
			return Result{}, false
		}
	}
	if o.script != nil {
		if _, ok := c.cache.cached(o.script); !ok {
			return Result{}, false
		}
	}
	return c.judgeFiles(context.Background(), o, false), true
}

// unavailable is the verdict on a file that could not be hashed.
func unavailable(role Role, path string, via Via, reason string) Verdict {
	return Verdict{Role: role, Path: path, Via: via, Status: Unavailable, Reason: reason}
}

func (c *Checker) verdict(ctx context.Context, role Role, path string, f *os.File, via Via, openErr error, read bool) Verdict {
	if openErr != nil {
		reason := "cannot open: " + openErr.Error()
		if errors.Is(openErr, os.ErrNotExist) {
			reason = "no such file when the exec was seen"
		}
		return unavailable(role, path, via, reason)
	}
	if err := ctx.Err(); err != nil {
		return unavailable(role, path, via, "recording ended before it was hashed")
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > c.opts.MaxSize {
		return unavailable(role, path, via, fmt.Sprintf("larger than %d bytes", c.opts.MaxSize))
	}
	d, err := c.cache.digest(ctx, f)
	if ctx.Err() != nil {
		return unavailable(role, path, via, "recording ended before it was hashed")
	}
	if err != nil {
		return unavailable(role, path, via, err.Error())
	}
	md5 := func() (string, error) {
		if !read {
			if sum, ok := c.cache.knownMD5(d); ok {
				return sum, nil
			}
			return "", errors.New("hash queue full: its MD5 was not read")
		}
		return c.cache.md5(ctx, f, d)
	}
	v := c.evaluate(path, d, md5)
	v.Role, v.Via = role, via
	return v
}

// evaluate asks the sources in order; the first that knows path decides.
// md5 gives the file's MD5 for the sources that list MD5s.
func (c *Checker) evaluate(path string, d digest, md5 func() (string, error)) Verdict {
	key := path + "\x00" + d.sha256
	c.mu.Lock()
	v, ok := c.memo[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = Verdict{Path: path, SHA256: d.sha256, Size: d.size}
	decided := c.byPin(&v) || c.byDpkg(&v, md5)
	if !decided {
		c.byFirstSeen(&v)
	}
	if v.Status != Verified {
		v.Location = c.loc.locate(path)
		c.byShadowed(&v, md5)
	}
	if v.Status == Unavailable {
		return v // not remembered: the next exec tries again
	}
	c.mu.Lock()
	if len(c.memo) >= 4*c.cache.max {
		clear(c.memo) // bounded like the hash cache; see hashCache
	}
	c.memo[key] = v
	c.mu.Unlock()
	return v
}

// loadTaints reads the store's taints, keeps those that still hold, and
// stops using the pin and first-seen files a traced session rewrote.
func (c *Checker) loadTaints(st *Store) error {
	all, err := st.Taints()
	if err != nil {
		return err
	}
	c.taints = map[string]Taint{}
	for p, t := range all {
		if t.holds(p) {
			c.taints[p] = t
		}
	}
	if t, ok := c.taints[filepath.Join(st.Dir, PinsFile)]; ok {
		c.pinTaint = &t
		slog.Warn("integrity: " + t.reason("the pin file "+filepath.Join(st.Dir, PinsFile)) + "; its pins are not used until `polygraph integrity pin` writes it again")
	}
	if t, ok := c.taints[filepath.Join(st.Dir, SeenFile)]; ok {
		c.seen = nil
		slog.Warn("integrity: " + t.reason("the first-seen file "+filepath.Join(st.Dir, SeenFile)) + "; earlier sightings are not used")
	}
	return nil
}

func (c *Checker) byPin(v *Verdict) bool {
	p, ok := c.pins[v.Path]
	if !ok {
		return false
	}
	if c.pinTaint != nil {
		v.Reason = c.pinTaint.reason("the pin file")
		return false
	}
	v.Source, v.Since = SourcePin, p.PinnedAt
	v.Status = Verified
	if p.SHA256 != v.SHA256 {
		v.Status, v.Expected, v.ExpectedAlgo = Modified, p.SHA256, "sha256"
	}
	return true
}

// byDpkg compares the MD5 dpkg lists. A path several packages list is
// verified when any of them lists this hash. A package that lists no MD5
// for the path (a conffile) leaves the decision to first-seen.
func (c *Checker) byDpkg(v *Verdict, md5 func() (string, error)) bool {
	if c.dpkg == nil {
		return false
	}
	pkgs, sums, ok := c.dpkg.lookup(v.Path)
	if !ok {
		return false
	}
	sum, err := md5()
	if err != nil {
		v.Status, v.Reason = Unavailable, err.Error()
		return true
	}
	v.Package, v.MD5 = pkgs[0], sum
	expected := ""
	for i, s := range sums {
		if s == sum {
			if t, ok := c.taints[filepath.Join(c.opts.DpkgDir, pkgs[i]+".md5sums")]; ok {
				v.Package, v.Reason = pkgs[i], t.reason("dpkg's checksums of "+pkgs[i])
				return false
			}
			v.Status, v.Source, v.Package = Verified, SourceDpkg, pkgs[i]
			return true
		}
		if s != "" && expected == "" {
			expected, v.Package = s, pkgs[i]
		}
	}
	if expected == "" {
		v.Reason = "dpkg lists no md5 for it"
		return false
	}
	v.Status, v.Source, v.Expected, v.ExpectedAlgo = Modified, SourceDpkg, expected, "md5"
	return true
}

// byShadowed judges an unknown file that shadows a file dpkg owns by
// that file's listing: a tool of the same name earlier in PATH is meant
// to pass for the packaged one, so an exact copy is verified and
// anything else is modified (the one-byte-changed `true`). Only
// files nothing else vouches for are judged so: a pinned or first-seen
// file keeps its own verdict.
func (c *Checker) byShadowed(v *Verdict, md5 func() (string, error)) {
	if v.Status != Unknown || v.Source != "" || c.dpkg == nil || v.Location == nil || v.Location.Shadows == "" {
		return
	}
	w := Verdict{Path: v.Location.Shadows}
	if !c.byDpkg(&w, md5) || w.Status == Unavailable {
		return
	}
	v.Status, v.Source, v.Package, v.MD5, v.Of = w.Status, w.Source, w.Package, w.MD5, w.Path
	v.Expected, v.ExpectedAlgo = w.Expected, w.ExpectedAlgo
	if v.Status == Verified {
		v.Location = nil
	}
}

// byFirstSeen compares with the hash this host last ran at the path, and
// records the sighting. Files in the workspace or a temp directory are
// left out: they are build outputs, rewritten by every build, and a
// changed hash there is not news.
func (c *Checker) byFirstSeen(v *Verdict) {
	v.Status = Unknown
	if c.opts.Store == nil || c.transient(v.Path) {
		return
	}
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	known, ok := c.observed[v.Path]
	if !ok {
		known, ok = c.seen[v.Path]
	}
	switch {
	case !ok:
		c.observed[v.Path] = Seen{FirstSHA256: v.SHA256, FirstSeen: now, SHA256: v.SHA256, Since: now}
	case known.SHA256 == v.SHA256:
		v.Status, v.Source, v.Since = Verified, SourceFirstSeen, known.Since
	default:
		v.Status, v.Source, v.Since = Modified, SourceFirstSeen, known.Since
		v.Expected, v.ExpectedAlgo = known.SHA256, "sha256"
		known.SHA256, known.Since = v.SHA256, now
		c.observed[v.Path] = known
		slog.Debug("integrity: hash changed since first seen", "path", v.Path, "was", v.Expected, "now", v.SHA256)
	}
}

func (c *Checker) transient(p string) bool {
	for _, w := range c.loc.workspaces {
		if under(p, w) {
			return true
		}
	}
	for _, t := range c.loc.temps {
		if under(p, t) {
			return true
		}
	}
	return false
}
