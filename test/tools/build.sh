#!/usr/bin/env bash
# Builds the OpenTelemetry backends the export tests run against, from the
# Go module proxy: Jaeger v1.76 (module jaeger/, `go get -tool`) and a small
# OpenTelemetry Collector v0.165 made of core components (module otelcol/).
# They are two modules because Jaeger v1.76 pins the collector's v0.140
# modules, which cannot share a build list with v0.165; and neither is in the
# main module, whose go.mod stays small.
#
# The binaries go to ${POLYGRAPH_TOOLS:-/var/cache/polygraph/tools}, outside
# the repository. A binary whose module (go.mod, go.sum, sources) has not
# changed since it was built is not built again: a cold build of Jaeger takes
# about 15 minutes of a 2-core machine, the collector about 5.
set -euo pipefail
cd "$(dirname "$0")"
out=${POLYGRAPH_TOOLS:-/var/cache/polygraph/tools}
mkdir -p "$out"

# build NAME DIR PACKAGE builds PACKAGE of the module in DIR as $out/NAME.
build() {
	local name=$1 dir=$2 pkg=$3 stamp start
	stamp=$(find "$dir" -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) -print0 | sort -z |
		xargs -0 cat | { cat; go env GOVERSION; } | sha256sum | cut -c1-16)
	if [ -x "$out/$name" ] && [ "$(cat "$out/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "tools: $name is built ($out/$name)"
		return
	fi
	echo "tools: building $name into $out"
	start=$(date +%s)
	(cd "$dir" && go build -o "$out/$name.tmp" "$pkg")
	mv "$out/$name.tmp" "$out/$name"
	echo "$stamp" >"$out/$name.stamp"
	echo "tools: built $name in $(($(date +%s) - start))s"
}

build jaeger jaeger github.com/jaegertracing/jaeger/cmd/jaeger
build otelcol otelcol .
