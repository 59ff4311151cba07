package sensor

import "testing"

func TestDefaultRingBytes(t *testing.T) {
	for _, tc := range []struct{ ncpu, want int }{
		{1, 8 << 20}, {2, 8 << 20}, {3, 16 << 20}, {4, 16 << 20}, {8, 32 << 20}, {16, 64 << 20}, {256, 64 << 20},
	} {
		if got := DefaultRingBytes(tc.ncpu); got != tc.want {
			t.Errorf("DefaultRingBytes(%d) = %d MiB, want %d MiB", tc.ncpu, got>>20, tc.want>>20)
		}
	}
}

func TestParseRingSize(t *testing.T) {
	for in, want := range map[string]int{"16": 16 << 20, "8M": 8 << 20, "64MiB": 64 << 20, " 1 ": 1 << 20} {
		if got, err := ParseRingSize(in); err != nil || got != want {
			t.Errorf("ParseRingSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "3", "2048", "-8", "16G", "x"} {
		if _, err := ParseRingSize(bad); err == nil {
			t.Errorf("ParseRingSize(%q): no error", bad)
		}
	}
}
