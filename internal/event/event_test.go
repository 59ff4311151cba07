package event

import (
	"encoding/json"
	"testing"
	"unsafe"
)

// The report holds every event of a session in memory: a million events
// must stay well inside its 500 MB budget, so the fields of the rarer
// kinds live out of line.
func TestEventSize(t *testing.T) {
	if n := unsafe.Sizeof(Event{}); n > 224 {
		t.Errorf("event.Event is %d bytes, want at most 224: keep kind-specific fields in Process or Network", n)
	}
}

func TestNewGivesTheKindsGroups(t *testing.T) {
	for _, k := range Kinds {
		e := New(k)
		wantP := k == KindExec || k == KindFork || k == KindExit
		wantN := k == KindConnect || k == KindBind || k == KindAccept || k == KindDNS || k == KindNet
		if (e.Process != nil) != wantP || (e.Network != nil) != wantN {
			t.Errorf("New(%s): Process %v Network %v, want %v %v", k, e.Process != nil, e.Network != nil, wantP, wantN)
		}
		if e.Process == nil && e.Args() != nil {
			t.Errorf("New(%s).Args() = %v, want nil", k, e.Args())
		}
	}
}

// The groups are embedded, so JSON stays flat (the CLI/JSON contract).
func TestJSONFlat(t *testing.T) {
	e := New(KindConnect)
	e.Addr, e.Port = "192.0.2.1", 443
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
	if back.Network == nil || back.Addr != "192.0.2.1" || back.Process != nil {
		t.Errorf("round trip: %+v", back)
	}
}
