package policy

import "testing"

func TestSensitiveDir(t *testing.T) {
	p := Default()
	for _, tt := range []struct {
		dir  string
		want bool
	}{
		{"/home/dev/.aws", true},
		{"/root/.ssh", true},
		{"/home/dev/.ssh/", true},
		{"/home/dev/.config/gcloud", true},
		{"/home/dev/.aws/sso/cache", true},
		{"/home/dev/.config", false}, // holds ~/.config/hub, but everything keeps its files there
		{"/root/.cache", false},
		{"/home/dev", false},
		{"/home", false},
		{"/", false},
		{"/home/dev/proj", false},
		{"/home/dev/proj/.aws", false},
	} {
		if _, got := p.SensitiveDir(tt.dir, "/home/dev"); got != tt.want {
			t.Errorf("SensitiveDir(%q) = %v, want %v", tt.dir, got, tt.want)
		}
	}
}
