package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/internal/transcript"
	"github.com/polygraph/polygraph/test/fakellm"
)

// attrMinimum is the precision and recall below which TestAttribution fails.
const attrMinimum = 99.0

// attrScenario is the script TestAttribution plays: every path and command
// of call N carries the marker pgcallNN, so the ground truth of which
// events belong to which call is known by construction. Call 06 leaves a
// process behind (in its own session, so no agent's process-group kill
// reaches it) that writes after the call returned; calls 07-09 run in one
// turn, in parallel where the agent allows, as do 12 and 13; call 10 quotes
// both ways and names a file with a space; call 11 runs an interpreter and
// fails to find a file.
func attrScenario() fakellm.Scenario {
	return fakellm.Scenario{Turns: []fakellm.Turn{
		{Text: "Setting up.", Calls: []fakellm.Call{fakellm.Shell{Command: "mkdir pgcall01 && echo one > pgcall01/out.txt && cat pgcall01/out.txt"}}},
		{Calls: []fakellm.Call{fakellm.WriteFile{Path: "pgcall02.txt", Content: "two\n"}}},
		{Calls: []fakellm.Call{fakellm.ReadFile{Path: "pgcall03.txt"}}},
		{Calls: []fakellm.Call{fakellm.EditFile{Path: "pgcall04.txt", Old: "four", New: "FOUR"}}},
		{Calls: []fakellm.Call{fakellm.Shell{Command: `sh -c 'echo five > pgcall05.txt; cat pgcall05.txt | wc -c > pgcall05-count.txt'`}}},
		{Calls: []fakellm.Call{fakellm.Shell{Command: `setsid sh -c 'sleep 2; echo late > pgcall06-late.txt' >/dev/null 2>&1 </dev/null &`}}},
		{Calls: []fakellm.Call{
			fakellm.Shell{Command: "echo a > pgcall07.txt && ls -l pgcall07.txt"},
			fakellm.Shell{Command: "echo b > pgcall08.txt"},
			fakellm.ReadFile{Path: "pgcall09.txt"},
		}},
		{Calls: []fakellm.Call{fakellm.Shell{Command: `printf '%s\n' "it's here" > 'pgcall10 q.txt' && cat "pgcall10 q.txt"`}}},
		{Calls: []fakellm.Call{fakellm.Shell{Command: `python3 -c "open('pgcall11.txt','w').write('x')" && ls pgcall11-missing || true`}}},
		{Calls: []fakellm.Call{
			fakellm.WriteFile{Path: "pgcall12.txt", Content: "twelve\n"},
			fakellm.ReadFile{Path: "pgcall13.txt"},
		}},
		{Text: "All done."},
	}}
}

// attrFiles are the project's files before the run: the inputs of the read
// and edit calls, and hooks that make Claude Code and Gemini CLI start a
// process of their own that no tool call explains.
func attrFiles(agent string) map[string]string {
	files := map[string]string{
		"pgcall03.txt": "three\n",
		"pgcall04.txt": "four\n",
		"pgcall09.txt": "nine\n",
		"pgcall13.txt": "thirteen\n",
	}
	hook := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo rogue > pgrogue-hook.txt"}]}]}}`
	switch agent {
	case Claude:
		files[".claude/settings.json"] = hook
	case Gemini:
		files[".gemini/settings.json"] = hook
	}
	return files
}

// attrPolygraph builds the polygraph binary into dir.
func attrPolygraph(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "polygraph")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/polygraph/polygraph/cmd/polygraph").CombinedOutput(); err != nil {
		t.Fatalf("build polygraph: %v: %s", err, out)
	}
	return bin
}

