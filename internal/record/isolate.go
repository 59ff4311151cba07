package record

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/guard"
	"github.com/polygraph/polygraph/internal/policy"
)

// Isolation asks Record to run the command isolated (`run --isolate`,
// internal/guard): the credential stores masked, egress confined to the
// policy's allowlist, the policy's kill rules and exec gate enforced, the
// tree in its own PID namespace and its resources accounted and limited.
// Every refused attempt is still recorded; the session's metadata says
// what was enforced and refused (manifest.Isolation).
type Isolation struct {
	// Policy gives the egress allowlist, the kill rules and the exec
	// gate; nil is policy.Default().
	Policy *policy.Policy
	// MemoryMax (bytes) and PidsMax limit the tree when non-zero.
	MemoryMax, PidsMax int64
}

// masks returns the paths an isolated session hides under home and those
// it keeps: the credential stores and every agent's config stores but
// own's, which stays readable so the agent can still log in. own is nil
// when the command is no agent polygraph knows.
func masks(home string, own *agent.Profile) (mask, keep []string) {
	mask = guard.CredentialPaths(home)
	for _, p := range agent.All() {
		paths := agentStores(home, p)
		if p == own {
			keep = append(keep, paths...)
		} else {
			mask = append(mask, paths...)
		}
	}
	return mask, keep
}

// agentStores are an agent's config directories under home and its
// credential files that name one path (no patterns, no exemptions).
func agentStores(home string, p *agent.Profile) []string {
	var out []string
	for _, d := range p.ConfigDirs {
		out = append(out, filepath.Join(home, d))
	}
	for _, f := range p.Credentials {
		rel, ok := strings.CutPrefix(f.Path, "~/")
		if !ok || strings.ContainsAny(rel, "*?[!") {
			continue
		}
		if p := filepath.Join(home, rel); !slices.ContainsFunc(out, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") }) {
			out = append(out, p)
		}
	}
	return out
}

// egressEntry is one policy egress entry as guard can enforce it: an
// address with a port (0: any), or a host name with its ports. ok is
// false for what the kernel side cannot follow: prefixes wider than one
// address and names with wildcards.
func egressEntry(s string) (ep guard.Endpoint, name string, ok bool) {
	host, port := strings.TrimSpace(s), ""
	switch {
	case strings.HasPrefix(host, "["):
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return ep, "", false
		}
		host, port = host[1:end], strings.TrimPrefix(host[end+1:], ":")
	case strings.Count(host, ":") == 1:
		host, port, _ = strings.Cut(host, ":")
	}
	if port != "" && port != "*" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return ep, "", false
		}
		ep.Port = uint16(n)
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		if !p.IsSingleIP() {
			return ep, "", false
		}
		host = p.Addr().String()
	}
	if a, err := netip.ParseAddr(host); err == nil {
		ep.Addr = a.Unmap()
		return ep, "", true
	}
	if host == "" || strings.Contains(host, "*") {
		return ep, "", false
	}
	return ep, strings.ToLower(strings.TrimSuffix(host, ".")), true
}

// endpointEntries are the host:port entries of the model endpoints the
// agent was pointed at in env (ANTHROPIC_BASE_URL=http://127.0.0.1:8080):
// its own model traffic, allowed even on loopback.
func endpointEntries(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(policy.AgentEndpointVars, k) {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[bool]string{true: "80", false: "443"}[u.Scheme == "http"]
		}
		out = append(out, net.JoinHostPort(u.Hostname(), port))
	}
	return out
}

// resolvers are the name servers of /etc/resolv.conf (the tree's), which
// the allowlist has to let DNS reach.
func resolvers(conf string) []netip.Addr {
	b, err := os.ReadFile(conf)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// expandHome puts home in for a leading "~/".
func expandHome(paths []string, home string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if rel, ok := strings.CutPrefix(p, "~/"); ok {
			p = filepath.Join(home, rel)
		}
		out[i] = p
	}
	return out
}
