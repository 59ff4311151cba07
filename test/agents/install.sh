#!/usr/bin/env bash
# install.sh: install the pinned agent CLIs that the end-to-end tests run
# (test/e2e) into a cache directory outside the repository.
#
#   bash test/agents/install.sh            # install (a fast no-op when present)
#   POLYGRAPH_AGENTS_DIR=/some/dir bash test/agents/install.sh
#   bash test/agents/install.sh --check    # print the entry points, install nothing
#
# Each package goes into its own npm prefix, $DIR/<name>-<version>, so a pin
# change installs side by side and never mixes trees. On success it prints one
# line per agent: "<agent> <entry point>", where the entry point is what
# test/e2e executes (an ELF for Claude Code, a node script for Codex and Gemini).
set -euo pipefail

DIR="${POLYGRAPH_AGENTS_DIR:-/var/cache/polygraph/agents}"

# --check: only report. Prints the entry points of the pinned versions that
# are installed and exits 1 (saying what is missing on stderr) unless all
# three are; test/e2e uses it to find the entry points.
CHECK=0
case "${1:-}" in
--check) CHECK=1 ;;
"") ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# Pinned versions: the ones test/e2e and the fake model server were checked
# against. Bump them together with test/fakellm when a CLI changes its wire.
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0

# install_pkg NAME PACKAGE VERSION: npm-install PACKAGE@VERSION into
# $DIR/NAME-VERSION unless a previous run finished there (the .installed stamp
# is written last, so an interrupted install is redone).
install_pkg() {
	local name=$1 pkg=$2 version=$3
	local prefix="$DIR/$name-$version"
	if [[ -f "$prefix/.installed" ]]; then
		return 0
	fi
	if ((CHECK)); then
		echo "$pkg@$version is not installed in $prefix (run $0)" >&2
		return 1
	fi
	echo "installing $pkg@$version into $prefix" >&2
	# Called in an if-condition, where set -e is off: check every step.
	rm -rf "$prefix" && mkdir -p "$prefix" || return 1
	npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
		"$pkg@$version" >&2 || { echo "npm install $pkg@$version failed" >&2; return 1; }
	touch "$prefix/.installed"
}

# entry AGENT PATH: print "AGENT PATH" if PATH exists.
entry() {
	[[ -f "$2" ]] || { echo "$1: missing entry point $2" >&2; return 1; }
	echo "$1 $2"
}

# claude_entry PREFIX: the native Claude Code binary. The postinstall script
# puts it at bin/claude.exe; when it did not run, the platform package still
# carries it.
claude_entry() {
	local base="$1/node_modules/@anthropic-ai"
	local c
	for c in "$base/claude-code/bin/claude.exe" \
		"$base/claude-code-linux-x64/claude" \
		"$base/claude-code-linux-x64-musl/claude" \
		"$base/claude-code-linux-arm64/claude" \
		"$base/claude-code/cli.js"; do
		if [[ -f "$c" ]] && { [[ "$c" == *.js ]] || head -c4 "$c" | grep -q ELF; }; then
			echo "$c"
			return 0
		fi
	done
	echo "claude-code: no entry point found under $base" >&2
	return 1
}

((CHECK)) || mkdir -p "$DIR"
status=0
if install_pkg claude @anthropic-ai/claude-code "$CLAUDE_VERSION"; then
	claude=$(claude_entry "$DIR/claude-$CLAUDE_VERSION") && entry claude "$claude" || status=1
else
	status=1
fi
if install_pkg codex @openai/codex "$CODEX_VERSION"; then
	entry codex "$DIR/codex-$CODEX_VERSION/node_modules/@openai/codex/bin/codex.js" || status=1
else
	status=1
fi
if install_pkg gemini @google/gemini-cli "$GEMINI_VERSION"; then
	entry gemini "$DIR/gemini-$GEMINI_VERSION/node_modules/@google/gemini-cli/bundle/gemini.js" || status=1
else
	status=1
fi
exit $status
