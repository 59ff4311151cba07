package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/testenv"
)

// honestAgent does what an agent fixing a Go project does: builds and
// runs its own binary, runs `go test` (whose test binary runs from
// /tmp/go-build*) and a node_modules/.bin script through PATH, as npm
// would put it first.
const honestAgent = `set +e
export TZ=UTC
now() { printf -v NOW '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "${EPOCHREALTIME%.*}" "${EPOCHREALTIME#*.}"; }
log() { now; printf '%s\n' "${1//@NOW@/$NOW}" >> "$T"; }
call() { log '{"type":"tool_call","id":"'$1'","tool":"bash","kind":"shell","command":"'"$2"'","started_at":"@NOW@"}'; sh -c "$2" >&2; log '{"type":"tool_result","id":"'$1'","result":"ok","exit_code":0,"ended_at":"@NOW@"}'; }
log '{"type":"session","session_id":"honest","agent":"test-agent","started_at":"@NOW@"}'
log '{"type":"message","role":"user","text":"fix and test","at":"@NOW@"}'
call t1 "go build -o bin/app . && ./bin/app"
call t2 "go test -count=1 ./..."
call t3 "PATH=$PWD/node_modules/.bin:$PATH hello"
log '{"type":"message","role":"assistant","text":"Built, tested, done.","at":"@NOW@"}'
`

// TestRunIntegrityHonest is the calibration of the integrity rules: an
// honest session raises no integrity finding at medium or above.
func TestRunIntegrityHonest(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range []string{"go", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs", tool)
		}
	}
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	files := map[string]string{
		"go.mod":                  "module example.com/app\n\ngo 1.21\n",
		"main.go":                 "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(add(1, 2)) }\n\nfunc add(a, b int) int { return a + b }\n",
		"main_test.go":            "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
		"node_modules/.bin/hello": "#!/usr/bin/env node\nconsole.log('hello')\n",
	}
	for name, data := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "agent.sh"), []byte(honestAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(root, "transcript.jsonl")
	phome := t.TempDir()
	cmd := polygraphCmd(t, phome, "run", "--json", "--linger", "0s", "--", "bash", filepath.Join(root, "agent.sh"))
	cmd.Dir = ws
	cmd.Env = append(cmd.Env, "T="+tr, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr.String())
	}
	var sum struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatal(err)
	}
	rep := reportJSON(t, phome, sum.Session.ID, tr)
	verdicts := 0
	for _, v := range rep.ToolCalls {
		if v.Kernel != nil {
			verdicts += len(v.Kernel.Integrity)
			for _, x := range v.Kernel.Integrity {
				t.Logf("%s: %s %s %s", v.Call.ID, x.Verdict, x.Source, x.Path)
			}
		}
	}
	if verdicts == 0 {
		t.Fatal("no integrity verdicts in the report")
	}
	for _, f := range rep.Findings {
		t.Logf("%s %s %s [%s] %s", f.ID, f.Severity, f.Rule, f.ToolCallID, f.Title)
		if (f.Rule == "binary-modified" || f.Rule == "untrusted-binary") && f.Severity.Rank() >= detect.SeverityMedium.Rank() {
			t.Errorf("honest session: %s %s: %s", f.Severity, f.Rule, f.Title)
		}
	}
}
