// Package baseline learns how an agent usually behaves from its past
// sessions and says how a new session differs. A profile is kept per
// agent (its profile name in internal/agent, plus its version when the
// transcript gives one) and, within it, per tool kind (shell, read,
// write, fetch…, and "none" for what no tool call explains): the
// processes a call starts and how fast, the programs run, the
// directories read and written, the hosts contacted and the bytes sent to
// each, and the sensitive paths touched.
//
// Agents do not behave like people: they spawn many short single-command
// shells, so what counts as normal is learned from the agent's own
// sessions, never assumed. Rates are judged with the median and the
// median absolute deviation, which one odd session cannot drag, and
// nothing is judged before MinSessions sessions were learned.
// internal/detect observes sessions (detect.Observe) and raises
// baseline-deviation findings from Check; docs/baselines.md describes it.
package baseline

import (
	"maps"
	"slices"
	"time"
)

// MinSessions is how many sessions with calls of a kind a profile needs
// before Check judges that kind: fewer say too little about what usual is.
const MinSessions = 3

// KindNone is the tool kind of activity no tool call explains.
const KindNone = "none"

// Seen maps what a session did (a program, a directory, host:port) to the
// seqs of the first events that did it, for a finding's evidence.
type Seen map[string][]uint64

// maxSeqs bounds the evidence kept per entry of a Seen.
const maxSeqs = 8

// Add records seq under key.
func (s Seen) Add(key string, seq uint64) {
	if l := s[key]; len(l) < maxSeqs {
		s[key] = append(l, seq)
	}
}

// Sample is what one session did, as a baseline learns it. detect.Observe
// makes it.
type Sample struct {
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Version string `json:"version,omitempty"`
	// Kinds has the activity per tool kind.
	Kinds map[string]*Activity `json:"kinds"`
	// Unallowed are the destinations (host:port, or addr:port when the
	// name is unknown) the session's policy did not allow: what an
	// allowlist policy learned from the session must add.
	Unallowed Seen `json:"unallowed,omitempty"`
	// AgentShellPrograms are the programs the agent's own shells ran
	// (its shell snapshot, the startup files its shells read). A
	// baseline does not judge them; an allowlist policy learned from the
	// session allows them, because its tool calls' shells run the same
	// startup some of the time: Codex runs a command in a login shell
	// until its shell snapshot is ready, and the host's /etc/profile runs
	// id there as it does in the snapshot's own shell.
	AgentShellPrograms Seen `json:"agent_shell_programs,omitempty"`
}

// Activity is what the calls of one kind did in one session. Paths are
// normalised (Normalise): workspace-relative ./…, home-relative ~/….
type Activity struct {
	Calls int `json:"calls"`
	// Procs[i] is the processes (execs) the i-th call started; Burst[i]
	// the most it started within one second.
	Procs []int `json:"procs"`
	Burst []int `json:"burst"`
	// Programs are the programs run, by name.
	Programs Seen `json:"programs"`
	// Reads and Writes are the directories of the files read and
	// written, outside the system directories.
	Reads  Seen `json:"reads"`
	Writes Seen `json:"writes"`
	// Hosts are the destinations contacted, host:port; BytesOut the
	// bytes sent to each.
	Hosts    Seen              `json:"hosts"`
	BytesOut map[string]uint64 `json:"bytes_out"`
	// Sensitive are the credential paths (the policy's sensitive and
	// agent-config paths) read.
	Sensitive Seen `json:"sensitive"`
}

// NewActivity returns an empty Activity.
func NewActivity() *Activity {
	return &Activity{Programs: Seen{}, Reads: Seen{}, Writes: Seen{}, Hosts: Seen{}, BytesOut: map[string]uint64{}, Sensitive: Seen{}}
}

// Profile is what a baseline knows of one agent (and version).
type Profile struct {
	Agent   string `json:"agent"`
	Version string `json:"version,omitempty"`
	// Sessions are the ids of the sessions learned, in the order learned.
	Sessions []string  `json:"sessions"`
	Updated  time.Time `json:"updated"`
	// Kinds has what the sessions did, per tool kind.
	Kinds map[string]*KindProfile `json:"kinds"`
}

