package policy

import (
	"testing"
)

// FuzzParse: whatever a policy file holds (one in a directory anything
// the user runs can write), Parse and Check end without a panic, and a
// policy that parses answers every question the rules ask of it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"rules:\n  mass-publish: {enabled: false}\negress:\n  allow: [git.corp.example:443]\n",
		"defaults: false\nsensitive_paths: ['~/.ssh/**', {path: '!**/x', severity: high}]\n",
		"tamper_paths: ['**/**/*?*']\nthresholds: {dns_window: 3s}\n",
		"{\"egress\": {\"allow\": [\"[::1]:80\", \"10.0.0.0/8\"]}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		Check(data, "fuzz")
		p, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		for _, path := range []string{"/home/u/.ssh/id_rsa", "/etc/passwd", "/w/.env", ""} {
			p.Sensitive(path, "/home/u")
			p.Tamper(path, "/home/u")
			p.Noise(path, "/home/u")
			p.AllowedPath(path, "/w", "/home/u")
		}
		p.AllowEgress("api.example.com", "10.1.2.3", 443)
		p.TestRunner([]string{"go", "test", "./..."})
		p.Protect("/etc/polygraph/policy.yaml")
	})
}
