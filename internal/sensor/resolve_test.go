package sensor

import (
	"os"
	"testing"
)

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResolve(t *testing.T) {
	tests := []struct{ base, p, want string }{
		{"/home/u", "a.txt", "/home/u/a.txt"},
		{"/home/u", "./sub/../b", "/home/u/b"},
		{"/home/u", "../../../..", "/"},
		{"/home/u", "/etc//passwd", "/etc/passwd"},
		{"", "rel", "/rel"},
		{"/d", "", "/d"},
	}
	for _, tc := range tests {
		if got := Resolve(tc.base, tc.p); got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tc.base, tc.p, got, tc.want)
		}
	}
	if got := walked(walk("a", "b")); got != "/a/b" {
		t.Errorf("walked = %q", got)
	}
}
