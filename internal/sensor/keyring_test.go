package sensor

import (
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// TestDecodeKey: an EV_KEY record names its operation, key, keyring and
// the strings the call passed; a describe's answer gives the type and the
// description (which may hold ';'); an answer not of that shape gives
// neither.
func TestDecodeKey(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	tests := []struct {
		name         string
		op           uint32
		serial, ring int32
		bytes        uint32
		result       int64
		typ, desc    string
		want         event.Key
	}{
		{"read", 11, 123, 0, 40, 40, "", "", event.Key{KeyOp: "read", KeySerial: 123, KeyBytes: 40}},
		{"search", 10, 123, -4, 0, 123, "user", "app:token", event.Key{KeyOp: "search", KeySerial: 123, KeyRing: -4, KeyType: "user", KeyDesc: "app:token"}},
		{"describe", 6, 123, 0, 0, 33, "", "user;1000;1000;3f010000;a;b", event.Key{KeyOp: "describe", KeySerial: 123, KeyType: "user", KeyDesc: "a;b"}},
		{"describe, no answer", 6, 123, 0, 0, 33, "", "garbled", event.Key{KeyOp: "describe", KeySerial: 123}},
		{"add", 0x100, 77, -4, 0, 77, "user", "mine", event.Key{KeyOp: "add", KeySerial: 77, KeyRing: -4, KeyType: "user", KeyDesc: "mine"}},
		{"request", 0x101, 0, 0, 0, -126, "logon", "x", event.Key{KeyOp: "request", KeyType: "logon", KeyDesc: "x"}},
		{"unknown command", 99, 0, 0, 0, 0, "", "", event.Key{KeyOp: "keyctl_99"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var typ, desc []byte
			if tc.typ != "" {
				typ = append([]byte(tc.typ), 0)
			}
			if tc.desc != "" {
				desc = append([]byte(tc.desc), 0)
			}
			r := polygraphEvKey{H: hdr(evKey, 5, 1, 1, "rt"), Result: tc.result, Op: tc.op, Serial: tc.serial, Ring: tc.ring,
				Bytes: tc.bytes, TypeLen: uint16(len(typ)), DescLen: uint16(len(desc))}
			ev, err := d.Decode(rec(&r, typ, desc))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != event.KindKey || ev.Key == nil || *ev.Key != tc.want || *ev.Result != tc.result {
				t.Errorf("got %s %+v result %d, want %+v", ev.Kind, ev.Key, *ev.Result, tc.want)
			}
		})
	}
	// a record whose strings run past its end is refused
	r := polygraphEvKey{H: hdr(evKey, 5, 1, 1, "rt"), TypeLen: 200}
	if _, err := d.Decode(rec(&r, []byte("user\x00"))); err == nil {
		t.Error("a record shorter than its strings decoded")
	}
}
