# polygraph — build, test, regenerate the BPF objects.
GO ?= go
BIN := bin/polygraph
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: build test demo generate check-generate vet agents

build:
	$(GO) build -o $(BIN) ./cmd/polygraph

# The test command (README). Kernel-tier tests need root and skip without
# it; the end-to-end tests need the agent CLIs, which `agents` installs.
test: agents vet
	$(SUDO) env "PATH=$$PATH" POLYGRAPH_E2E=$${POLYGRAPH_E2E:-1} $(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

agents:
	bash test/agents/install.sh

# The main job on the built-in demo workload.
demo: build
	$(SUDO) ./$(BIN) demo

# Rebuild bpf/*.c into the committed objects (needs clang, llvm, libbpf-dev).
generate:
	$(GO) generate ./internal/sensor

# CI: regenerating must change nothing.
check-generate: generate
	git diff --exit-code -- internal/sensor/ || { echo "generated BPF objects are stale: run 'make generate' and commit"; exit 1; }
