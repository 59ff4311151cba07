package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/otlp"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/test/fakellm"
	"github.com/polygraph/polygraph/test/otelbackend"
)

// Fake secrets of the export test, each of a shape the redactor knows,
// none real. The credentials file holds the AWS pair; the tool call's
// command carries the GitHub token; the agent's API key is in its
// environment.
const (
	exportAWSID     = "AKIAPGEXPORTTEST7Q1Z"
	exportAWSSecret = "pgExp0rtS3cretKey/ShouldNeverLeave+Zz9"
	exportGHToken   = "ghp_pgExport0123456789abcdefABCDEF012345"
	exportAPIKey    = "sk-ant-api03-pgExportNeverLeaves0123456789-abcdefABCDEF"
)

// exportSentRE reads the span count from export's line.
var exportSentRE = regexp.MustCompile(`sent (\d+) spans? and (\d+) log records?`)

// TestExportAgents runs each agent under `polygraph run`, its one tool
// call reading a planted ~/.aws/credentials, and sends the session to a
// real Jaeger two ways: streamed live by `run --otlp` while the agent
// runs, and exported afterwards with `polygraph export`. It reads each
// back through Jaeger's query API: one trace with every span sent, the invoke_agent root,
// execute_tool spans whose gen_ai.tool.call.id values are the
// transcript's, the process that read the file under that call's span,
// the sensitive-read finding on it, and no secret anywhere in what Jaeger
// holds.
func TestExportAgents(t *testing.T) {
	testenv.RequireRoot(t)
	j := otelbackend.StartJaeger(t)
	bin := attrPolygraph(t, t.TempDir())
	for _, agent := range Agents {
		for _, mode := range []string{"export", "live"} {
			t.Run(agent+"/"+mode, func(t *testing.T) { exportAgent(t, j, bin, agent, mode) })
		}
	}
}

// exportAgent is one run of TestExportAgents.
func exportAgent(t *testing.T, j *otelbackend.Jaeger, bin, agent, mode string) {
	AgentPath(t, agent)
	pghome := t.TempDir()
	wrapper := []string{bin, "run", "--linger", "2s", "--"}
	if mode == "live" {
		wrapper = []string{bin, "run", "--linger", "2s", "--otlp", j.OTLP, "--otlp-spool", "none", "--"}
	}
	cmd := "GITHUB_TOKEN=" + exportGHToken + " cat ~/.aws/credentials | wc -l"
	r := RunAgent(t, agent, fakellm.Scenario{Turns: []fakellm.Turn{
		{Calls: []fakellm.Call{fakellm.Shell{Command: cmd}}},
		{Text: "Counted the lines of the AWS profile."},
	}},
		WithHomeFiles(map[string]string{".aws/credentials": "[default]\naws_access_key_id = " + exportAWSID +
			"\naws_secret_access_key = " + exportAWSSecret + "\n"}),
		WithEnv("POLYGRAPH_HOME="+pghome, "ANTHROPIC_API_KEY="+exportAPIKey, "FAKE_LLM_API_KEY="+exportAPIKey,
			"GEMINI_API_KEY="+exportAPIKey, "OPENAI_COMPAT_API_KEY="+exportAPIKey),
		WithWrapper(wrapper...),
		WithTimeout(150*time.Second))
	defer func() {
		if t.Failed() {
			r.Dump(t)
		}
	}()
	if r.TimedOut || r.ExitCode != 0 {
		t.Fatalf("%s under polygraph: exit %d, timed out %v", agent, r.ExitCode, r.TimedOut)
	}

	// What export will send, analysed here as export does.
	path, err := session.Resolve(pghome, "last")
	must(t, err)
	a, err := analysis.Analyze(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	must(t, err)
	if a.Transcript == nil || len(a.Transcript.ToolCalls) == 0 {
		t.Fatalf("no transcript (or no tool call) found for the session")
	}
	var readCall string
	for _, tc := range a.Transcript.ToolCalls {
		if strings.Contains(tc.Command+strings.Join(tc.Argv, " "), ".aws/credentials") {
			readCall = tc.ID
		}
	}
	if readCall == "" {
		t.Fatalf("no tool call of the transcript runs the command")
	}

	var out bytes.Buffer
	if mode == "export" {
		ex := exec.Command(bin, "export", "last", "--otlp", j.OTLP, "--otlp-spool", "none")
		ex.Env = append(ex.Environ(), "POLYGRAPH_HOME="+pghome)
		var errOut bytes.Buffer
		ex.Stdout, ex.Stderr = &out, &errOut
		if err := ex.Run(); err != nil {
			t.Fatalf("polygraph export: %v\n%s%s", err, out.String(), errOut.String())
		}
	} else {
		out.Write(r.Stderr) // run's line at its end
	}
	m := exportSentRE.FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "nothing dropped") {
		t.Fatalf("%s said %q", mode, excerpt(out.String(), 2000))
	}
	t.Logf("%s %s: %s", agent, mode, m[0])
	spans, _ := strconv.Atoi(m[1])

	trace, raw := j.WaitTrace(t, otlp.TraceID(a.Meta.ID).String(), spans, 30*time.Second)
	if len(trace.Spans) != spans {
		t.Errorf("Jaeger holds %d spans of the trace, export sent %d", len(trace.Spans), spans)
	}
	checkExportTrace(t, a, trace, readCall)
	for name, secret := range map[string]string{"AWS access key id": exportAWSID, "AWS secret key": exportAWSSecret,
		"GitHub token": exportGHToken, "agent API key": exportAPIKey} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the %s is in Jaeger's copy of the trace", name)
		}
	}
	if !bytes.Contains(raw, []byte("GITHUB_TOKEN=[REDACTED]")) {
		t.Errorf("the command's token is not shown masked (was the command exported?)")
	}
}

