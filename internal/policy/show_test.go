package policy

import (
	"reflect"
	"strings"
	"testing"
)

// TestMarshalRoundTrip: the document policy show prints loads back as the
// same policy, for the built-in one and for one a file changed.
func TestMarshalRoundTrip(t *testing.T) {
	custom, err := Parse([]byte("rules:\n  sensitive-read: {enabled: false, severity: low}\negress:\n  allow: ['10.0.0.0/8:5432']\n  dns: false\nallowed_programs: [git, 'go*']\nallowed_paths: ['src/**', '~/.cache/**']\nthresholds:\n  test_min_duration: 1s\nkill:\n  exec: [/usr/bin/nc]\n  write: ['~/.bashrc', /etc/sudoers.d]\nexec_gate: true\n"), "custom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Policy{Default(), custom} {
		t.Run(p.Source, func(t *testing.T) {
			doc, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if errs := Check(doc, "shown.yaml"); len(errs) > 0 {
				t.Fatalf("policy check refuses the shown policy: %v", errs)
			}
			back, err := Parse(doc, "shown.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(doc), "# "+keyComments["sensitive_paths"]) {
				t.Error("the shown policy lacks its comments")
			}
			back.Source = p.Source
			if !reflect.DeepEqual(exported(back), exported(p)) {
				again, _ := back.Marshal()
				t.Errorf("round trip changed the policy:\n%s\nvs\n%s", doc, again)
			}
		})
	}
}

// exported is the policy's exported fields, what a file can say.
func exported(p *Policy) map[string]any {
	out := map[string]any{}
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			out[f.Name] = v.Field(i).Interface()
		}
	}
	return out
}

func TestCheckReportsEveryProblemWithItsLine(t *testing.T) {
	data := "version: 1\nrules:\n  sensitive-read: {severity: severe}\n  no-such: {enabled: false}\negress:\n  alow: [x]\n  allow: ['host:x', ok.example]\nthresholds:\n  publish_count: many\nallowed_paths: ['']\ntest_runners: ['go [']\nkill:\n  exec: [nc]\n  sig: [x]\nexec_gate: maybe\n"
	errs := Check([]byte(data), "p.yaml")
	want := []string{
		`p.yaml:3: rule sensitive-read: bad severity "severe"`,
		`p.yaml:4: unknown rule "no-such"`,
		`p.yaml:6: unknown key "alow" in egress`,
		`p.yaml:7: egress.allow: egress entry "host:x"`,
		`p.yaml:9: cannot unmarshal`,
		`p.yaml:10: allowed_paths: `,
		`p.yaml:11: test_runners: `,
		`p.yaml:13: kill.exec: kill: "nc"`,
		`p.yaml:14: unknown key "sig" in kill`,
		`p.yaml:15: cannot unmarshal`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to start %q", i, errs[i], w)
		}
	}
	if errs := Check([]byte("egress:\n  allow: [api.example:443]\n"), "ok.yaml"); errs != nil {
		t.Errorf("a good file: %v", errs)
	}
}