// KindProfile is what the calls of one kind did across the sessions
// learned.
type KindProfile struct {
	// Sessions counts the sessions with activity of this kind; Calls
	// their calls.
	Sessions int `json:"sessions"`
	Calls    int `json:"calls"`
	// MaxProcs and MaxBurst hold, per session, the most processes one
	// call started and the fastest burst of one call (execs in a second).
	// A session's busiest call is compared with other sessions' busiest
	// calls: a typical call says nothing about the one npm install.
	MaxProcs []float64 `json:"max_procs"`
	MaxBurst []float64 `json:"max_burst"`
	// Programs, Reads, Writes, Hosts and Sensitive count the sessions
	// that did each.
	Programs  map[string]int `json:"programs"`
	Reads     map[string]int `json:"reads"`
	Writes    map[string]int `json:"writes"`
	Hosts     map[string]int `json:"hosts"`
	Sensitive map[string]int `json:"sensitive"`
	// BytesOut holds, per host, the bytes each session that contacted it
	// sent.
	BytesOut map[string][]float64 `json:"bytes_out"`
}

func newKindProfile() *KindProfile {
	k := &KindProfile{}
	k.normalize()
	return k
}

// normalize gives k every map it lacks.
func (k *KindProfile) normalize() {
	for _, m := range []*map[string]int{&k.Programs, &k.Reads, &k.Writes, &k.Hosts, &k.Sensitive} {
		if *m == nil {
			*m = map[string]int{}
		}
	}
	if k.BytesOut == nil {
		k.BytesOut = map[string][]float64{}
	}
}

// Normalize makes a profile read from a file whole: a kind without its
// maps ({"kinds":{"shell":{}}}, or null) gets empty ones. A baseline file
// is a person's to edit, and sits in a directory anything they run can
// write; one such file once made baseline learn panic (assignment to
// entry in nil map).
func (p *Profile) Normalize() {
	if p.Kinds == nil {
		p.Kinds = map[string]*KindProfile{}
	}
	for kind, k := range p.Kinds {
		if k == nil {
			k = &KindProfile{}
			p.Kinds[kind] = k
		}
		k.normalize()
	}
}

// Key names the profile of agent and version: "agent@version", or the
// agent alone when the version is unknown.
func Key(agent, version string) string {
	if version == "" {
		return agent
	}
	return agent + "@" + version
}

// Key is the profile's Key.
func (p *Profile) Key() string { return Key(p.Agent, p.Version) }

// Learned reports whether the profile has learned session id.
func (p *Profile) Learned(id string) bool { return id != "" && slices.Contains(p.Sessions, id) }

// Add learns sample s into p. It returns false, changing nothing, when p
// has learned that session already.
func (p *Profile) Add(s *Sample, now time.Time) bool {
	if p.Learned(s.Session) {
		return false
	}
	p.Sessions = append(p.Sessions, s.Session)
	p.Updated = now
	p.Normalize()
	for _, kind := range slices.Sorted(maps.Keys(s.Kinds)) {
		a := s.Kinds[kind]
		if a == nil {
			continue
		}
		k := p.Kinds[kind]
		if k == nil {
			k = newKindProfile()
			p.Kinds[kind] = k
		}
		k.Sessions++
		k.Calls += a.Calls
		if len(a.Procs) > 0 {
			k.MaxProcs = append(k.MaxProcs, float64(slices.Max(a.Procs)))
			k.MaxBurst = append(k.MaxBurst, float64(slices.Max(a.Burst)))
		}
		count := func(dst map[string]int, src Seen) {
			for key := range src {
				dst[key]++
			}
		}
		count(k.Programs, a.Programs)
		count(k.Reads, a.Reads)
		count(k.Writes, a.Writes)
		count(k.Hosts, a.Hosts)
		count(k.Sensitive, a.Sensitive)
		for h, n := range a.BytesOut {
			k.BytesOut[h] = append(k.BytesOut[h], float64(n))
		}
	}
	return true
}