// checkExportTrace checks the trace as Jaeger serves it.
func checkExportTrace(t *testing.T, a *analysis.Analysis, tr *otelbackend.Trace, readCall string) {
	t.Helper()
	byID := map[string]otelbackend.Span{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	root := otlp.RootSpanID(a.Meta.ID).String()
	if s, ok := byID[root]; !ok || !strings.HasPrefix(s.OperationName, "invoke_agent ") || s.Parent() != "" {
		t.Errorf("no invoke_agent root span (%+v)", s.OperationName)
	} else if got := s.Tag("gen_ai.conversation.id"); got != a.Transcript.SessionID {
		t.Errorf("root's gen_ai.conversation.id %q, want %q", got, a.Transcript.SessionID)
	}
	calls := map[string]string{} // tool call id -> span id
	for _, s := range tr.Spans {
		if strings.HasPrefix(s.OperationName, "execute_tool ") {
			calls[s.Tag("gen_ai.tool.call.id")] = s.SpanID
			if s.Parent() != root {
				t.Errorf("%s hangs under %s, not the root", s.OperationName, s.Parent())
			}
		}
	}
	for _, tc := range a.Transcript.ToolCalls {
		if _, ok := calls[tc.ID]; !ok {
			t.Errorf("no execute_tool span with gen_ai.tool.call.id %q (have %v)", tc.ID, calls)
		}
	}
	if len(calls) != len(a.Transcript.ToolCalls) {
		t.Errorf("%d execute_tool spans for %d tool calls", len(calls), len(a.Transcript.ToolCalls))
	}
	// The process that read the credentials: a span with the open as an
	// event, whose ancestors lead to the reading call's span.
	callSpan := calls[readCall]
	found := false
	for _, s := range tr.Spans {
		if !strings.HasPrefix(s.OperationName, "exec ") {
			continue
		}
		reads := false
		for _, l := range s.Events("polygraph.open") {
			if strings.HasSuffix(otelbackend.Str(l.Fields, "file.path"), "/.aws/credentials") {
				reads = true
			}
		}
		if !reads {
			continue
		}
		found = true
		up := s.Parent()
		for n := 0; up != "" && up != callSpan && n < 64; n++ {
			up = byID[up].Parent()
		}
		if up != callSpan {
			t.Errorf("%s (%s), which read the credentials, is not under the call's span", s.OperationName, s.Tag("process.command_line"))
		}
		if s.Tag("gen_ai.tool.call.id") != readCall || s.Tag("polygraph.attribution.reason") != "lineage" {
			t.Errorf("%s: call %q reason %q", s.OperationName, s.Tag("gen_ai.tool.call.id"), s.Tag("polygraph.attribution.reason"))
		}
	}
	if !found {
		t.Errorf("no process span carries the open of ~/.aws/credentials")
	}
	sensitive := false
	for _, l := range byID[callSpan].Events("polygraph.finding") {
		if otelbackend.Str(l.Fields, "security_rule.name") == "sensitive-read" {
			sensitive = true
		}
	}
	if !sensitive {
		t.Errorf("no sensitive-read finding event on the reading call's span")
	}
	t.Logf("the trace in Jaeger:\n%s", spanTree(tr, root, byID))
}

// spanTree draws the trace from span id down, one span a line.
func spanTree(tr *otelbackend.Trace, id string, byID map[string]otelbackend.Span) string {
	kids := map[string][]string{}
	for _, s := range tr.Spans {
		kids[s.Parent()] = append(kids[s.Parent()], s.SpanID)
	}
	var b strings.Builder
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		s := byID[id]
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.OperationName)
		if c := s.Tag("gen_ai.tool.call.id"); c != "" && strings.HasPrefix(s.OperationName, "execute_tool") {
			fmt.Fprintf(&b, " [%s]", c)
		}
		if c := s.Tag("process.command_line"); c != "" && depth > 0 {
			fmt.Fprintf(&b, " %q", excerpt(c, 90))
		}
		for _, l := range s.Events("polygraph.finding") {
			fmt.Fprintf(&b, " {finding %s %s}", otelbackend.Str(l.Fields, "security_rule.name"), otelbackend.Str(l.Fields, "polygraph.finding.severity"))
		}
		b.WriteByte('\n')
		for _, k := range kids[id] {
			walk(k, depth+1)
		}
	}
	walk(id, 0)
	return b.String()
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
