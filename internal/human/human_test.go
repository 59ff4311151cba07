package human

import "testing"

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 processes"}, {1, "1 process"}, {2, "2 processes"}} {
		if got := Count(tt.n, "process", "processes"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{-1, "-1 B"}, {0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {538413, "525.8 KiB"},
		{64 << 20, "64.0 MiB"}, {3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"}} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
