package detect

import (
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// TestSensorTamperAndBPFCall runs the sensor-tamper and bpf-call cases.
func TestSensorTamperAndBPFCall(t *testing.T) {
	call := func(kind event.Kind, c event.Call, result int64) *event.Event {
		return &event.Event{Kind: kind, Call: &c, Result: event.Ptr(result)}
	}
	runCases(t, []ruleCase{
		{
			name: "signals to the recorder",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "kill -9 4242")
				sh := ag.spawn(200, "t1", "/bin/sh", "sh", "-c", "kill -9 4242")
				b.emit(sh, call(event.KindSignal, event.Call{TargetPID: 4242, Method: "kill", Signo: 9}, 0))
				b.emit(sh, call(event.KindSignal, event.Call{TargetPID: 4242, Method: "tgkill", Signo: 0}, -1))
				b.emit(sh, call(event.KindSignal, event.Call{TargetPID: 0, Method: "kill", Signo: 2}, 0))
				pg := int32(-4200)
				b.emit(sh, call(event.KindSignal, event.Call{TargetPID: uint32(pg), Method: "kill", Signo: 15}, 0))
			},
			want: []string{"high sensor-tamper", "high sensor-tamper", "medium sensor-tamper", "medium sensor-tamper"},
		},
		{
			name: "bpf calls",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "bpftool prog load x.o /sys/fs/bpf/x")
				bt := ag.spawn(200, "t1", "/usr/sbin/bpftool", "bpftool", "prog", "load")
				b.emit(bt, call(event.KindBPF, event.Call{Method: "bpf", BPFCmd: "BPF_MAP_CREATE"}, 3))
				b.emit(bt, call(event.KindBPF, event.Call{Method: "bpf", BPFCmd: "BPF_MAP_CREATE"}, 4))
				b.emit(bt, call(event.KindBPF, event.Call{Method: "bpf", BPFCmd: "BPF_PROG_LOAD"}, 5))
				b.emit(bt, call(event.KindBPF, event.Call{Method: "bpf", BPFCmd: "BPF_LINK_CREATE"}, -1))
			},
			want: []string{"high bpf-call", "medium bpf-call", "medium bpf-call"},
		},
	})
}
