package policy

import (
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Path patterns
//
// A path pattern is a glob over absolute paths: `*` matches within one
// component, `**` any number of components, `?` one character. `~/` stands
// for any home directory: the session's recorded home, /root and every
// /home/NAME here; the rules (internal/detect) also read it as each
// process's own HOME and every account's home (the session's homes). A
// pattern that starts with neither `/` nor `~/` matches at
// any depth (`.env` is `**/.env`). A leading `!` excludes what it matches
// from the whole list, wherever it stands.

// pathPattern is one compiled glob, with literal text every match of it
// holds. A session names thousands of distinct paths and most fail every
// pattern on its first or last bytes, or lack a name it needs
// ("node_modules/"): those checks spare the regexp, which is what costs.
type pathPattern struct {
	src string
	re  *regexp.Regexp
	// prefix and suffix are ASCII text every match starts and ends with,
	// and inner the longest run of it between two wildcards; exact means
	// the pattern has no wildcard and matches prefix alone.
	prefix, suffix, inner string
	exact                 bool
}

func compileGlob(p string) (*pathPattern, error) {
	src := p
	if p == "" {
		return nil, fmt.Errorf("empty path pattern")
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "**/") {
		p = "**/" + p
	}
	var b strings.Builder
	// lit is the literal run since the last wildcard; prefix is set at the
	// first wildcard. A non-ASCII byte ends a run as a wildcard does: the
	// regexp compares runes, and an invalid byte in a path reads as
	// U+FFFD, so only ASCII compares the same byte for byte.
	var lit strings.Builder
	prefix, inner, wild := "", "", false
	cut := func() {
		switch {
		case !wild:
			prefix, wild = lit.String(), true
		case lit.Len() > len(inner):
			inner = lit.String()
		}
		lit.Reset()
	}
	b.WriteString("^")
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], "**/"):
			b.WriteString(`(?:[^/]*/)*`)
			cut()
			i += 3
		case strings.HasPrefix(p[i:], "/**") && i+3 == len(p):
			b.WriteString(`/.+`) // what is inside, not the directory itself
			lit.WriteByte('/')
			cut()
			i += 3
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(`.*`)
			cut()
			i += 2
		case p[i] == '*':
			b.WriteString(`[^/]*`)
			cut()
			i++
		case p[i] == '?':
			b.WriteString(`[^/]`)
			cut()
			i++
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			if p[i] < 0x80 {
				lit.WriteByte(p[i])
			} else {
				cut()
			}
			i++
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("path pattern %q: %w", src, err)
	}
	pp := &pathPattern{src: src, re: re}
	if wild {
		pp.prefix, pp.suffix, pp.inner = prefix, lit.String(), inner
	} else {
		pp.prefix, pp.exact = lit.String(), true
	}
	return pp, nil
}

// match reports whether the glob matches s.
func (pp *pathPattern) match(s string) bool {
	if pp.exact {
		return s == pp.prefix
	}
	// Between the prefix and the suffix stands at least one wildcard: they
	// cannot overlap.
	if len(s) < len(pp.prefix)+len(pp.suffix) || !strings.HasPrefix(s, pp.prefix) || !strings.HasSuffix(s, pp.suffix) ||
		!strings.Contains(s, pp.inner) {
		return false
	}
	return pp.re.MatchString(s)
}

// homeForm rewrites a path under a home directory (home, /root, or
// /home/NAME) to the "~/" form the patterns use. ok is false for a path
// under no home.
func homeForm(p, home string) (string, bool) {
	home = strings.TrimRight(home, "/")
	switch {
	case home != "" && strings.HasPrefix(p, home+"/"):
		return "~/" + p[len(home)+1:], true
	case strings.HasPrefix(p, "/root/"):
		return "~/" + p[len("/root/"):], true
	case strings.HasPrefix(p, "/home/"):
		rest := p[len("/home/"):]
		if i := strings.IndexByte(rest, '/'); i > 0 {
			return "~/" + rest[i+1:], true
		}
	}
	return p, false
}

// PathRule is one entry of a path list in the policy: a pattern, the
// programs whose access to it is expected (its own clients: npm for
// ~/.npmrc, ssh for ~/.ssh/id_*), and a severity for a match, which
// overrides the rule's default.
//
// In the policy file an entry is either the pattern alone or a mapping
// with these keys.
type PathRule struct {
	Path     string   `yaml:"path" json:"path"`
	Clients  []string `yaml:"clients,omitempty" json:"clients,omitempty"`
	Severity string   `yaml:"severity,omitempty" json:"severity,omitempty"`
}

// UnmarshalYAML accepts a bare pattern or a mapping.
func (r *PathRule) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		*r = PathRule{Path: s}
		return nil
	}
	type plain PathRule
	var p plain
	if err := unmarshal(&p); err != nil {
		return err
	}
	*r = PathRule(p)
	return nil
}

