package analysis

import (
	"slices"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

func TestExecHomes(t *testing.T) {
	exec := func(home string) *event.Event {
		return &event.Event{Kind: event.KindExec, Process: &event.Process{Home: home}}
	}
	events := []*event.Event{
		exec(""), exec("/root"), {Kind: event.KindOpen, Path: "/x"}, exec("/tmp/alt/"), exec("/tmp/alt"),
		exec("relative"), exec("/"), exec("/home/ann"),
	}
	got := execHomes(events, "/root")
	if want := []string{"/tmp/alt", "/home/ann"}; !slices.Equal(got, want) {
		t.Errorf("execHomes = %q, want %q", got, want)
	}
	if got := execHomes(nil, "/root"); len(got) != 0 {
		t.Errorf("execHomes of no events = %q", got)
	}
}
