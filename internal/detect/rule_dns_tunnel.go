package detect

import (
	"fmt"
	"math"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:       "dns-tunnel",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindDNS},
		Summary:  "DNS queries shaped like data: long or random-looking labels, or many unique names under one domain",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1071.004", "T1048"}, ATLAS: []string{"AML.T0086"},
			OWASPLLM: []string{"LLM02", "LLM06"}, SAIF: []string{saifSensitive}},
		Needs: []string{"sensitive-read", "agent-config-read"},
		check: dnsTunnel,
	})
}

// The shapes of a tunnel: a label this long is data; so is a shorter one
// that looks encoded; this many distinct names under one domain are a
// channel, not lookups.
const (
	tunnelLabelLong   = 50
	tunnelLabelCoded  = 24
	tunnelUniqueNames = 30
)

// dnsTunnel is the dns-tunnel rule: the DNS queries of each actor, by the
// domain they are under.
func dnsTunnel(s *run) []Finding {
	type group struct {
		parent, who, call string
		names             map[string]bool
		procs             map[uint32]bool
		coded             []string
		seqs              []uint64
		afterSecret       bool
	}
	secretAt, secret := firstSecretRead(s.needs)
	var order []string
	m := map[string]*group{}
	for i := range s.events {
		e := s.events[i]
		if e.Kind != event.KindDNS || e.QName() == "" || strings.EqualFold(e.QType(), "PTR") {
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(e.QName(), "."))
		if strings.HasSuffix(name, ".arpa") {
			continue
		}
		// A tunnel is often one process per query (a shell loop of
		// lookups): group by tool call, and everything no call explains
		// together.
		parent := parentDomain(name)
		call := s.callOf(e)
		key := call + "\x00" + parent
		g := m[key]
		if g == nil {
			_, who := s.actor(e)
			g = &group{parent: parent, who: who, call: call, names: map[string]bool{}, procs: map[uint32]bool{}}
			m[key] = g
			order = append(order, key)
		}
		g.procs[e.PID] = true
		after := secret && secretAt < e.Seq
		if !g.names[name] {
			g.names[name] = true
			sub := strings.TrimSuffix(name, parent)
			// After a secret read, a name outside the allowlist whose
			// labels hold enough letters to carry a piece of it is data,
			// however plain its words look.
			if codedName(sub) || after && carries(sub) && !s.pol.AllowEgress(name, "", 443) {
				g.coded = append(g.coded, name)
				g.seqs = append(g.seqs, e.Seq)
			} else if len(g.seqs) < 20 {
				g.seqs = append(g.seqs, e.Seq)
			}
		}
		if after {
			g.afterSecret = true
		}
	}
	var out []Finding
	for _, k := range order {
		g := m[k]
		many := len(g.names) >= tunnelUniqueNames
		if len(g.coded) == 0 && !many {
			continue
		}
		sev := SeverityMedium
		if len(g.coded) >= 3 || many && len(g.coded) > 0 || g.afterSecret {
			sev = SeverityHigh
		}
		var why []string
		if len(g.coded) > 0 {
			why = append(why, fmt.Sprintf("%s with labels that look like encoded data (%s)",
				plural(len(g.coded), "name", "names"), list(g.coded, 3)))
		}
		if many {
			why = append(why, fmt.Sprintf("%d distinct names under it", len(g.names)))
		}
		who := g.who
		if n := len(g.procs); n > 1 {
			who += fmt.Sprintf(" and %d more processes", n-1)
		}
		detail := fmt.Sprintf("%s queried %s: %s.", who, g.parent, strings.Join(why, "; "))
		if g.afterSecret {
			detail += " A credential or agent configuration was read earlier in the session (see the sensitive-read / agent-config-read findings)."
		}
		out = append(out, s.finding(sev, "DNS queries shaped like a tunnel: "+g.parent, detail, g.call, capped(g.seqs, 30), false))
	}
	return out
}

// tunnelCarry is a label's length that carries a piece of a secret (a
// 16-byte chunk, as words or as hex).
const tunnelCarry = 16

// carries reports whether a label of sub (a name's part below its
// domain) is tunnelCarry long or more, in one unbroken run: names people
// and load balancers make are hyphenated (internal-my-lb-1234567890).
func carries(sub string) bool {
	for _, l := range strings.Split(strings.Trim(sub, "."), ".") {
		if len(l) >= tunnelCarry && !strings.Contains(l, "-") {
			return true
		}
	}
	return false
}

// parentDomain is the registrable domain of name, roughly: its last two
// labels, or three under a two-letter country code's second level
// (example.co.uk).
func parentDomain(name string) string {
	labels := strings.Split(name, ".")
	n := 2
	if len(labels) >= 3 && len(labels[len(labels)-1]) == 2 && len(labels[len(labels)-2]) <= 3 {
		n = 3
	}
	if len(labels) <= n {
		return name
	}
	return strings.Join(labels[len(labels)-n:], ".")
}

// codedName reports whether the labels of sub (a name's part below its
// parent) carry data: one very long, or a long one without a separator
// that mixes digits into random-looking letters, as hex and base32 do.
func codedName(sub string) bool {
	for _, l := range strings.Split(strings.Trim(sub, "."), ".") {
		if len(l) >= tunnelLabelLong {
			return true
		}
		if len(l) < tunnelLabelCoded || strings.Contains(l, "-") {
			continue
		}
		digits := 0
		for _, c := range l {
			if c >= '0' && c <= '9' {
				digits++
			}
		}
		if float64(digits) >= 0.15*float64(len(l)) && entropy(l) >= 3.5 {
			return true
		}
	}
	return false
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}