// PathSet is a compiled list of PathRules. The first matching entry wins;
// an entry whose pattern starts with "!" excludes its matches from the
// whole set.
type PathSet struct {
	rules    []PathRule
	include  []*pathPattern
	idx      []int // include[i] belongs to rules[idx[i]]
	excludes []*pathPattern
}

func compilePathSet(rules []PathRule) (*PathSet, error) {
	s := &PathSet{rules: rules}
	for i, r := range rules {
		if r.Severity != "" && !ValidSeverity(r.Severity) {
			return nil, fmt.Errorf("path %q: %w %q", r.Path, ErrBadSeverity, r.Severity)
		}
		if neg, ok := strings.CutPrefix(r.Path, "!"); ok {
			p, err := compileGlob(neg)
			if err != nil {
				return nil, err
			}
			s.excludes = append(s.excludes, p)
			continue
		}
		p, err := compileGlob(r.Path)
		if err != nil {
			return nil, err
		}
		s.include = append(s.include, p)
		s.idx = append(s.idx, i)
	}
	return s, nil
}

// Match returns the entry matching the absolute path p, home being the
// session's home directory ("" when unknown).
func (s *PathSet) Match(p, home string) (PathRule, bool) {
	if s == nil || p == "" {
		return PathRule{}, false
	}
	h, hasHome := homeForm(p, home)
	for _, x := range s.excludes {
		if x.match(p) || hasHome && x.match(h) {
			return PathRule{}, false
		}
	}
	for i, in := range s.include {
		if in.match(p) || hasHome && in.match(h) {
			return s.rules[s.idx[i]], true
		}
	}
	return PathRule{}, false
}

// Has reports whether p matches.
func (s *PathSet) Has(p, home string) bool {
	_, ok := s.Match(p, home)
	return ok
}

// IsClient reports whether any of names (a process's program names) is
// one of the rule's expected clients.
func (r PathRule) IsClient(names []string) bool {
	for _, c := range r.Clients {
		for _, n := range names {
			if ok, _ := path.Match(c, n); ok {
				return true
			}
		}
	}
	return false
}

// Egress destinations
//
// An egress entry names a destination: a host name (`api.anthropic.com`,
// `*.googleapis.com` for any subdomain, `*` within one label), an IP
// address or CIDR prefix, each optionally with `:PORT` (IPv6 in brackets:
// `[::1]:8080`, `[fd00::/8]:443`). Without a port, every port matches.

type hostRule struct {
	src    string
	name   *regexp.Regexp // nil for an address rule
	prefix netip.Prefix
	port   uint16 // 0: any
}

func parseHostRule(s string) (hostRule, error) {
	r := hostRule{src: s}
	host, port := strings.TrimSpace(s), ""
	switch {
	case host == "":
		return r, fmt.Errorf("empty egress entry")
	case strings.HasPrefix(host, "["):
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return r, fmt.Errorf("egress entry %q: missing ]", s)
		}
		rest := host[end+1:]
		host = host[1:end]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return r, fmt.Errorf("egress entry %q: expected :PORT after ]", s)
			}
			port = p
		}
	case strings.Count(host, ":") == 1:
		host, port, _ = strings.Cut(host, ":")
	}
	if port != "" && port != "*" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return r, fmt.Errorf("egress entry %q: bad port %q", s, port)
		}
		r.port = uint16(n)
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		r.prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		r.prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	re, err := hostGlob(host)
	if err != nil {
		return r, fmt.Errorf("egress entry %q: %w", s, err)
	}
	r.name = re
	return r, nil
}

var reHostChars = regexp.MustCompile(`^[a-zA-Z0-9*_.-]+$`)

// hostGlob compiles a host name pattern: "*." at the start matches one or
// more labels, any other "*" matches within a label.
func hostGlob(h string) (*regexp.Regexp, error) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if !reHostChars.MatchString(h) {
		return nil, fmt.Errorf("not a host name, address or CIDR")
	}
	var b strings.Builder
	b.WriteString("^")
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		b.WriteString(`(?:[^.]+\.)+`)
		h = rest
	}
	for _, c := range h {
		if c == '*' {
			b.WriteString(`[^.]*`)
		} else {
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

func (r hostRule) match(host string, addr netip.Addr, port uint16) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	if r.name != nil {
		return host != "" && r.name.MatchString(host)
	}
	return addr.IsValid() && r.prefix.Contains(addr)
}

func compileHostRules(list []string) ([]hostRule, error) {
	out := make([]hostRule, 0, len(list))
	for _, s := range list {
		r, err := parseHostRule(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func matchHosts(rules []hostRule, host, addr string, port uint16) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	a, err := netip.ParseAddr(addr)
	if err == nil {
		a = a.Unmap()
	}
	for _, r := range rules {
		if r.match(host, a, port) {
			return true
		}
	}
	return false
}
