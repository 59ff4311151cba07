package baseline

import (
	"strings"
	"testing"
	"time"
)

func TestMedianMAD(t *testing.T) {
	tests := []struct {
		in       []float64
		med, mad float64
	}{
		{[]float64{3}, 3, 0},
		{[]float64{1, 2, 3, 4, 100}, 3, 1},
		{[]float64{2, 4, 6, 8}, 5, 2},
	}
	for _, tt := range tests {
		if med, mad := MedianMAD(tt.in); med != tt.med || mad != tt.mad {
			t.Errorf("MedianMAD(%v) = %v, %v; want %v, %v", tt.in, med, mad, tt.med, tt.mad)
		}
	}
}

// sample is a session whose one shell call started procs processes.
func sample(id string, procs int, bytes uint64) *Sample {
	a := NewActivity()
	a.Calls, a.Procs, a.Burst = 1, []int{procs}, []int{procs}
	a.Programs.Add("bash", 1)
	a.Hosts.Add("api.example:443", 2)
	a.BytesOut["api.example:443"] = bytes
	return &Sample{Session: id, Agent: "codex", Version: "1.0", Kinds: map[string]*Activity{"shell": a}}
}

func TestCheckRates(t *testing.T) {
	p := &Profile{Agent: "codex", Version: "1.0"}
	for i, n := range []int{4, 5, 6, 5} {
		if !p.Add(sample(string(rune('a'+i)), n, 1000), time.Now()) {
			t.Fatal("not learned")
		}
	}
	if p.Add(sample("a", 1, 1), time.Now()) {
		t.Error("session a learned twice")
	}
	if devs, _ := Check(p, sample("x", 9, 1200)); len(devs) != 0 {
		t.Errorf("a busy but ordinary session: %+v", devs)
	}
	devs, _ := Check(p, sample("y", 80, 500000))
	var what []string
	for _, d := range devs {
		what = append(what, d.What)
		if d.What == "procs" && !strings.Contains(d.Detail, "against a median of 5") {
			t.Errorf("procs detail %q", d.Detail)
		}
	}
	if strings.Join(what, ",") != "procs,burst,bytes-out" {
		t.Errorf("deviations %v, want procs, burst, bytes-out", what)
	}
}

func TestStore(t *testing.T) {
	s := Open(t.TempDir())
	if p, err := s.Select("codex", "2.0"); p != nil || err != nil {
		t.Fatalf("empty store: %v %v", p, err)
	}
	for _, v := range []string{"1.0", "1.1"} {
		p := &Profile{Agent: "codex", Version: v}
		p.Add(sample("s-"+v, 3, 10), time.Now())
		if v == "1.1" {
			p.Add(sample("t-"+v, 3, 10), time.Now())
		}
		if err := s.Save(p); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := s.Select("codex", "1.0"); err != nil || p == nil || p.Version != "1.0" {
		t.Errorf("exact version: %v %v", p, err)
	}
	if p, err := s.Select("codex", "2.0"); err != nil || p == nil || p.Version != "1.1" {
		t.Errorf("another version: want the largest profile, got %v %v", p, err)
	}
	if list, err := s.List(); err != nil || len(list) != 2 || list[0].Key() != "codex@1.0" {
		t.Errorf("List: %v %v", list, err)
	}
}