// TestAttribution runs each agent under `polygraph run`, attributes the
// recorded events to the tool calls of the transcript the agent wrote, and
// measures precision and recall over the events that carry a call's marker.
func TestAttribution(t *testing.T) {
	testenv.RequireRoot(t)
	bin := attrPolygraph(t, t.TempDir())
	for _, agent := range Agents {
		t.Run(agent, func(t *testing.T) {
			AgentPath(t, agent)
			pghome := t.TempDir()
			live, stream := liveFlags(pghome)
			r := RunAgent(t, agent, attrScenario(),
				WithFiles(attrFiles(agent)),
				WithEnv("POLYGRAPH_HOME="+pghome),
				WithWrapper(append(append([]string{bin, "run", "--linger", "10s"}, live...), "--")...),
				WithTimeout(150*time.Second))
			defer func() {
				if t.Failed() {
					r.Dump(t)
				}
			}()
			if r.TimedOut || r.ExitCode != 0 {
				t.Fatalf("%s under polygraph: exit %d, timed out %v", agent, r.ExitCode, r.TimedOut)
			}

			if path, err := session.Resolve(pghome, "last"); err == nil {
				rep, err := analysis.Run(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
				must(t, err)
				checkLive(t, stream, rep)
			}
			events, meta := attrSession(t, pghome)
			tr := attrTranscript(t, r)
			res := correlate.Attribute(events, tr, meta, correlate.Options{})
			defer func() {
				if t.Failed() || os.Getenv("POLYGRAPH_E2E_KEEP") == "1" {
					attrLog(t, events, res)
				}
			}()
			if res.Attributions.Len() != len(events) {
				t.Fatalf("%d attributions for %d events", res.Attributions.Len(), len(events))
			}

			calls := attrMarkerCalls(t, tr)
			s := attrScoreEvents(t, events, res, calls)
			t.Logf("attribution %s: precision %.1f%% recall %.1f%% (%d events)", agent, s.precision(), s.recall(), s.Events)
			for _, w := range s.Wrong {
				t.Log("misattributed: " + w)
			}
			if s.precision() < attrMinimum || s.recall() < attrMinimum {
				t.Errorf("attribution below %.0f%%", attrMinimum)
			}
			late, other := 0, 0
			for _, e := range res.Unattributed {
				if res.Of(e.Seq).AfterReturn {
					late++
				} else {
					other++
				}
			}
			t.Logf("%s: %d events: %v; unattributed listed %d (after return %d, started by no call or unexplained %d)",
				agent, len(events), res.Counts, len(res.Unattributed), late, other)
			attrCoverage(t, events, res, calls)
			attrCheckLate(t, events, res, calls)
			attrCheckRogue(t, r, events, res)
			attrCheckAPI(t, r, events, res)
			attrCheckActivity(t, r, res, calls)
			if agent == Mini {
				attrCheckMini(t, events, res, tr)
			}
		})
	}
}

// attrSession reads the session polygraph recorded.
func attrSession(t *testing.T, pghome string) ([]*event.Event, session.Meta) {
	t.Helper()
	path, err := session.Resolve(pghome, "last")
	must(t, err)
	s, err := session.Open(path)
	must(t, err)
	defer s.Close()
	var events []*event.Event
	must(t, s.Events(session.Filter{}, func(e *event.Event) error {
		events = append(events, e)
		return nil
	}))
	meta := s.Meta()
	if len(meta.Lost) > 0 {
		for stage, n := range meta.Lost {
			if n > 0 {
				t.Logf("session lost %d events at %s", n, stage)
			}
		}
	}
	return events, meta
}

// attrTranscript parses the transcript the agent wrote (the one with the
// most tool calls, should there be several).
func attrTranscript(t *testing.T, r *Result) *transcript.Transcript {
	t.Helper()
	var best *transcript.Transcript
	for _, p := range r.Transcripts {
		tr, err := transcript.ParseFile(p, transcript.Options{})
		if err != nil {
			t.Logf("transcript %s: %v", p, err)
			continue
		}
		if best == nil || len(tr.ToolCalls) > len(best.ToolCalls) {
			best = tr
		}
	}
	if best == nil || len(best.ToolCalls) == 0 {
		t.Fatalf("no transcript with tool calls among %v", r.Transcripts)
	}
	return best
}

// attrCoverage checks that every call's marker shows up in the session at
// all, so a perfect score cannot come from a scenario that did nothing.
func attrCoverage(t *testing.T, events []*event.Event, res *correlate.Result, calls map[string]string) {
	t.Helper()
	seen := map[string]int{}
	for _, e := range events {
		for _, m := range attrEventMarkers(e, res.Of(e.Seq)) {
			seen[m]++
		}
	}
	for m := range calls {
		if seen[m] == 0 {
			t.Errorf("no event carries marker %s: the call left no trace", m)
		}
	}
	if len(calls) < 13 {
		t.Errorf("the transcript holds %d marked calls, want 13: %v", len(calls), calls)
	}
}

// attrCheckLate checks the write of call 06's leftover process: attributed
// to call 06 by lineage, after its return, and listed as unattributed.
func attrCheckLate(t *testing.T, events []*event.Event, res *correlate.Result, calls map[string]string) {
	t.Helper()
	want := calls["pgcall06"]
	var found bool
	for _, e := range events {
		if e.Kind != event.KindOpen || !strings.HasSuffix(e.Path, "/pgcall06-late.txt") || !attrIsWrite(e.Access) {
			continue
		}
		found = true
		at := res.Of(e.Seq)
		if at.ToolCallID != want || at.Reason != correlate.ReasonLineage || !at.AfterReturn {
			t.Errorf("late write seq %d: call %q reason %s after-return %v; want call %q, lineage, after return",
				e.Seq, at.ToolCallID, at.Reason, at.AfterReturn, want)
		}
		if !attrHasEvent(res.Unattributed, e.Seq) {
			t.Errorf("late write seq %d is not listed in Unattributed", e.Seq)
		}
		if act := res.ByCall[want]; act == nil || !attrHasSeq(act.Late, e.Seq) {
			t.Errorf("late write seq %d is not in call %s's Late", e.Seq, want)
		}
	}
	if !found {
		t.Error("the leftover process of call 06 never wrote pgcall06-late.txt (was it killed?)")
	}
}

// attrCheckRogue checks that what the agent's start-up hook did (a
// process no tool call started) is unattributed and listed.
func attrCheckRogue(t *testing.T, r *Result, events []*event.Event, res *correlate.Result) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(r.Dir, "pgrogue-hook.txt")); err != nil {
		t.Logf("%s ran no start-up hook (%v); no process outside the tool calls to check", r.Agent, err)
		return
	}
	n := 0
	for _, e := range events {
		at := res.Of(e.Seq)
		ms := attrEventMarkers(e, at)
		if len(ms) != 1 || ms[0] != attrRogue {
			continue
		}
		n++
		if at.ToolCallID != "" || at.Reason != correlate.ReasonUnattributed || !attrHasEvent(res.Unattributed, e.Seq) {
			t.Errorf("hook event seq %d %s %s: call %q reason %s; want unattributed and listed", e.Seq, e.Kind, e.Path, at.ToolCallID, at.Reason)
		}
	}
	if n == 0 {
		t.Error("the hook wrote its file but no event carries its marker")
	}
	t.Logf("%s start-up hook: %d events, all unattributed", r.Agent, n)
}

