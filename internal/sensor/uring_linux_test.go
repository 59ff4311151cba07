package sensor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// kernelTypes is a BTF spec holding the named structs, each with the
// given members (u8 each: only the names matter to probeRing).
func kernelTypes(t *testing.T, structs map[string][]string) *btf.Spec {
	t.Helper()
	u8 := &btf.Int{Name: "u8", Size: 1}
	var types []btf.Type
	for name, members := range structs {
		st := &btf.Struct{Name: name, Size: uint32(len(members))}
		for i, m := range members {
			st.Members = append(st.Members, btf.Member{Name: m, Type: u8, Offset: btf.Bits(8 * i)})
		}
		types = append(types, st)
	}
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestProbeRing(t *testing.T) {
	tests := []struct {
		name    string
		structs map[string][]string
		want    string // a word of the note, "" for none
	}{
		{"6.13 and later", map[string][]string{"io_kiocb": {"opcode", "tctx"}, "io_open": {"dfd"}}, ""},
		{"6.0 to 6.12", map[string][]string{"io_kiocb": {"opcode", "task"}, "io_open": {"dfd"}}, "6.13"},
		{"before 6.0", map[string][]string{"io_kiocb": {"opcode", "task"}}, "6.0"},
		{"no io_uring", map[string][]string{"task_struct": {"pid"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Sensor{}
			s.probeRing(kernelTypes(t, tt.structs))
			got := strings.Join(s.unavailable, "; ")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("unavailable = %q, want a note naming %q", got, tt.want)
			}
		})
	}
}
