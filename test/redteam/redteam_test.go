//go:build linux

package redteam

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// parallel bounds the techniques run at once (the machine has two
// cores; a technique's runs are sequential).
const parallel = 2

// technique is one way to reach a planted secret, send it out or act
// through something polygraph does not trace.
type technique struct {
	name  string // <class>-<what>
	class string // a … g, the classes
	goal  string // what it achieves, in one line

	rootOnly string              // why it needs root: the user modes are n/a
	avail    func(*world) string // why it cannot run on this machine ("": it can)
	lock     string              // a system setting it changes: one run at a time
	sends    bool                // it sends the secret out: caught needs a high finding
	dns      string              // a DNS name its act asks for
	keyring  bool                // it reads a key of the kernel keyring
	icmp     bool                // it sends over ICMP
	resolver bool                // it sends DNS to the loopback resolver
	timeout  time.Duration       // of one run (default 60 s)

	setup  func(*run)       // plants secrets, starts helpers: before polygraph
	script string           // the tree's bash, after the prelude
	check  func(*run) error // did it reach its goal (read without polygraph)
	judge  func(*run, *analysis.Analysis, bool) verdict
}

// min is the lowest severity that catches the technique: medium, or high
// for one that sends a secret out (any egress is medium already; sending
// a secret is exfiltration).
func (tc *technique) min() detect.Severity {
	if tc.sends {
		return detect.SeverityHigh
	}
	return detect.SeverityMedium
}

// techniques are every technique of the matrix, in table order.
func techniques() []*technique {
	var all []*technique
	for _, set := range [][]*technique{edgeTechniques, nameTechniques, oracleTechniques,
		unlistedTechniques, verdictTechniques, evidenceTechniques} {
		all = append(all, set...)
	}
	return all
}

// row is one technique's line of the table.
type row struct {
	tech   *technique
	broken string
	cells  map[mode]verdict
}

// TestRedTeam runs every technique without polygraph (its own check must
// pass: otherwise the technique is broken and the test fails), then under
// `polygraph run` as root and as a local user, with and without
// --isolate, classifies each run and prints the table. With
// POLYGRAPH_REDTEAM_STRICT=1 every cell must be caught, blocked (and
// flagged) or n/a. POLYGRAPH_REDTEAM_ONLY=NAME,… runs only the techniques
// (or classes) named.
func TestRedTeam(t *testing.T) {
	if os.Getenv("POLYGRAPH_E2E") != "1" {
		t.Skip("the red-team matrix runs with POLYGRAPH_E2E=1 (make test sets it)")
	}
	testenv.RequireRoot(t)
	w := newWorld(t)
	strict := os.Getenv("POLYGRAPH_REDTEAM_STRICT") == "1"
	var only []string
	if s := os.Getenv("POLYGRAPH_REDTEAM_ONLY"); s != "" {
		only = strings.Split(s, ",")
	}

	var mu sync.Mutex
	var rows []*row
	slots := make(chan struct{}, parallel)
	start := time.Now()
	t.Run("technique", func(t *testing.T) {
		for _, tc := range techniques() {
			if only != nil && !slices.Contains(only, tc.name) && !slices.Contains(only, tc.class) {
				continue
			}
			rw := &row{tech: tc, cells: map[mode]verdict{}}
			mu.Lock()
			rows = append(rows, rw)
			mu.Unlock()
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				runTechnique(t, w, tc, rw)
				if strict {
					for _, m := range modes {
						if v := rw.cells[m]; !strictOK(v.cell) {
							t.Errorf("POLYGRAPH_REDTEAM_STRICT: %s as %s is %s: %s", tc.name, m, v.cell, v.note)
						}
					}
				}
			})
		}
	})
	printTable(rows, time.Since(start))
}

// runTechnique fills a row: the bare runs first, then the four modes.
func runTechnique(t *testing.T, w *world, tc *technique, rw *row) {
	na := func(m mode, why string) { rw.cells[m] = verdict{cell: cellNA, note: why} }
	if tc.avail != nil {
		if why := tc.avail(w); why != "" {
			for _, m := range modes {
				na(m, why)
			}
			return
		}
	}
	var acct *account
	if tc.rootOnly == "" {
		acct = w.newAccount(t)
	}
	for _, m := range []mode{{false, false}, {true, false}} {
		if m.user && acct == nil {
			continue
		}
		r := newRun(t, w, tc, m, false, acct)
		err := r.do()
		if err != nil && !errors.Is(err, errDelayed) {
			rw.broken = fmt.Sprintf("as %s without polygraph: %v", m, err)
			t.Errorf("%s is broken: %s\n%s", tc.name, rw.broken, r.out)
			for _, m := range modes {
				rw.cells[m] = verdict{cell: cellBroken, note: rw.broken}
			}
			r.close()
			return
		}
		r.close()
	}
	for _, m := range modes {
		if m.user && tc.rootOnly != "" {
			na(m, "needs root: "+tc.rootOnly)
			continue
		}
		r := newRun(t, w, tc, m, true, acct)
		v := r.judged()
		r.close()
		rw.cells[m] = v
		t.Logf("%s as %s (%s, %v): %s: %s", tc.name, m, r.id, r.took.Round(time.Millisecond), v.cell, v.note)
	}
}

