package correlate

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
)

// KnownAPIHosts are the model API hosts of the agents polygraph knows,
// from their profiles (agent.ModelAPIHosts). A name matches itself and its
// subdomains (and, for Vertex AI, its regional "<region>-aiplatform"
// names).
var KnownAPIHosts = agent.ModelAPIHosts()

// apiSet recognises the agent's model API endpoints.
type apiSet struct {
	hostPort map[string]bool // "host:port" (host a name or an address)
	anyPort  map[string]bool // host or address, any port
	suffixes []string
	names    map[string]bool // every host or address given, whatever the port (for DNS)
	learned  []string        // addresses learnDominant took for the API
}

func newAPISet(endpoints []string) *apiSet {
	s := &apiSet{hostPort: map[string]bool{}, anyPort: map[string]bool{}, names: map[string]bool{}, suffixes: KnownAPIHosts}
	for _, ep := range endpoints {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		if strings.Contains(ep, "://") {
			u, err := url.Parse(ep)
			if err != nil || u.Hostname() == "" {
				continue
			}
			port := u.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}[u.Scheme]
			}
			s.add(u.Hostname(), port)
			continue
		}
		if h, p, err := net.SplitHostPort(ep); err == nil {
			s.add(h, p)
			continue
		}
		s.add(strings.Trim(ep, "[]"), "")
	}
	return s
}

func (s *apiSet) add(host, port string) {
	host = strings.ToLower(host)
	s.names[host] = true
	if port == "" {
		s.anyPort[host] = true
		return
	}
	s.hostPort[net.JoinHostPort(host, port)] = true
}

// hostMatches reports whether name is one of the API names.
func (s *apiSet) hostMatches(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" {
		return false
	}
	if s.anyPort[name] {
		return true
	}
	for _, h := range s.suffixes {
		if name == h || strings.HasSuffix(name, "."+h) || strings.HasSuffix(name, "-"+h) {
			return true
		}
	}
	return false
}

// peer reports whether a connect/net/accept event's peer is the API.
func (s *apiSet) peer(e *event.Event) bool {
	if e.Family() == "unix" || e.Addr() == "" {
		return false
	}
	port := strconv.Itoa(int(e.Port()))
	for _, h := range []string{strings.ToLower(e.Addr()), strings.ToLower(e.Host())} {
		if h == "" {
			continue
		}
		if s.hostPort[net.JoinHostPort(h, port)] || s.hostMatches(h) {
			return true
		}
	}
	return false
}

// dns reports whether a DNS query is for the API.
func (s *apiSet) dns(e *event.Event) bool {
	if s.hostMatches(e.QName()) || s.names[strings.ToLower(strings.TrimSuffix(e.QName(), "."))] {
		return true
	}
	for _, a := range e.Answers() {
		a = strings.ToLower(a)
		if s.names[a] {
			return true
		}
		for _, l := range s.learned {
			if a == l {
				return true
			}
		}
	}
	return false
}

// learnDNS takes the addresses the agent's own DNS queries for an API
// name returned for API addresses too.
func (s *apiSet) learnDNS(agentEvents []*event.Event) {
	for _, e := range agentEvents {
		if e.Kind != event.KindDNS || !s.dns(e) {
			continue
		}
		for _, a := range e.Answers() {
			if ip := net.ParseIP(a); ip != nil {
				s.names[ip.String()] = true
				s.anyPort[ip.String()] = true
			}
		}
	}
}

// learnDominant adds, when no connection of the agent's own processes
// reaches a known or configured API endpoint, the peer the agent exchanged
// the most bytes with among those it connected to before its first tool
// call (the first model request always comes first). That is the model
// API of an agent pointed at a custom base URL.
func (s *apiSet) learnDominant(agentEvents []*event.Event, firstCall time.Time) {
	for _, e := range agentEvents {
		if (e.Kind == event.KindConnect || e.Kind == event.KindNet) && s.peer(e) {
			return
		}
	}
	weight := map[string]uint64{}
	early := map[string]bool{}
	var order []string
	for _, e := range agentEvents {
		if e.Network == nil || e.Family() != "ipv4" && e.Family() != "ipv6" || e.Addr() == "" {
			continue
		}
		key := net.JoinHostPort(strings.ToLower(e.Addr()), strconv.Itoa(int(e.Port())))
		switch e.Kind {
		case event.KindConnect:
			if e.Result != nil && *e.Result < 0 && *e.Result != -115 { // -EINPROGRESS is a non-blocking connect under way
				continue
			}
			if _, ok := weight[key]; !ok {
				order = append(order, key)
			}
			weight[key]++
			if firstCall.IsZero() || e.TS.Before(firstCall) {
				early[key] = true
			}
		case event.KindNet:
			if _, ok := weight[key]; !ok {
				order = append(order, key)
			}
			weight[key] += e.BytesSent() + e.BytesRecv()
		}
	}
	best, bw := "", uint64(0)
	for _, k := range order {
		if !early[k] {
			continue
		}
		if weight[k] > bw {
			best, bw = k, weight[k]
		}
	}
	if best != "" {
		s.hostPort[best] = true
		if h, _, err := net.SplitHostPort(best); err == nil {
			s.learned = append(s.learned, h)
		}
	}
}
