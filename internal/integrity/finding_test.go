package integrity

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestFinding(t *testing.T) {
	tests := []struct {
		name     string
		v        Verdict
		rule     string
		severity string
	}{
		{"verified", Verdict{Status: Verified, Source: SourceDpkg}, "", ""},
		{"modified against dpkg", Verdict{Status: Modified, Source: SourceDpkg, Package: "coreutils", ExpectedAlgo: "md5"}, RuleBinaryModified, "high"},
		{"modified against a pin", Verdict{Status: Modified, Source: SourcePin, ExpectedAlgo: "sha256"}, RuleBinaryModified, "high"},
		{"changed since first seen", Verdict{Status: Modified, Source: SourceFirstSeen, ExpectedAlgo: "sha256"}, RuleBinaryModified, "medium"},
		{"unknown, nowhere special", Verdict{Status: Unknown, Location: &Location{}}, "", ""},
		{"unknown, only user-writable", Verdict{Status: Unknown, Location: &Location{UserWritable: true}}, "", ""},
		{"unknown in the workspace", Verdict{Status: Unknown, Location: &Location{Workspace: true}}, RuleUntrustedBinary, "info"},
		{"unknown in a workspace under /tmp", Verdict{Status: Unknown, Location: &Location{Workspace: true, Temp: true}}, RuleUntrustedBinary, "info"},
		{"unknown in temp", Verdict{Status: Unknown, Location: &Location{Temp: true}}, RuleUntrustedBinary, "low"},
		{"unknown, shadowing", Verdict{Status: Unknown, Location: &Location{Temp: true, Shadows: "/usr/bin/git"}}, RuleUntrustedBinary, "medium"},
		{"unavailable", Verdict{Status: Unavailable, Reason: "gone"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := tt.v.Finding()
			if ok != (tt.rule != "") || f.Rule != tt.rule || f.Severity != tt.severity {
				t.Fatalf("Finding() = %+v, %v; want rule %q severity %q", f, ok, tt.rule, tt.severity)
			}
			if ok && (len(f.ATTACK) == 0 || len(f.OWASPLLM) == 0 || f.Title == "" || f.Detail == "") {
				t.Errorf("finding lacks mappings or text: %+v", f)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	home := t.TempDir()
	dl := filepath.Join(home, "Downloads")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		t.Fatal(err)
	}
	world := filepath.Join(home, "shared")
	if err := os.MkdirAll(world, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(world, 0o777)
	ws := filepath.Join(home, "repo")
	l := newLocator([]string{ws}, []string{"/nonexistent-temp"}, ws+":/usr/bin")
	tests := []struct {
		path string
		want Location
	}{
		{filepath.Join(dl, "installer"), Location{Download: true}},
		{filepath.Join(world, "tool"), Location{UserWritable: true}},
		{filepath.Join(ws, "bin", "tool"), Location{Workspace: true}},
		{filepath.Join(ws, "git"), Location{Workspace: true, Shadows: "/usr/bin/git"}},
		// named like a tool, but in no PATH directory: it hides nothing
		{filepath.Join(ws, "bin", "git"), Location{Workspace: true}},
		{"/usr/bin/git", Location{}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if _, err := os.Stat("/usr/bin/git"); err != nil && tt.want.Shadows != "" {
				t.Skip("no /usr/bin/git")
			}
			if got := l.locate(tt.path); *got != tt.want {
				t.Errorf("locate = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestCancelledCheck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := newChecker(t, Options{NoDpkg: true})
	if v := c.Check(ctx, Request{Path: "/usr/bin/true"}).Binary; v.Status != Unavailable || v.Reason != "recording ended before it was hashed" {
		t.Errorf("cancelled: %+v", v)
	}
}
