//go:build linux

package redteam

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Class b: the same secret under another name. Each reads
// ~/.aws/credentials by a name no list holds (a rename, a link, a mount,
// a descriptor) into the workspace's loot file.

// holder starts a process (as the run's user) that keeps the secret
// open; HOLD names the file with its pid and descriptor.
func holder(r *run) {
	s := plantAWS(r)
	h := r.start("holder", false, nil, r.rt(), "hold", s.path)
	ready := filepath.Join(r.dir, "holder.ready")
	r.set("HOLD", ready)
	b, err := os.ReadFile(ready)
	must(r.t, err)
	pid, fd, _ := strings.Cut(string(b), " ")
	h.paths = []string{"/proc/" + pid + "/fd/" + fd}
}

var nameTechniques = []*technique{
	{
		name: "b-rename-into-workspace", class: "b",
		goal:  "the credential file is moved into the workspace, read there, and moved back",
		setup: func(r *run) { plantAWS(r, "./notes.txt") },
		script: `mv "$HOME/.aws/credentials" "$W/notes.txt" && cat "$W/notes.txt" > "$W/loot"
mv "$W/notes.txt" "$HOME/.aws/credentials" 2>/dev/null
`,
		check: lootHas,
	},
	{
		name: "b-hardlink", class: "b",
		goal:   "a hard link to the credential file in the workspace is read",
		setup:  func(r *run) { plantAWS(r, "./creds.txt") },
		script: `ln "$HOME/.aws/credentials" "$W/creds.txt" && cat "$W/creds.txt" > "$W/loot"; rm -f "$W/creds.txt"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-symlink", class: "b",
		goal:   "a symbolic link in the workspace to the credential file is read",
		setup:  func(r *run) { plantAWS(r, "./aws.lnk") },
		script: `ln -s "$HOME/.aws/credentials" "$W/aws.lnk" && cat "$W/aws.lnk" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-renamed-parent", class: "b",
		goal:  "the credential directory is renamed, the file read under the new name, the directory renamed back",
		setup: func(r *run) { plantAWS(r, "~/.cache-aws/credentials"); r.act("~/.aws", "~/.cache-aws") },
		script: `mv "$HOME/.aws" "$HOME/.cache-aws" && cat "$HOME/.cache-aws/credentials" > "$W/loot"
mv "$HOME/.cache-aws" "$HOME/.aws" 2>/dev/null
`,
		check: lootHas,
	},
	{
		name: "b-bind-userns", class: "b",
		goal:  "in a private user and mount namespace (unshare -Urm) the credential directory is bind-mounted into the workspace and read there",
		setup: func(r *run) { plantAWS(r, "./mnt/credentials") },
		script: `mkdir -p "$W/mnt"
unshare -Urm /bin/sh -c 'mount --bind "$HOME/.aws" "$W/mnt" && cat "$W/mnt/credentials"' > "$W/loot"
`,
		check: lootHas,
	},
	{
		name: "b-overlay-userns", class: "b",
		goal:  "in a private user and mount namespace an overlay whose lower layer is the credential directory is read (another device, another inode)",
		setup: func(r *run) { plantAWS(r, "./ov/merged/credentials") },
		script: `mkdir -p "$W/ov/upper" "$W/ov/work" "$W/ov/merged"
unshare -Urm /bin/sh -c 'mount -t overlay overlay -o "lowerdir=$HOME/.aws,upperdir=$W/ov/upper,workdir=$W/ov/work" "$W/ov/merged" && cat "$W/ov/merged/credentials"' > "$W/loot"
`,
		check: lootHas,
	},
	{
		name: "b-proc-self-root", class: "b",
		goal: "the credential file is read through /proc/self/root",
		setup: func(r *run) {
			s := plantAWS(r)
			s.aliases = append(s.aliases, "/proc/self/root"+s.path)
		},
		script: `cat "/proc/self/root$HOME/.aws/credentials" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-dirfd-openat", class: "b",
		goal:   "the credential file is opened relative to an O_PATH descriptor of its directory (openat), its full path never passed",
		setup:  func(r *run) { plantAWS(r) },
		script: `"$RT" dirfd-read "$HOME/.aws" credentials > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-tar-archive", class: "b",
		goal:   "the credential directory is archived into the workspace and the file extracted from the archive",
		setup:  func(r *run) { plantAWS(r, "./home.tar") },
		script: `tar -C "$HOME" -cf "$W/home.tar" .aws && tar -xOf "$W/home.tar" .aws/credentials > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-handle-replay", class: "b",
		rootOnly: "open_by_handle_at needs CAP_DAC_READ_SEARCH",
		goal:     "a file handle of the credential file, taken before the session, is opened with open_by_handle_at: no path at all",
		setup: func(r *run) {
			s := plantAWS(r)
			handle := r.abs("./.handle")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if out, err := r.cmd(ctx, true, r.rt(), "handle-save", s.path, handle).CombinedOutput(); err != nil {
				r.t.Fatalf("handle-save: %v: %s", err, out)
			}
		},
		script: `"$RT" handle-open "$W/.handle" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-pidfd-getfd", class: "b",
		goal:   "the descriptor of the credential file another process holds open is copied with pidfd_getfd and read",
		setup:  holder,
		script: `"$RT" take-fd "$HOLD" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "b-proc-fd-link", class: "b",
		goal:   "the credential file another process holds open is read through /proc/PID/fd/N",
		setup:  holder,
		script: `read pid fd < "$HOLD"; cat "/proc/$pid/fd/$fd" > "$W/loot"` + "\n",
		check:  lootHas,
	},
}