// attrCheckAPI checks that the agent's connections to the model server
// are labelled as its API traffic.
func attrCheckAPI(t *testing.T, r *Result, events []*event.Event, res *correlate.Result) {
	t.Helper()
	port := r.ServerURL[strings.LastIndexByte(r.ServerURL, ':')+1:]
	n := 0
	for _, e := range events {
		if e.Kind != event.KindConnect || e.Family() == "unix" || e.Port() == 0 {
			continue
		}
		if strings.TrimLeft(port, "0123456789") != "" || port != strconv.Itoa(int(e.Port())) {
			continue
		}
		n++
		if at := res.Of(e.Seq); at.Reason != correlate.ReasonAgentAPI {
			t.Errorf("connect seq %d to the model server (%s, pid %d): %s %s; want %s", e.Seq, e.Comm, e.PID, at.Reason, at.Detail, correlate.ReasonAgentAPI)
		}
	}
	if n == 0 {
		t.Error("no connect to the model server recorded")
	}
}

// attrCheckMini checks what is particular to mini-swe-agent: the `uname -p`
// its python process runs at start is the agent's own probe, and every
// `/bin/sh -c CMD` it starts (the submit command too, which its trajectory
// logs as not executed) belongs to the action whose command it runs.
func attrCheckMini(t *testing.T, events []*event.Event, res *correlate.Result, tr *transcript.Transcript) {
	t.Helper()
	byCmd := map[string]string{}
	for _, tc := range tr.ToolCalls {
		byCmd[tc.Command] = tc.ID
	}
	var uname, shells int
	for _, e := range events {
		if e.Kind != event.KindExec || len(e.Argv()) == 0 {
			continue
		}
		at := res.Of(e.Seq)
		switch {
		case filepath.Base(e.Argv()[0]) == "uname":
			uname++
			if at.ToolCallID != "" || at.Reason != correlate.ReasonAgentBookkeeping || at.Detail != "system-probe" {
				t.Errorf("uname exec seq %d: call %q %s/%s; want the agent's own system-probe", e.Seq, at.ToolCallID, at.Reason, at.Detail)
			}
		case len(e.Argv()) == 3 && e.Argv()[0] == "/bin/sh" && e.Argv()[1] == "-c":
			shells++
			if want, ok := byCmd[e.Argv()[2]]; !ok || at.ToolCallID != want {
				t.Errorf("exec seq %d %q: call %q (%s), want %q", e.Seq, e.Argv(), at.ToolCallID, at.Reason, want)
			}
		}
	}
	if uname != 1 || shells != len(tr.ToolCalls) {
		t.Errorf("%d uname execs and %d /bin/sh -c execs for %d actions; want 1 and one per action", uname, shells, len(tr.ToolCalls))
	}
	last := tr.ToolCalls[len(tr.ToolCalls)-1]
	if last.Command != fakellm.SubmitCommand || !last.NotExecuted {
		t.Errorf("last action %q not-executed %v; want the submit command, logged as not executed", last.Command, last.NotExecuted)
	}
	if act := res.ByCall[last.ID]; act == nil || act.RootExit == nil || act.RootExit.ExitCode() == nil || *act.RootExit.ExitCode() != 0 {
		t.Errorf("submit action: kernel activity %+v; want its /bin/sh seen exiting 0", act)
	}
}

