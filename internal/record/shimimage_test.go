package record

import (
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

func TestShimImages(t *testing.T) {
	const self = "/opt/polygraph/bin/polygraph"
	exec := func(pid uint32, id, path string, argv ...string) *event.Event {
		return &event.Event{Kind: event.KindExec, PID: pid, ExecID: id, Path: path, Process: &event.Process{Argv: argv}}
	}
	ev := func(kind event.Kind, pid uint32, id string) *event.Event {
		return &event.Event{Kind: kind, PID: pid, ExecID: id}
	}
	var s shimImages
	if s.owns(ev(event.KindOpen, 7, "7-100")) {
		t.Fatal("owns an event before the shim is named")
	}
	s.set(7, "7-100", self)
	for _, tc := range []struct {
		name string
		ev   *event.Event
		want bool
	}{
		{"the shim's image, tracked from its start", ev(event.KindOpen, 7, "7-100"), true},
		{"its exit is the command's", ev(event.KindExit, 7, "7-100"), false},
		{"another process", ev(event.KindOpen, 8, "8-100"), false},
		// Tracked before the kernel reported the exec of polygraph: that
		// exec and what its image does are the shim's.
		{"the shim's exec of polygraph", exec(7, "7-200", self, "polygraph-shim", ShimArg, "--", "make"), true},
		{"its Go runtime's opens", ev(event.KindBPF, 7, "7-200"), true},
		{"polygraph elsewhere is no shim", exec(8, "8-300", self, "polygraph-shim", ShimArg), false},
		{"the command", exec(7, "7-300", "/usr/bin/make", "make"), false},
		{"the command's events", ev(event.KindOpen, 7, "7-300"), false},
		{"after the command, nothing is the shim's exec", exec(7, "7-400", self, "polygraph-shim", ShimArg), false},
	} {
		if got := s.owns(tc.ev); got != tc.want {
			t.Errorf("%s: owns = %v, want %v", tc.name, got, tc.want)
		}
	}
}
