package main

import (
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// io_uring operations name the operation, and a twin says how it came.
func TestEventDetailsUring(t *testing.T) {
	ring := func(op string) *event.Ring { return &event.Ring{Via: event.ViaRing, RingOp: op} }
	tests := []struct {
		name string
		ev   *event.Event
		want string
	}{
		{"open via io_uring", &event.Event{Kind: event.KindOpen, Path: "/h/.aws/credentials", Access: "read",
			Result: event.Ptr(int64(4)), Ring: ring("openat")}, "/h/.aws/credentials read fd 4 via io_uring openat"},
		{"read", &event.Event{Kind: event.KindUring, Path: "/etc/passwd", Result: event.Ptr(int64(42)),
			Network: &event.Network{}, Ring: ring("read")}, "read /etc/passwd = 42"},
		{"send", &event.Event{Kind: event.KindUring, Result: event.Ptr(int64(5)), Ring: ring("send"),
			Network: &event.Network{Family: "ipv4", Addr: "127.0.0.1", Port: 8080}}, "send 127.0.0.1:8080 = 5"},
		{"totals", &event.Event{Kind: event.KindUring, Path: "/x", Network: &event.Network{},
			Ring: &event.Ring{Via: event.ViaRing, RingOp: "write", RingOps: 3, RingBytes: 30}}, "write /x total 3 ops, 30 B"},
		{"setup", &event.Event{Kind: event.KindUring, Result: event.Ptr(int64(3)), Network: &event.Network{},
			Ring: ring("setup")}, "setup fd 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventDetails(tt.ev); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
