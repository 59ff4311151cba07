package detect

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Input is one session to check.
type Input struct {
	Events     []*event.Event
	Transcript *transcript.Transcript // nil when no transcript was found
	// Attribution is correlate's verdict on Events against Transcript; nil
	// when there is no transcript. The kernel-only rules then run with
	// every event "unattributed", and the rules that need a transcript
	// (claims, unattributed activity) do not run.
	Attribution *correlate.Result
	Meta        manifest.Meta
	// Leftovers are the processes of the tree still running when tracing
	// stopped (the session's list).
	Leftovers []manifest.Leftover
	Policy    *policy.Policy // nil: policy.Default()
	// Verdicts are the integrity verdicts on the execs' files, recorded
	// with the session (none for older sessions); the binary-modified and
	// untrusted-binary rules read them.
	Verdicts []integrity.Result
	// Baseline is the profile of the session's agent the
	// baseline-deviation rule judges it by; nil: no baseline.
	Baseline *baseline.Profile
	// Resolvers are the system's DNS servers (the nameservers of
	// /etc/resolv.conf, read when the session is analysed): port 53 is
	// allowed egress to them and to the local stubs only
	// (policy.AllowDNS). Hosts are /etc/hosts's names by address. Both
	// name what the kernel events cannot: ParseResolvConf and ParseHosts
	// read the files.
	Resolvers []string
	Hosts     map[string]string
	// Serial runs the rules one after another on the caller's goroutine:
	// the live analysis while the traced tree runs, which must not take a
	// second core from it (docs/bench.md). Else they run on every core.
	Serial bool
}

// Run applies every enabled rule and returns the findings sorted by
// severity (highest first), then by their first evidence seq, with ids
// F1…Fn in that order. A disabled rule does not run unless an enabled
// one Needs it.
func Run(in Input) []Finding {
	s := newFacts(in)
	var run []*Rule
	for _, r := range rules() {
		if s.pol.Enabled(r.ID) {
			run = append(run, r)
		}
	}
	found := runRules(s, run, in.Serial)
	var out []Finding
	for i, r := range run {
		override := Severity(s.pol.SeverityOverride(r.ID))
		for _, f := range found[i] {
			if override != "" && f.Severity != SeverityInfo {
				f.Severity = override
			}
			out = append(out, f)
		}
	}
	Sort(out)
	for i := range out {
		out[i].ID = fmt.Sprintf("F%d", i+1)
	}
	return out
}

// maxRuleWorkers bounds the goroutines runRules checks rules on.
const maxRuleWorkers = 4

// runRules checks the rules rs, and the rules they need, over s and
// returns each one's findings, in rs's order. Each rule is checked
// once, whichever rule needs it, and since the facts are read-only once
// built (their memos apart, which each goroutine keeps its own of:
// facts.forWorker), the rules run on every core: on a million events
// they are most of the analysis's time.
func runRules(s *facts, rs []*Rule, serial bool) [][]Finding {
	type result struct {
		once sync.Once
		fs   []Finding
	}
	results := map[string]*result{}
	var add func(r *Rule)
	add = func(r *Rule) {
		if results[r.ID] != nil {
			return
		}
		results[r.ID] = &result{}
		for _, id := range r.Needs {
			add(registry[id])
		}
	}
	for _, r := range rs {
		add(r)
	}
	var check func(f *facts, r *Rule) []Finding
	check = func(f *facts, r *Rule) []Finding {
		res := results[r.ID]
		res.once.Do(func() {
			needs := map[string][]Finding{}
			for _, id := range r.Needs {
				needs[id] = check(f, registry[id])
			}
			res.fs = r.check(&run{facts: f, rule: r, needs: needs})
		})
		return res.fs
	}
	workers := []*facts{s}
	for !serial && len(workers) < min(runtime.GOMAXPROCS(0), maxRuleWorkers, len(rs)) {
		workers = append(workers, s.forWorker())
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, f := range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(rs); i = int(next.Add(1) - 1) {
				check(f, rs[i])
			}
		})
	}
	wg.Wait()
	out := make([][]Finding, len(rs))
	for i, r := range rs {
		out[i] = results[r.ID].fs
	}
	return out
}

// Sort orders findings by severity (highest first), then first evidence
// seq (findings without evidence last), then rule and title. The order
// the rules ran in does not matter: findings of different rules differ in
// rule, and a rule's own keep their order.
func Sort(fs []Finding) {
	first := func(f Finding) uint64 {
		if len(f.Evidence) == 0 {
			return math.MaxUint64
		}
		return f.Evidence[0]
	}
	slices.SortStableFunc(fs, func(x, y Finding) int {
		return cmp.Or(
			cmp.Compare(y.Severity.Rank(), x.Severity.Rank()),
			cmp.Compare(first(x), first(y)),
			cmp.Compare(x.Rule, y.Rule),
			cmp.Compare(x.Title, y.Title),
		)
	})
}
