package event

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// The report holds every event of a session in memory: a million events
// must stay well inside its 500 MB budget, so the fields of the rarer
// kinds live out of line.
func TestEventSize(t *testing.T) {
	// 224 bytes of common fields and one pointer per field group (Process,
	// Object, Network, Call, Ring, Attr, Key, Mount).
	if n := unsafe.Sizeof(Event{}); n > 248 {
		t.Errorf("event.Event is %d bytes, want at most 248: keep kind-specific fields in a field group", n)
	}
}

func TestNewGivesTheKindsGroups(t *testing.T) {
	for _, k := range Kinds {
		e := New(k)
		wantP := k == KindExec || k == KindFork || k == KindExit
		wantN := k == KindConnect || k == KindBind || k == KindAccept || k == KindDNS || k == KindNet || k == KindSend || k == KindUring || k == KindPeer
		wantC := k == KindInject || k == KindSignal || k == KindBPF || k == KindMemRead || k == KindFollow
		if (e.Process != nil) != wantP || (e.Network != nil) != wantN || (e.Call != nil) != wantC {
			t.Errorf("New(%s): Process %v Network %v Call %v, want %v %v %v", k, e.Process != nil, e.Network != nil,
				e.Call != nil, wantP, wantN, wantC)
		}
		if e.Process == nil && e.Args() != nil {
			t.Errorf("New(%s).Args() = %v, want nil", k, e.Args())
		}
	}
}

// The groups are embedded, so JSON stays flat (the CLI/JSON contract).
func TestJSONFlat(t *testing.T) {
	e := New(KindConnect)
	e.Network.Addr, e.Network.Port = "192.0.2.1", 443
	e.Result = Ptr(int64(0))
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["addr"] != "192.0.2.1" || m["port"] != float64(443) || m["Network"] != nil {
		t.Errorf("JSON %s: want addr and port at the top level", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Network == nil || back.Addr() != "192.0.2.1" || back.Process != nil {
		t.Errorf("round trip: %+v", back)
	}
}

func TestKindPredicates(t *testing.T) {
	file := map[Kind]bool{KindOpen: true, KindRename: true, KindUnlink: true, KindMkdir: true, KindChmod: true, KindLink: true,
		KindChown: true, KindXattr: true, KindMount: true}
	network := map[Kind]bool{KindConnect: true, KindBind: true, KindAccept: true, KindDNS: true, KindNet: true, KindSend: true}
	for _, k := range Kinds {
		if k.IsFile() != file[k] {
			t.Errorf("%s.IsFile() = %v", k, k.IsFile())
		}
		if k.IsNetwork() != network[k] {
			t.Errorf("%s.IsNetwork() = %v", k, k.IsNetwork())
		}
		if k.IsFile() && k.IsNetwork() {
			t.Errorf("%s is both a file and a network kind", k)
		}
	}
}

func TestIsWrite(t *testing.T) {
	open := func(access string) *Event { e := New(KindOpen); e.Access = access; return e }
	mkdir := func(result int64) *Event { e := New(KindMkdir); e.Result = Ptr(result); return e }
	tests := []struct {
		name string
		e    *Event
		want bool
	}{
		{"open for reading", open("read"), false},
		{"open for writing", open("write"), true},
		{"open creating", open("read,create"), true},
		{"mkdir", mkdir(0), true},
		{"mkdir of an existing directory", mkdir(-17), false},
		{"mkdir denied", mkdir(-13), true},
		{"unlink", New(KindUnlink), true},
		{"rename", New(KindRename), true},
	}
	for _, tc := range tests {
		if got := tc.e.IsWrite(); got != tc.want {
			t.Errorf("%s: IsWrite() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestInSeqOrder: events in order come back as they are; out of order, a
// sorted copy, the caller's slice untouched.
func TestInSeqOrder(t *testing.T) {
	a, b, c := &Event{Seq: 1}, &Event{Seq: 2}, &Event{Seq: 3}
	in := []*Event{a, b, c}
	if got, copied := InSeqOrder(in); copied || &got[0] != &in[0] {
		t.Errorf("ordered input copied (%v)", copied)
	}
	in = []*Event{c, a, b}
	got, copied := InSeqOrder(in)
	if !copied || got[0] != a || got[1] != b || got[2] != c {
		t.Errorf("got %v %v %v, copied %v", got[0].Seq, got[1].Seq, got[2].Seq, copied)
	}
	if in[0] != c {
		t.Error("the caller's slice was reordered")
	}
}

// TestAccessors: every field of every embedded group has an accessor of
// the same name and type on *Event, and reading it through an event that
// lacks the group gives the zero value, not a panic.
func TestAccessors(t *testing.T) {
	et := reflect.TypeOf(Event{})
	bare := reflect.ValueOf(&Event{Kind: KindOpen})
	groups := 0
	for i := 0; i < et.NumField(); i++ {
		f := et.Field(i)
		if !f.Anonymous || f.Type.Kind() != reflect.Pointer {
			continue
		}
		groups++
		gt := f.Type.Elem()
		for j := 0; j < gt.NumField(); j++ {
			gf := gt.Field(j)
			m := bare.MethodByName(gf.Name)
			if !m.IsValid() {
				t.Errorf("%s.%s has no accessor on *Event", f.Name, gf.Name)
				continue
			}
			if m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0) != gf.Type {
				t.Errorf("accessor %s is %s, want func() %s", gf.Name, m.Type(), gf.Type)
				continue
			}
			if out := m.Call(nil)[0]; !out.IsZero() {
				t.Errorf("%s() on an event without %s = %v, want the zero value", gf.Name, f.Name, out)
			}
		}
	}
	if groups < 5 {
		t.Errorf("%d embedded groups, want at least 5 (Process, Object, Network, Call, Ring)", groups)
	}
	e := New(KindExec)
	e.Process.Argv = []string{"sh"}
	if got := e.Argv(); len(got) != 1 || got[0] != "sh" {
		t.Errorf("Argv() = %q, want the group's", got)
	}
}