// attrCheckActivity spot-checks what CallActivity says the calls did.
func attrCheckActivity(t *testing.T, r *Result, res *correlate.Result, calls map[string]string) {
	t.Helper()
	act := func(m string) *correlate.CallActivity {
		a := res.ByCall[calls[m]]
		if a == nil {
			t.Fatalf("no activity for the call of %s", m)
		}
		return a
	}
	c1 := act("pgcall01")
	if c1.RootExecID == "" || c1.RootExit == nil || c1.RootExit.ExitCode() == nil || *c1.RootExit.ExitCode() != 0 {
		t.Errorf("call 01: root %q exit %+v; want a root that exited 0", c1.RootExecID, c1.RootExit)
	}
	if !attrHasExec(c1.Execs, "mkdir") {
		t.Errorf("call 01 execs lack mkdir: %v", attrExecNames(c1.Execs))
	}
	if !attrHasStr(c1.Writes, filepath.Join(r.Dir, "pgcall01", "out.txt")) {
		t.Errorf("call 01 writes %v lack pgcall01/out.txt", c1.Writes)
	}
	if w := act("pgcall02").Writes; !attrHasStr(w, filepath.Join(r.Dir, "pgcall02.txt")) {
		t.Errorf("call 02 writes %v lack pgcall02.txt", w)
	}
	if rd := act("pgcall03").Reads; !attrHasStr(rd, filepath.Join(r.Dir, "pgcall03.txt")) {
		t.Errorf("call 03 reads %v lack pgcall03.txt", rd)
	}
	if w := act("pgcall04").Writes; !attrHasStr(w, filepath.Join(r.Dir, "pgcall04.txt")) {
		t.Errorf("call 04 writes %v lack pgcall04.txt", w)
	}
	c5 := act("pgcall05")
	if !attrHasExec(c5.Execs, "wc") || !attrHasStr(c5.Writes, filepath.Join(r.Dir, "pgcall05-count.txt")) {
		t.Errorf("call 05: execs %v writes %v; want wc and pgcall05-count.txt", attrExecNames(c5.Execs), c5.Writes)
	}
	for _, m := range []string{"pgcall07", "pgcall08"} {
		if a := act(m); a.RootExecID == "" {
			t.Errorf("call of %s has no root process", m)
		}
	}
	if act("pgcall07").RootExecID == act("pgcall08").RootExecID {
		t.Error("the parallel calls 07 and 08 got the same root process")
	}
}

func attrIsWrite(access string) bool {
	return strings.Contains(access, "write") || strings.Contains(access, "create")
}

func attrHasEvent(evs []*event.Event, seq uint64) bool {
	for _, e := range evs {
		if e.Seq == seq {
			return true
		}
	}
	return false
}

func attrHasSeq(seqs []uint64, seq uint64) bool {
	for _, s := range seqs {
		if s == seq {
			return true
		}
	}
	return false
}

func attrHasStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func attrHasExec(execs []*event.Event, name string) bool {
	for _, e := range execs {
		if filepath.Base(e.Path) == name || len(e.Argv()) > 0 && filepath.Base(e.Argv()[0]) == name {
			return true
		}
	}
	return false
}

func attrExecNames(execs []*event.Event) []string {
	var out []string
	for _, e := range execs {
		out = append(out, filepath.Base(e.Path))
	}
	return out
}