// do sets the run up, runs the script and checks its goal.
func (r *run) do() error {
	if r.tech.lock != "" {
		l := r.w.lock(r.tech.lock)
		l.Lock()
		defer l.Unlock()
	}
	if r.tech.setup != nil {
		r.tech.setup(r)
	}
	timeout := r.tech.timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	r.exec(timeout)
	err := r.tech.check(r)
	if err != nil && r.exitErr != nil {
		err = fmt.Errorf("%w (the script: %v)", err, r.exitErr)
	}
	return err
}

// judged runs the technique under polygraph and judges the session.
func (r *run) judged() verdict {
	reachErr := r.do()
	path, err := session.Resolve(r.pghome, "last")
	if err != nil {
		return verdict{cell: cellError, note: fmt.Sprintf("no session (%v): %v; polygraph said: %s", r.exitErr, err, tailString(r.pgreport, 400))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, err := analysis.Analyze(ctx, analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	if err != nil {
		return verdict{cell: cellError, note: "analysis: " + err.Error()}
	}
	delayed := errors.Is(reachErr, errDelayed)
	v := judge(r, a, reachErr == nil || delayed)
	switch {
	case delayed:
		v.note = fmt.Sprintf("%v; %s", reachErr, v.note)
	case reachErr != nil:
		why := "goal not reached under polygraph"
		if !r.mode.isolate {
			why += " without --isolate"
		}
		v.note = fmt.Sprintf("%s (%v); %s", why, reachErr, v.note)
	}
	if r.w.keep {
		v.note += "; session " + path
	}
	return v
}

func tailString(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// printTable prints the table on stdout, each line led by "redteam" (the
// Makefile's test target shows them): a technique per line, a cell per
// mode, then the totals per mode and in all, and why cells are n/a.
func printTable(rows []*row, took time.Duration) {
	fmt.Printf("redteam %-28s %-5s", "technique", "class")
	for _, m := range modes {
		fmt.Printf(" %-19s", m)
	}
	fmt.Println()
	totals := map[mode]map[string]int{}
	all := map[string]int{}
	var na, broken []string
	met, cells := 0, 0
	for _, rw := range rows {
		fmt.Printf("redteam %-28s %-5s", rw.tech.name, rw.tech.class)
		naModes := map[string][]string{}
		for _, m := range modes {
			v, ok := rw.cells[m]
			if !ok {
				v = verdict{cell: cellError, note: "did not run (see the log)"}
			}
			fmt.Printf(" %-19s", v.cell)
			if totals[m] == nil {
				totals[m] = map[string]int{}
			}
			totals[m][v.cell]++
			all[v.cell]++
			cells++
			if strictOK(v.cell) {
				met++
			}
			if v.cell == cellNA {
				naModes[v.note] = append(naModes[v.note], m.String())
			}
		}
		fmt.Println()
		for why, ms := range naModes {
			na = append(na, fmt.Sprintf("%s (%s): %s", rw.tech.name, strings.Join(ms, ", "), why))
		}
		if rw.broken != "" {
			broken = append(broken, rw.tech.name+": "+rw.broken)
		}
	}
	count := func(c map[string]int) string {
		var parts []string
		for _, k := range cellOrder {
			if c[k] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
			}
		}
		return strings.Join(parts, ", ")
	}
	for _, m := range modes {
		fmt.Printf("redteam total %-13s %s\n", m.String()+":", count(totals[m]))
	}
	fmt.Printf("redteam total: %d techniques × %d modes = %d cells: %s; caught, blocked or n/a (the issue's goal) %d/%d; took %v\n",
		len(rows), len(modes), cells, count(all), met, cells, took.Round(time.Second))
	for _, s := range na {
		fmt.Printf("redteam n/a %s\n", s)
	}
	for _, s := range broken {
		fmt.Printf("redteam broken %s\n", s)
	}
}
