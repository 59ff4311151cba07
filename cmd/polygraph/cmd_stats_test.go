package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStats measures a session whose npm connects to its registry: by
// id with --json, then every session with --svg, then --agent.
func TestStats(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	ctx := context.Background()
	var out bytes.Buffer
	if err := runStats(ctx, &statsOptions{json: true}, []string{m.ID}, &out); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Sessions []struct {
			ID       string         `json:"id"`
			Execs    int            `json:"execs"`
			Connects map[string]int `json:"connects"`
			Flows    []struct {
				Dest  string `json:"dest"`
				Class string `json:"class"`
			} `json:"flows"`
		} `json:"sessions"`
		Summaries []json.RawMessage `json:"summaries"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Sessions) != 1 || len(v.Summaries) != 1 {
		t.Fatalf("stats --json: %s", out.String())
	}
	s := v.Sessions[0]
	if s.ID != m.ID || s.Execs != 1 || s.Connects["registry"] != 1 || len(s.Flows) != 1 || s.Flows[0].Dest != "registry.npmjs.org:443" || s.Flows[0].Class != "registry" {
		t.Errorf("stats --json: %+v", s)
	}

	dir := filepath.Join(t.TempDir(), "charts")
	out.Reset()
	if err := runStats(ctx, &statsOptions{svg: dir}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "session "+m.ID) || !strings.Contains(out.String(), "registry.npmjs.org:443  registry") {
		t.Errorf("stats:\n%s", out.String())
	}
	for _, name := range []string{"iterations.svg", "execs.svg", "time.svg", "cpu.svg", "shells.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.HasPrefix(b, []byte("<svg ")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := runStats(ctx, &statsOptions{agent: "claude-code"}, nil, &out); err == nil || !strings.Contains(err.Error(), "no session of agent") {
		t.Errorf("stats --agent claude-code: %v", err)
	}
}
