package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/test/recorded"
)

// fakeKey is an Anthropic API key's shape (no real key): the recorded
// Claude Code session is stored as if it had been given one on its
// command line, which no page may show.
const fakeKey = "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-AbCdEfGhIjKl"

// recordedStore writes the recorded sessions of the real agent CLIs
// (internal/correlate/testdata) into a polygraph home, their transcripts
// where each agent wrote it, and returns the home and the sessions' ids
// by agent.
func recordedStore(t testing.TB) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "polygraph")
	ids := map[string]string{}
	for _, agent := range recorded.Agents {
		s, err := recorded.LoadAt(agent, filepath.Join(dir, agent))
		if err != nil {
			t.Fatal(err)
		}
		if agent == "claude" {
			s.Meta.Command = append([]string{"env", "ANTHROPIC_API_KEY=" + fakeKey}, s.Meta.Command...)
		}
		if _, err := s.Store(home); err != nil {
			t.Fatal(err)
		}
		ids[agent] = s.Meta.ID
	}
	return home, ids
}

// sessionStats is what `polygraph stats` measures of the session id in
// home: what its charts must show.
func sessionStats(t testing.TB, home, id string) *stats.Session {
	t.Helper()
	path, err := session.Resolve(home, id)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.Analyze(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	if err != nil {
		t.Fatal(err)
	}
	return stats.Compute(a, nil)
}

// serve starts the server of home on a loopback test listener.
func serve(t testing.TB, o Options) (*httptest.Server, *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	s, err := New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, s
}

func get(t testing.TB, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestPages: the list, a session's page, its reports and its stream, as
// the server gives them, with no secret in any of them.
func TestPages(t *testing.T) {
	home, ids := recordedStore(t)
	ts, _ := serve(t, Options{Home: home})

	resp, body := get(t, ts.URL+"/")
	if resp.StatusCode != 200 || strings.Count(body, `<tr data-session=`) != 3 || !strings.Contains(body, `data-liststream="/events"`) {
		t.Fatalf("list: %d\n%s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	resp, body = get(t, ts.URL+"/s/"+ids["claude"])
	if resp.StatusCode != 200 || strings.Count(body, `class="row call`) != 13 || !strings.Contains(body, `id="finding-F2"`) ||
		!strings.Contains(body, `<link rel="stylesheet" href="/assets/timeline.css">`) {
		t.Fatalf("session page: %d\n%.2000s", resp.StatusCode, body)
	}
	// The session's charts, inline, with stats' numbers; the same on its
	// HTML report.
	st := sessionStats(t, home, ids["claude"])
	_, rh := get(t, ts.URL+"/s/"+ids["claude"]+"/report.html")
	for name, page := range map[string]string{"session page": body, "report.html": rh} {
		if n := strings.Count(page, `<figure class="chart" id="chart-session-`); n != 5 {
			t.Errorf("%s: %d charts, want 5", name, n)
		}
		for _, want := range []string{fmt.Sprintf("Tool calls (%d)", len(st.Calls)), fmt.Sprintf("execve (%d) and shells (%d)", st.Execs, len(st.Shells)),
			fmt.Sprintf("<title>its tools, execve: %d</title>", st.ExecsBy[stats.WhoTools])} {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	for _, p := range []string{"/", "/s/" + ids["claude"], "/s/" + ids["claude"] + "/report.json", "/s/" + ids["claude"] + "/report.html", "/api/sessions"} {
		_, b := get(t, ts.URL+p)
		if strings.Contains(b, fakeKey) || strings.Contains(b, fakeKey[:24]) {
			t.Errorf("%s shows the API key", p)
		}
	}
	_, js := get(t, ts.URL+"/s/"+ids["claude"]+"/report.json")
	var rep struct {
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.ToolCalls) != 13 {
		t.Errorf("report.json: %v, %d calls", err, len(rep.ToolCalls))
	}
	if resp, _ := get(t, ts.URL+"/s/nosuch"); resp.StatusCode != 404 {
		t.Errorf("an unknown session: %d", resp.StatusCode)
	}
	if resp, _ := get(t, ts.URL+"/assets/session.html"); resp.StatusCode != 404 {
		t.Errorf("the templates are served: %d", resp.StatusCode)
	}
	if resp, b := get(t, ts.URL+"/assets/timeline.js"); resp.StatusCode != 200 || !strings.Contains(b, "EventSource") {
		t.Errorf("timeline.js: %d", resp.StatusCode)
	}

	// A finished session's stream: its view, then the end.
	resp, body = get(t, ts.URL+"/s/"+ids["codex"]+"/events?v=0")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || !strings.HasPrefix(body, "event: session\ndata: <div id=\"session\"") ||
		!strings.HasSuffix(body, "event: end\ndata: \n\n") {
		t.Errorf("stream of a finished session (%s):\n%.300s … %s", ct, body, body[max(0, len(body)-100):])
	}
}

// TestGuard: loopback names only, GET only, and off loopback a token.
func TestGuard(t *testing.T) {
	home, _ := recordedStore(t)
	ts, _ := serve(t, Options{Home: home})
	for _, host := range []string{"evil.example", "127.0.0.1.nip.io", "192.168.1.5:7777"} {
		if resp, _ := get(t, ts.URL+"/", "Host", host); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d, want 421 (a rebound name)", host, resp.StatusCode)
		}
	}
	for _, host := range []string{"localhost:7777", "127.0.0.1", "[::1]:7777"} {
		if resp, _ := get(t, ts.URL+"/api/sessions", "Host", host); resp.StatusCode != 200 {
			t.Errorf("Host %s: %d", host, resp.StatusCode)
		}
	}
	resp, err := http.Post(ts.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}

	// Off loopback: a token, made up when none is given.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(ctx, Options{Home: home, Listen: "0.0.0.0:7777"})
	if err != nil {
		t.Fatal(err)
	}
	tok := s.o.Token
	if len(tok) < 32 || !strings.HasSuffix(s.URL("myhost:7777"), "/?token="+tok) {
		t.Fatalf("token %q, URL %s", tok, s.URL("myhost:7777"))
	}
	tts := httptest.NewServer(s.Handler())
	defer tts.Close()
	if resp, _ := get(t, tts.URL+"/api/sessions", "Host", "myhost:7777"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, tts.URL+"/api/sessions?token=wrong", "Host", "myhost:7777"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}
	resp, _ = get(t, tts.URL+"/?token="+tok, "Host", "myhost:7777")
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Errorf("token in the URL: %d, Location %q, cookie %q", resp.StatusCode, resp.Header.Get("Location"), cookie)
	}
	if resp, _ := get(t, tts.URL+"/api/sessions", "Host", "myhost:7777", "Cookie", strings.Split(cookie, ";")[0]); resp.StatusCode != 200 {
		t.Errorf("with the cookie: %d", resp.StatusCode)
	}
	if resp, _ := get(t, tts.URL+"/api/sessions", "Host", "myhost:7777", "Authorization", "Bearer "+tok); resp.StatusCode != 200 {
		t.Errorf("with the bearer token: %d", resp.StatusCode)
	}
}

// TestListStream: the list's stream sends the list, and again when a
// session is added.
func TestListStream(t *testing.T) {
	home, _ := recordedStore(t)
	ts, _ := serve(t, Options{Home: home})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	rows := -1
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "event: list") {
			rows = 0
		} else if rows >= 0 && strings.Contains(line, "<tr data-session=") {
			rows++
		} else if rows >= 0 && line == "" {
			break
		}
	}
	if rows != 3 {
		t.Fatalf("the list's stream sent %d sessions, want 3", rows)
	}
}
