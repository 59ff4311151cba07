package policy

import (
	"slices"
	"testing"
)

func TestNormalise(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/work/p/src/a.go", "./src/a.go"},
		{"/work/p", "."},
		{"/home/dev/.ssh/id_rsa", "~/.ssh/id_rsa"},
		{"/root/.cache/x", "~/.cache/x"},
		{"/usr/lib/x.so", "/usr/lib/x.so"},
		{"out/x.txt", "./out/x.txt"},
	}
	for _, tt := range tests {
		if got := Normalise(tt.in, "/work/p", "/home/dev"); got != tt.want {
			t.Errorf("Normalise(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPathPatterns(t *testing.T) {
	dirs := []string{".", "./src", "./src/pkg/deep", "~", "~/.ssh", "/tmp/*", "/srv/data/x"}
	for i := range 10 {
		dirs = append(dirs, "./node_modules/"+string(rune('a'+i))+"/lib")
	}
	got := PathPatterns(dirs)
	want := []string{"./*", "./node_modules/**", "./src/*", "./src/pkg/**", "/srv/data/**", "/tmp/**", "~/*", "~/.ssh/*"}
	if !slices.Equal(got, want) {
		t.Errorf("PathPatterns = %q, want %q", got, want)
	}
	p, err := Parse([]byte("allowed_paths: ['./src/**', '~/.ssh/*', '/tmp/**']\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{"/work/p/src/a/b.go", true},
		{"/work/p/README.md", false},
		{"/home/dev/.ssh/id_rsa", true},
		{"/tmp/x/y", true},
		{"/work/p", true},
		// A home under /tmp is matched as the home, not as /tmp.
		{"/tmp/h/.aws/credentials", false},
	} {
		home := "/home/dev"
		if tt.path == "/tmp/h/.aws/credentials" {
			home = "/tmp/h"
		}
		if got := p.AllowedPath(tt.path, "/work/p", home); got != tt.ok {
			t.Errorf("AllowedPath(%q) = %v, want %v", tt.path, got, tt.ok)
		}
	}
}
