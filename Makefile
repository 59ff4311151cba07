# polygraph — build, install, package, test, regenerate the BPF objects.
GO ?= go
BIN := bin/polygraph
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# What the build says of itself (polygraph --version): the tag it is at
# (v1.2.3 -> 1.2.3), else 0.1.0~dev and the commit's date and hash, a
# version dpkg orders correctly; the commit; its date (not the build's, so
# the same commit builds the same binary).
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
DATE := $(shell git log -1 --format=%cI 2>/dev/null)
VERSION ?= $(or $(patsubst v%,%,$(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null)),0.1.0~dev$(shell git log -1 --format=%cd.%h --date=format:%Y%m%d 2>/dev/null))
VPKG := github.com/polygraph/polygraph/internal/version
LDFLAGS := -s -w -X $(VPKG).Version=$(VERSION) -X $(VPKG).Commit=$(COMMIT) -X $(VPKG).Date=$(DATE)

# Installation (make install PREFIX=... DESTDIR=...).
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: build install uninstall deb docs test demo bench study generate check-generate vet agents tools fuzz

# The release build: static (CGO_ENABLED=0: the SQLite driver is pure Go),
# stripped, stamped with its version, reproducible (-trimpath).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/polygraph

# The man pages and shell completions, generated from the commands
# (cmd/polygraph/gendoc.go, built only with the gendoc tag) into build/docs.
docs:
	rm -rf build/docs
	$(GO) run -tags gendoc ./cmd/polygraph __gendoc build/docs
	gzip -9n build/docs/man1/*.1

# The binary in PREFIX/bin, the systemd unit (ExecStart naming that
# binary) in PREFIX/lib/systemd/system, the man pages and completions
# under PREFIX/share: what the .deb holds, at /usr. It installs what
# `make build docs` made, building them first only when there are none, so
# `make build docs && sudo make install` needs no Go under sudo and leaves
# no root-owned file in the tree.
install:
	@[ -x $(BIN) ] && [ -d build/docs/man1 ] || $(MAKE) build docs
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/polygraph
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/share/man/man1
	sed -e 's#/usr/bin/polygraph#$(PREFIX)/bin/polygraph#' -e 's#/usr/share/doc/polygraph#$(PREFIX)/share/doc/polygraph#' \
		dist/polygraph-watch.service >$(DESTDIR)$(PREFIX)/lib/systemd/system/polygraph-watch.service
	install -d $(DESTDIR)$(PREFIX)/share/doc/polygraph
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/polygraph/
	install -m 0644 build/docs/man1/*.1.gz $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 build/docs/completions/polygraph.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/polygraph
	install -D -m 0644 build/docs/completions/_polygraph $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_polygraph
	install -D -m 0644 build/docs/completions/polygraph.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/polygraph.fish

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/polygraph $(DESTDIR)$(PREFIX)/lib/systemd/system/polygraph-watch.service \
		$(DESTDIR)$(PREFIX)/share/man/man1/polygraph.1.gz $(DESTDIR)$(PREFIX)/share/man/man1/polygraph-*.1.gz \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/polygraph \
		$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_polygraph \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/polygraph.fish
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/polygraph

# The Debian package, build/polygraph_VERSION_ARCH.deb, made by nfpm
# (dist/nfpm.yaml) from its own module (tools/nfpm), so the main go.mod
# does not carry it. test/package/check.sh installs and removes it.
GOARCH ?= $(shell $(GO) env GOARCH)
deb: build docs
	cp $(BIN) build/polygraph
	$(GO) -C tools/nfpm build -o ../../build/nfpm github.com/goreleaser/nfpm/v2/cmd/nfpm
	VERSION='$(VERSION)' GOARCH=$(GOARCH) build/nfpm package --config dist/nfpm.yaml --packager deb --target build/

# The test command (README). Kernel-tier tests need root and skip without
# it; the end-to-end tests need the agent CLIs, which `agents` installs.
# The e2e and red-team packages run verbosely, one after the other, into a
# log so their tables are printed: the e2e's measured attribution
# precision and recall and the scenario matrix (lines led by "matrix"),
# issue 25's measurement (TestAgents25, lines led by "agents25"),
# the red-team matrix (lines led by "redteam", docs/redteam.md;
# POLYGRAPH_REDTEAM_STRICT=1 fails every technique not caught). The whole
# log is printed when one fails.
TESTENV := $(SUDO) env "PATH=$$PATH" POLYGRAPH_E2E=$${POLYGRAPH_E2E:-1} POLYGRAPH_REDTEAM_STRICT=$${POLYGRAPH_REDTEAM_STRICT:-}
LOGLINES := '^(--- |ok|FAIL|PASS|matrix |live |redteam |agents25 )|attribution [a-z]+: precision'
test: agents vet
	$(TESTENV) $(GO) test -count=1 $$($(GO) list ./... | grep -v -e /test/e2e -e /test/redteam)
	@log=$$(mktemp); $(TESTENV) $(GO) test -count=1 -timeout 30m -v ./test/e2e >$$log 2>&1; rc=$$?; \
	grep -E $(LOGLINES) $$log; \
	[ $$rc = 0 ] || cat $$log; rm -f $$log; exit $$rc
	@log=$$(mktemp); $(TESTENV) $(GO) test -count=1 -timeout 40m -v ./test/redteam >$$log 2>&1; rc=$$?; \
	grep -E $(LOGLINES) $$log; \
	[ $$rc = 0 ] || cat $$log; rm -f $$log; exit $$rc

vet:
	$(GO) vet ./...

# Every fuzz target (func FuzzX in a _test.go file: the readers of input
# the traced tree or a damaged disk can shape) for FUZZTIME each. CI runs
# the short default, a count of inputs rather than a time (a time that
# runs out while a loaded machine's worker is still starting fails the
# target with "context deadline exceeded", no input at fault): about 1.5
# minutes with the builds cached, 3 without. For a real search give each
# target minutes: `make fuzz FUZZTIME=10m` (docs/integrity-of-record.md).
# Minimizing is kept short: nearly every session-file input reaches new
# code in SQLite, and minimizing each for the default minute starves the
# search. A crasher is saved under the package's testdata/fuzz and fails
# the run.
FUZZTIME ?= 3000x
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for f in $$(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' cmd internal | sort); do \
		for t in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
			echo "fuzz $$t ./$$(dirname $$f) ($(FUZZTIME))"; \
			$(GO) test -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=50x ./$$(dirname $$f) >$$log 2>&1 || { cat $$log; exit 1; }; \
		done; \
	done

# The agent CLIs from npm, and mini-swe-agent's Debian packages (its bundle
# lies beside the repository, in ../shared/agents/mini-swe-agent).
MINI_SETUP := ../shared/agents/mini-swe-agent/setup.sh
agents:
	bash test/agents/install.sh
	@if [ -f $(MINI_SETUP) ]; then $(SUDO) bash $(MINI_SETUP); else echo "no $(MINI_SETUP): the mini-swe-agent e2e tests will fail under POLYGRAPH_E2E=1" >&2; fi

# The OpenTelemetry backends the export tests run against (Jaeger, a core
# collector), built once into /var/cache/polygraph/tools (test/tools/build.sh).
tools:
	$(SUDO) env "PATH=$$PATH" bash test/tools/build.sh

# The main job on the built-in demo workload.
demo: build
	$(SUDO) ./$(BIN) demo

# The cost bench (docs/bench.md): bare vs polygraph, strace, auditd and
# bpftrace, interleaved; installs the tracers from Debian. About 15-20 min.
bench:
	$(SUDO) env "PATH=$$PATH" $(GO) run ./bench

# The study (docs/study.md, bench/study): the four real agents on its tasks
# against the scripted model, bare and under polygraph, interleaved;
# rewrites docs/study.md and docs/study/*.svg. About 15 min on 2 cores
# (STUDY_ROUNDS, default 3). The log keeps one line per run.
study: agents
	@log=$$(mktemp); $(SUDO) env "PATH=$$PATH" POLYGRAPH_E2E=1 POLYGRAPH_STUDY=1 STUDY_ROUNDS=$${STUDY_ROUNDS:-3} \
	$(GO) test -count=1 -timeout 60m -v -run 'TestStudy$$' ./bench/study >$$log 2>&1; rc=$$?; \
	grep -E '^(--- |ok|FAIL|PASS)|study [0-9]+/|study: ' $$log | sed 's/^ *//'; \
	[ $$rc = 0 ] || tail -100 $$log; rm -f $$log; exit $$rc

# Rebuild the kind tables and bpf/*.c into the committed objects (needs clang, llvm, libbpf-dev).
# The event kind tables (internal/event/kinds.tsv) come first: bpf/kinds.h
# is an input of the BPF objects.
generate:
	$(GO) generate ./internal/event ./internal/sensor ./internal/guard

# CI: regenerating must change nothing.
check-generate: generate
	git diff --exit-code -- bpf/kinds.h internal/event/ internal/session/ internal/sensor/ internal/guard/ || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- bpf/kinds.h internal/event/ internal/session/ internal/sensor/ internal/guard/)" || { echo "generated files are not committed: run 'make generate' and commit"; exit 1; }
