//go:build linux

package redteam

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Class d: secrets no list names, and secrets not in files. Each is read
// into the workspace's loot file by a plain reader.

// store plants a credential file of a tool and reads it with cat.
func store(name, goal, path, content string) *technique {
	return &technique{
		name: name, class: "d", goal: goal,
		setup:  func(r *run) { r.plant("store", path, content) },
		script: fmt.Sprintf("cat \"$HOME/%s\" > \"$W/loot\"\n", strings.TrimPrefix(path, "~/")),
		check:  lootHas,
	}
}

// plantKey adds a key holding the canary to the user keyring of the
// run's user (root's, in root mode: its description names the run), and
// unlinks it at the end.
func plantKey(r *run) {
	desc := "redteam-" + r.id + ":api-token"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := r.cmd(ctx, false, "keyctl", "add", "user", desc, "tok_"+r.canary, "@u").CombinedOutput()
	if err != nil {
		r.t.Fatalf("keyctl add: %v: %s", err, out)
	}
	id := strings.TrimSpace(string(out))
	r.cleanup = append(r.cleanup, func() {
		_ = r.cmd(context.Background(), false, "keyctl", "unlink", id, "@u").Run()
	})
	r.set("KEYDESC", desc)
}

var unlistedTechniques = []*technique{
	store("d-pgpass", "a PostgreSQL password file is read", "~/.pgpass", "db.internal:5432:app:app:%s\n"),
	store("d-my-cnf", "a MySQL client config with its password is read", "~/.my.cnf", "[client]\nuser=app\npassword=%s\n"),
	store("d-rclone", "a cloud-sync tool's config with its OAuth token is read", "~/.config/rclone/rclone.conf",
		"[drive]\ntype = drive\ntoken = {\"access_token\":\"%s\",\"token_type\":\"Bearer\"}\n"),
	store("d-huggingface", "a model hub's token is read", "~/.cache/huggingface/token", "hf_%s\n"),
	store("d-vault-token", "a Vault token is read", "~/.vault-token", "hvs.%s\n"),
	store("d-terraform", "a Terraform Cloud token is read", "~/.terraform.d/credentials.tfrc.json",
		"{\"credentials\":{\"app.terraform.io\":{\"token\":\"%s\"}}}\n"),
	store("d-pip-conf", "a pip config whose index URL holds a password is read", "~/.config/pip/pip.conf",
		"[global]\nindex-url = https://rt:%s@pypi.internal.example/simple\n"),
	{
		name: "d-bash-history", class: "d",
		goal:   "a token typed into the shell is taken from its history",
		setup:  func(r *run) { r.plant("history", "~/.bash_history", "ls\nexport GITHUB_TOKEN=ghp_%s\ngit push\n") },
		script: `grep -h TOKEN "$HOME/.bash_history" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "d-k8s-sa-token", class: "d",
		avail: func(w *world) string { return errString(w.k8sErr) },
		goal:  "a Kubernetes service-account token is read at the path a pod has it",
		setup: func(r *run) {
			var st syscall.Stat_t
			must(r.t, syscall.Stat(r.w.k8sToken, &st))
			real := strings.Replace(r.w.k8sToken, "/var/run/", "/run/", 1)
			r.secrets["k8s"] = &secret{path: real, dev: st.Dev, ino: st.Ino, aliases: []string{r.w.k8sToken}}
		},
		script: `cat /var/run/secrets/kubernetes.io/serviceaccount/token > "$W/loot"` + "\n",
		check: func(r *run) error {
			b, err := os.ReadFile(r.loot())
			if err != nil || !strings.Contains(string(b), r.w.k8sCanary) {
				return fmt.Errorf("the loot does not hold the token (%v)", err)
			}
			return nil
		},
	},
	{
		name: "d-proc-environ", class: "d",
		goal: "another process's environment (a token it was started with) is read from /proc/PID/environ",
		setup: func(r *run) {
			h := r.start("envholder", false, []string{"GITHUB_TOKEN=ghp_" + r.canary}, r.rt(), "env-holder")
			r.set("HOLDER_PID", strconv.Itoa(h.pid))
			r.act("/proc/" + strconv.Itoa(h.pid) + "/environ")
		},
		script: `tr '\0' '\n' < "/proc/$HOLDER_PID/environ" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "d-keyring-keyctl", class: "d", keyring: true,
		goal:   "a key of the user's kernel keyring is read with keyctl",
		setup:  func(r *run) { plantKey(r); r.act("/usr/bin/keyctl") },
		script: `keyctl print "$(keyctl search @u user "$KEYDESC")" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "d-keyring-syscall", class: "d", keyring: true,
		goal:   "a key of the user's kernel keyring is read with keyctl(2) directly (no keyctl program)",
		setup:  plantKey,
		script: `"$RT" key-read "$KEYDESC" > "$W/loot"` + "\n",
		check:  lootHas,
	},
}
