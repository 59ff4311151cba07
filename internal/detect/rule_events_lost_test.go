package detect

import (
	"strings"
	"testing"
)

// TestEventsLost runs the events-lost cases: the severity follows the
// stages that lost events.
func TestEventsLost(t *testing.T) {
	session := func(lost map[string]uint64) func(b *builder) {
		return func(b *builder) {
			b.agent(100, "/usr/local/bin/claude")
			b.lost = lost
		}
	}
	runCases(t, []ruleCase{
		{name: "nothing lost", build: session(map[string]uint64{"ringbuf": 0, "tracking": 0, "queue": 0})},
		{name: "no counters", build: session(nil)},
		{
			name:  "ring buffer overflow",
			build: session(map[string]uint64{"ringbuf": 1200, "tracking": 0, "queue": 3}),
			want:  []string{"high events-lost"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.Title != "The recording lost 1203 events" || !strings.Contains(f.Detail, "ringbuf 1200, queue 3") ||
					!strings.Contains(f.Detail, "exec, a connect") || f.ToolCallID != "" {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name:  "untracked processes",
			build: session(map[string]uint64{"tracking": 2}),
			want:  []string{"high events-lost"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "not traced at all") {
					t.Errorf("detail %q", fs[0].Detail)
				}
			},
		},
		{name: "the store's loss", build: session(map[string]uint64{"disk full": 40}), want: []string{"high events-lost"}},
		{name: "main ring only, security ring intact", build: session(map[string]uint64{"ringbuf": 900, "ringbuf-security": 0, "queue": 0}),
			want: []string{"medium events-lost"}},
		{name: "main ring and security ring", build: session(map[string]uint64{"ringbuf": 900, "ringbuf-security": 2}),
			want: []string{"high events-lost"}},
		{name: "main ring and queue", build: session(map[string]uint64{"ringbuf": 900, "ringbuf-security": 0, "queue": 1}),
			want: []string{"high events-lost"}},
		{name: "main ring, recorded before the security ring", build: session(map[string]uint64{"ringbuf": 900}),
			want: []string{"high events-lost"}},
		{name: "undecodable only", build: session(map[string]uint64{"undecodable": 1, "ringbuf": 0}), want: []string{"medium events-lost"}},
	})
}
