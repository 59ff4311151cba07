#!/usr/bin/env bash
# A newcomer's walkthrough: runs every command of README.md's marked blocks
# (a "<!-- walkthrough -->" line before a ```sh block), in order, as
# written, and fails at the first that fails. Run as root (.ci/run), from
# anywhere; `sudo ` is dropped (it runs as root).
#
# What it changes, and why (each is said as it happens):
#   - PREFIX=/usr/local becomes a staging prefix, put first on PATH, so the
#     machine's /usr/local is left alone; it is uninstalled at the end;
#   - the sessions go to a fresh POLYGRAPH_HOME, so `last` is this run's;
#   - the commands run in a scratch directory (report.txt, demo.html, ...);
#   - `polygraph watch` runs until its ready line, then gets Ctrl-C (SIGINT)
#     and must exit 130, as an interrupted verb does;
#   - `polygraph ui` listens on a free loopback port, must answer its
#     session list, then gets Ctrl-C;
#   - http://localhost:4318 becomes a small OTLP/HTTP sink started here
#     (python3), which must receive the trace.
# A command outside the marked blocks must say on its line why it is not
# run here ("not run by the walkthrough: ...", or that
# test/package/check.sh runs it), else the walkthrough fails; those are
# listed at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
readme=$repo/README.md
fail() { echo "walkthrough: FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
	fail "run it as root (it installs, and the demo loads BPF programs)"
fi

work=$(mktemp -d)
stage=$work/prefix
export POLYGRAPH_HOME=$work/home
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	make -s -C "$repo" uninstall PREFIX="$stage" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/cwd"
cd "$work/cwd"

# The commands, in order: the lines of the ```sh block after each marker.
mapfile -t cmds < <(awk '
	/^<!-- walkthrough -->$/ { marked = 1; next }
	marked && /^```sh$/ { inblock = 1; marked = 0; next }
	inblock && /^```$/ { inblock = 0; next }
	inblock && NF && $1 !~ /^#/ { print }
	{ if (!/^```sh$/) marked = marked && /^$/ }
' "$readme")
[ "${#cmds[@]}" -ge 10 ] || fail "found ${#cmds[@]} marked commands in README.md; the markers are gone?"
# Every other command of README's ```sh blocks must say why it is not run
# here, so none is left unchecked by accident.
unmarked=$(awk '
	/^<!-- walkthrough -->$/ { marked = 1; next }
	/^```sh$/ { inblock = 1; run = marked; marked = 0; next }
	inblock && /^```$/ { inblock = 0; next }
	inblock && !run && NF && $1 !~ /^#/ { print }
	{ marked = marked && /^$/ }
' "$readme" | grep -v -e 'not run by the walkthrough' -e 'test/package/check.sh runs' || true)
[ -z "$unmarked" ] || fail "README commands neither run here nor saying why not:
$unmarked"

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# waitfor FILE PATTERN SECONDS: until a line of FILE matches.
waitfor() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

n=0
for line in "${cmds[@]}"; do
	n=$((n + 1))
	cmd=${line//sudo /}
	cmd=${cmd//PREFIX=\/usr\/local/PREFIX=$stage}
	start=$(date +%s%N)
	log=$work/cmd$n.log
	case "$cmd" in
	make\ *)
		(cd "$repo" && bash -o pipefail -c "$cmd") >"$log" 2>&1 || { cat "$log"; fail "$line"; }
		export PATH="$stage/bin:$PATH"
		;;
	polygraph\ watch*)
		bash -c "exec $cmd" >"$log" 2>&1 &
		pid=$!
		pids+=("$pid")
		waitfor "$log" '^polygraph watch: ready: ' 60 || { cat "$log"; fail "$line: no ready line within 60s"; }
		kill -INT "$pid"
		rc=0
		wait "$pid" || rc=$?
		[ "$rc" = 130 ] || { cat "$log"; fail "$line: exit $rc after Ctrl-C, want 130"; }
		;;
	polygraph\ ui*)
		port=$(freeport)
		bash -c "exec ${cmd%%#*} --listen 127.0.0.1:$port" >"$log" 2>&1 &
		pid=$!
		pids+=("$pid")
		ok=
		for ((i = 0; i < 100; i++)); do
			if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
				printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
				if head -1 <&3 | grep -q ' 200 '; then ok=1; fi
				exec 3>&-
				[ -n "$ok" ] && break
			fi
			sleep 0.1
		done
		[ -n "$ok" ] || { cat "$log"; fail "$line: no page on 127.0.0.1:$port"; }
		kill -INT "$pid"
		wait "$pid" || true
		;;
	*http://localhost:4318*)
		sinklog=$work/sink.log
		python3 -u -c '
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); self.rfile.read(n)
        self.send_response(200); self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0"); self.end_headers()
        print("POST", self.path, n)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H); print("port", s.server_port); s.serve_forever()
' >"$sinklog" 2>&1 &
		pids+=("$!")
		waitfor "$sinklog" '^port ' 10 || fail "the OTLP sink did not start"
		sink=http://127.0.0.1:$(awk '/^port /{print $2; exit}' "$sinklog")
		bash -o pipefail -c "${cmd//http:\/\/localhost:4318/$sink}" >"$log" 2>&1 || { cat "$log"; fail "$line"; }
		grep -q '^POST /v1/traces ' "$sinklog" || { cat "$log" "$sinklog"; fail "$line: the sink got no trace"; }
		;;
	*)
		bash -o pipefail -c "$cmd" >"$log" 2>&1 || { cat "$log"; fail "$line"; }
		;;
	esac
	shown=${line%%  #*}
	printf 'walkthrough: ok   %5d ms  %s\n' $((($(date +%s%N) - start) / 1000000)) "${shown%"${shown##*[! ]}"}"
done
[ "$(command -v polygraph)" = "$stage/bin/polygraph" ] || fail "polygraph on PATH is $(command -v polygraph), not the one README installed"
grep -h 'not run by the walkthrough\|test/package/check.sh runs' "$readme" | sed 's/^/walkthrough: not run here: /'
echo "walkthrough: $n commands of README.md ran, in order, without an error"
