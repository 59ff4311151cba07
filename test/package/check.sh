#!/usr/bin/env bash
# The package as a user gets it: build the static binary and the .deb
# (make deb), install it with dpkg -i, run the installed /usr/bin/polygraph
# (--version, the man page, a completion, the demo), remove it with dpkg -r
# and check that nothing of it is left. Needs root (dpkg, and the demo
# loads BPF programs); .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "package: FAIL: $*" >&2; exit 1; }
# dpkg, waiting up to a minute for its lock (another apt or dpkg on the
# machine holds it for a while).
dpkgw() {
	local i err
	err=$(mktemp)
	for i in $(seq 60); do
		if dpkg "$@" 2>"$err"; then rm -f "$err"; return 0; fi
		grep -q 'lock' "$err" || { cat "$err" >&2; rm -f "$err"; return 1; }
		sleep 1
	done
	cat "$err" >&2; rm -f "$err"
	return 1
}
installed() { [ "$(dpkg-query -W -f='${Status}' polygraph 2>/dev/null)" = "install ok installed" ]; }
[ "$(id -u)" = 0 ] || fail "needs root (dpkg -i, and the demo loads BPF programs)"

make -s deb
deb=$(ls -t build/polygraph_*.deb | head -1)
echo "package: built $deb ($(du -h "$deb" | cut -f1))"
if ldd build/polygraph >/dev/null 2>&1; then fail "build/polygraph is dynamically linked: $(ldd build/polygraph | head -3)"; fi

# make install, into a staging root: the binary in PREFIX/bin, the unit
# naming it and its documentation; make uninstall removes every file.
stage=$(mktemp -d)
make -s install PREFIX=/opt/pg DESTDIR="$stage" >/dev/null
[ -x "$stage/opt/pg/bin/polygraph" ] || fail "make install put no binary in PREFIX/bin"
grep -q '^ExecStart=/opt/pg/bin/polygraph watch' "$stage/opt/pg/lib/systemd/system/polygraph-watch.service" || fail "make install's unit does not run PREFIX/bin/polygraph"
[ -s "$stage/opt/pg/share/man/man1/polygraph.1.gz" ] || fail "make install put no man page"
grep -q '^Documentation=man:polygraph-watch(1) file:///opt/pg/share/doc/polygraph/watch.md' "$stage/opt/pg/lib/systemd/system/polygraph-watch.service" &&
	[ -s "$stage/opt/pg/share/doc/polygraph/watch.md" ] || fail "make install's unit names documentation it did not install"
"$stage/opt/pg/bin/polygraph" --version >/dev/null || fail "the installed binary does not run"
make -s uninstall PREFIX=/opt/pg DESTDIR="$stage"
left=$(find "$stage" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
rm -rf "$stage"

if installed; then
	echo "package: polygraph was installed before: removing it first"
	dpkgw -r polygraph >/dev/null
fi
dpkgw -i "$deb" >/dev/null
installed || fail "dpkg -i did not install it"
trap 'dpkgw -r polygraph >/dev/null 2>&1 || true' EXIT
[ "$(command -v polygraph)" = /usr/bin/polygraph ] || fail "polygraph on PATH is $(command -v polygraph), not /usr/bin/polygraph"

ver=$(/usr/bin/polygraph --version)
echo "$ver" | sed 's/^/package: | /'
want=$(dpkg-deb -f "$deb" Version)
head -1 <<<"$ver" | grep -qxF "polygraph $want" || fail "--version says '$(head -1 <<<"$ver")', the package is $want"
grep -q '^  commit  [0-9a-f]\{40\}' <<<"$ver" || fail "--version names no commit"
grep -q '^kernel features:' <<<"$ver" || fail "--version names no kernel features"
if grep -q '^  missing ' <<<"$ver"; then echo "package: note: this kernel lacks a feature (above)"; fi

for f in /usr/share/man/man1/polygraph.1.gz /usr/share/man/man1/polygraph-run.1.gz \
	/usr/share/bash-completion/completions/polygraph /usr/lib/systemd/system/polygraph-watch.service \
	/usr/share/doc/polygraph/README.md; do
	[ -s "$f" ] || fail "$f is not installed"
done
zcat /usr/share/man/man1/polygraph-run.1.gz | grep -q -- '--report-out\|polygraph-run' || fail "the man page of run is empty"
grep -q '^ExecStart=/usr/bin/polygraph watch' /usr/lib/systemd/system/polygraph-watch.service || fail "the unit does not run /usr/bin/polygraph"
bash -c 'source /usr/share/bash-completion/completions/polygraph && declare -F __start_polygraph >/dev/null' || fail "the bash completion does not load"

# The demo from the installed binary, into a store of its own.
store=$(mktemp -d)
trap 'dpkgw -r polygraph >/dev/null 2>&1 || true; rm -rf "$store"' EXIT
start=$(date +%s%N)
POLYGRAPH_HOME=$store /usr/bin/polygraph demo >"$store/demo.out" 2>&1 || { cat "$store/demo.out"; fail "polygraph demo failed"; }
echo "package: polygraph demo from /usr/bin took $(( ($(date +%s%N) - start) / 1000000 )) ms"
grep -q 'demo-undeclared-connect\|Findings\|finding' "$store/demo.out" || { cat "$store/demo.out"; fail "the demo printed no findings"; }
POLYGRAPH_HOME=$store /usr/bin/polygraph sessions --json | grep -q '"mode":"demo"' || fail "the demo's session is not listed"
grep -q "\"version\":\"$want " < <(POLYGRAPH_HOME=$store /usr/bin/polygraph sessions --json) || fail "the demo's session does not carry version $want"

dpkgw -r polygraph >/dev/null
installed && fail "still installed after dpkg -r"
left=$(ls /usr/bin/polygraph /usr/lib/systemd/system/polygraph-watch.service /usr/share/man/man1/polygraph*.1.gz \
	/usr/share/bash-completion/completions/polygraph /usr/share/doc/polygraph 2>/dev/null || true)
[ -z "$left" ] || fail "dpkg -r left: $left"
# dpkg keeps the removed package's record (its maintainer scripts) until
# purged; purge it so the machine is as before.
dpkgw -P polygraph >/dev/null
dpkg-query -W polygraph >/dev/null 2>&1 && fail "dpkg -P left the package's record"
echo "package: ok (installed, ran, removed cleanly, purged)"
