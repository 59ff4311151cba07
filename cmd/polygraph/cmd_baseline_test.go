package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestBaselineVerbs: learn (once per session), show and check.
func TestBaselineVerbs(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	ctx := context.Background()
	var out bytes.Buffer
	if err := runBaselineLearn(ctx, &baselineOptions{}, []string{m.ID}, &out); err != nil {
		t.Fatal(err)
	}
	if err := runBaselineLearn(ctx, &baselineOptions{}, []string{m.ID}, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), m.ID+": learned into unknown (1 sessions)\n"+m.ID+": already in unknown\n"; got != want {
		t.Errorf("learn printed %q, want %q", got, want)
	}
	out.Reset()
	if err := runBaselineShow(ctx, &baselineOptions{}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "unknown   1") {
		t.Errorf("show:\n%s", out.String())
	}
	out.Reset()
	if err := runBaselineShow(ctx, &baselineOptions{}, []string{"unknown"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"baseline unknown: 1 sessions", "none: 1 session", "programs               npm (1)", "writes in              ~/p (1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show unknown lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := runBaselineCheck(ctx, &baselineOptions{json: true}, m.ID, &out); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Baseline   string            `json:"baseline"`
		Deviations []json.RawMessage `json:"deviations"`
		Notes      []string          `json:"notes"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Baseline != "unknown" || len(v.Deviations) != 0 || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "1 of the 3 sessions needed") {
		t.Errorf("check with one session learned: %s", out.String())
	}
	if err := runBaselineShow(ctx, &baselineOptions{}, []string{"nobody"}, &out); err == nil {
		t.Error("show of a baseline that does not exist: no error")
	}
}
