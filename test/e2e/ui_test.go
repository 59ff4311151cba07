package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/internal/ui"
	"github.com/polygraph/polygraph/test/browser"
	"github.com/polygraph/polygraph/test/fakellm"
)

// uiKey is an Anthropic API key's shape (no real key), given to Claude
// Code on its command line (env ANTHROPIC_API_KEY=… claude …), where the
// session's command line holds it: no page may show it.
const uiKey = "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-AbCdEfGhIjKl"

// TestUI runs the real Claude Code under `polygraph run` into a store
// that `polygraph ui`'s server serves, and drives the pages in a real
// headless Chromium. A finished credential-read session: the list loads,
// the session's timeline shows the sensitive-read finding on the call
// that read the credentials, the severity filter hides it and shows it
// again. A live one: the page of a session Claude Code is still running
// receives the sensitive-read finding without a reload, within 2 s of
// the read. Neither page asks anything of a host but loopback, logs an
// error, or holds the API key. The screenshots go to browser.ShotsDir().
func TestUI(t *testing.T) {
	testenv.RequireRoot(t)
	AgentPath(t, Claude)
	bin := attrPolygraph(t, t.TempDir())
	pghome := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := ui.New(ctx, ui.Options{Home: pghome, Listen: "127.0.0.1:0"})
	must(t, err)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	b := browser.Start(t, 1400, 1000)
	run := func(turns []fakellm.Turn) *Result {
		return RunAgent(t, Claude, fakellm.Scenario{Turns: turns},
			WithEnv("POLYGRAPH_HOME="+pghome),
			WithWrapper(bin, "run", "--linger", "2s", "--", "/usr/bin/env", "ANTHROPIC_API_KEY="+uiKey),
			WithTimeout(150*time.Second))
	}
	readCreds := fakellm.Shell{Command: "cat ~/.aws/credentials | head -1"}
	seed := fakellm.Shell{Command: "mkdir -p ~/.aws && printf '[default]\\naws_access_key_id = AKIATEST\\n' > ~/.aws/credentials.seed && mv ~/.aws/credentials.seed ~/.aws/credentials"}

	// A finished session.
	r := run([]fakellm.Turn{{Calls: []fakellm.Call{seed}}, {Calls: []fakellm.Call{readCreds}}, {Text: "Checked the AWS profile."}})
	if r.TimedOut || r.ExitCode != 0 {
		r.Dump(t)
		t.Fatalf("claude under polygraph: exit %d, timed out %v", r.ExitCode, r.TimedOut)
	}
	path, err := session.Resolve(pghome, "last")
	must(t, err)
	rep, err := analysis.Run(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	must(t, err)
	var call string
	for _, f := range rep.Findings {
		if f.Rule == "sensitive-read" {
			call = f.ToolCallID
		}
	}
	if call == "" || rep.Session == nil {
		t.Fatalf("the report has no sensitive-read finding on a call: %+v", rep.Findings)
	}
	id := rep.Session.ID
	b.Do(t, 30*time.Second, chromedp.Navigate(ts.URL+"/"))
	if !b.Until(fmt.Sprintf(`!!document.querySelector('#sessions tr[data-session=%q][data-analysed]')`, id), 60*time.Second) {
		t.Fatalf("the list does not show the session analysed")
	}
	b.Shot(t, "e2e-list")
	b.Do(t, 30*time.Second, chromedp.Click(chromedp.CSS(`a[href="/s/`+id+`"]`)))
	pin := `.row.call[data-call="` + call + `"] .pins .pin[data-rule="sensitive-read"]`
	if !b.Until(browser.Visible(pin), 30*time.Second) {
		t.Fatalf("the timeline does not pin the sensitive-read finding on call %s", call)
	}
	if said := browser.Eval[string](t, b, `document.querySelector('.row.call[data-call="`+call+`"] .said code').textContent`); said != readCreds.Command {
		t.Errorf("the finding's call reads %q, want the command Claude Code ran, %q", said, readCreds.Command)
	}
	b.Shot(t, "e2e-timeline")
	b.Do(t, 10*time.Second, chromedp.Click(chromedp.CSS(`#filters input[name="sev"][value="high"]`)))
	if browser.Eval[bool](t, b, browser.Visible(pin)) {
		t.Error("unticking high leaves the sensitive-read finding shown")
	}
	b.Do(t, 10*time.Second, chromedp.Click(chromedp.CSS(`#filters input[name="sev"][value="high"]`)))
	if !browser.Eval[bool](t, b, browser.Visible(pin)) {
		t.Error("ticking high again does not show the sensitive-read finding")
	}
	// The session's charts: what `polygraph stats` measures of it.
	fa, err := analysis.Analyze(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	must(t, err)
	st := stats.Compute(fa, nil)
	if n := browser.Eval[int](t, b, `document.querySelectorAll("#charts figure.chart > svg").length`); n != 5 {
		t.Errorf("%d charts on the session's page, want 5", n)
	}
	chartTitle := func(name string) string {
		return browser.Eval[string](t, b, `(document.querySelector("#chart-`+name+` svg > text") || {}).textContent || ""`)
	}
	if got, want := chartTitle("session-calls"), fmt.Sprintf("Tool calls (%d)", len(st.Calls)); len(st.Calls) == 0 || !strings.HasPrefix(got, want) {
		t.Errorf("the calls chart reads %q; stats: %q", got, want)
	}
	if got, want := chartTitle("session-execs"), fmt.Sprintf("execve (%d) and shells (%d)", st.Execs, len(st.Shells)); st.Execs == 0 || !strings.HasPrefix(got, want) {
		t.Errorf("the execs chart reads %q; stats: %q", got, want)
	}
	if tips := browser.Eval[[]string](t, b, `[...document.querySelectorAll("#chart-session-execs rect > title")].map(e => e.textContent)`); !slices.Contains(tips, fmt.Sprintf("its tools, execve: %d", st.ExecsBy[stats.WhoTools])) {
		t.Errorf("the execs chart's bars %q; stats: the tools ran %d", tips, st.ExecsBy[stats.WhoTools])
	}
	noKey(t, b)

	// A live session: Claude Code waits in its first call until the page
	// is open, then reads the credentials.
	gate := filepath.Join(t.TempDir(), "go-on")
	wait := fakellm.Shell{Command: fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done", gate)}
	done := make(chan *Result, 1)
	go func() {
		done <- run([]fakellm.Turn{{Calls: []fakellm.Call{wait}}, {Calls: []fakellm.Call{seed}}, {Calls: []fakellm.Call{readCreds}}, {Text: "Checked the AWS profile."}})
	}()
	var live session.Meta
	deadline := time.Now().Add(60 * time.Second)
	for live.ID == "" {
		if list, err := session.List(pghome); err == nil {
			for _, m := range list {
				if m.InProgress && m.ID != id {
					live = m
				}
			}
		}
		if time.Now().After(deadline) {
			os.WriteFile(gate, nil, 0o644)
			t.Fatal("no session in progress within 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Do(t, 30*time.Second, chromedp.Navigate(ts.URL+"/s/"+live.ID))
	if !b.Until(`!!document.querySelector("#session[data-live]") && document.body.dataset.stream !== undefined`, 30*time.Second) {
		os.WriteFile(gate, nil, 0o644)
		t.Fatalf("the page does not follow the session live")
	}
	browser.Eval[bool](t, b, `(function(){new MutationObserver(function(){if(!window.__seen&&document.querySelector('.pins .pin[data-rule="sensitive-read"]'))window.__seen=Date.now();}).observe(document.body,{childList:true,subtree:true});return true})()`)
	must(t, os.WriteFile(gate, nil, 0o644))
	if !b.Until(`!!window.__seen`, 60*time.Second) {
		t.Errorf("the live page received no sensitive-read finding")
	}
	seen := browser.Eval[float64](t, b, `window.__seen || 0`)
	b.Shot(t, "e2e-live")
	r2 := <-done
	if r2.TimedOut || r2.ExitCode != 0 {
		r2.Dump(t)
		t.Fatalf("the live run: exit %d, timed out %v", r2.ExitCode, r2.TimedOut)
	}
	// The read's time, by the kernel: the finding's first evidence event.
	a, err := analysis.Analyze(t.Context(), analysis.Options{SessionPath: live.Path, Transcript: analysis.TranscriptAuto})
	must(t, err)
	var readAt time.Time
	for _, f := range a.Findings {
		if f.Rule == "sensitive-read" && len(f.Evidence) > 0 {
			for _, e := range a.Events {
				if e.Seq == f.Evidence[0] {
					readAt = e.TS
				}
			}
		}
	}
	if readAt.IsZero() || seen == 0 {
		t.Fatalf("no sensitive-read evidence in the live session (%v) or none seen on the page", readAt)
	}
	latency := time.UnixMilli(int64(seen)).Sub(readAt)
	t.Logf("ui live: the credential read reached the open page as a finding %v after the kernel saw it", latency.Round(time.Millisecond))
	if latency > 2*time.Second {
		t.Errorf("the live finding took %v to reach the page, want under 2 s", latency)
	}
	if !b.Until(`!document.querySelector("#session[data-live]")`, 30*time.Second) {
		t.Error("the page did not turn to the finished session")
	}
	noKey(t, b)
	b.Check(t)
}

// noKey fails the test when the page holds the API key, or does not say
// that a secret was masked.
func noKey(t *testing.T, b *browser.Browser) {
	t.Helper()
	dom := browser.Eval[string](t, b, `document.documentElement.outerHTML`)
	if strings.Contains(dom, uiKey) || strings.Contains(dom, uiKey[:24]) {
		t.Error("the page shows the API key")
	}
	if !strings.Contains(dom, "ANTHROPIC_API_KEY=[REDACTED]") {
		t.Error("the page does not show where the key was masked")
	}
}
