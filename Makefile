# ctrbench — the two commands: `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/ctrbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/ctrbench/ctrbench/internal/sysinfo.Version=$(VERSION)
GOFILES := $(shell find . -name '*.go' -not -path './.git/*') go.mod go.sum

.PHONY: all build setup demo test test-short vet bench clean-leftovers

all: build

$(BIN): $(GOFILES)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ctrbench

build: $(BIN)

# Installs Docker Engine and the benchmark tools when missing, starts dockerd.
setup:
	bash scripts/setup.sh

# The main job on a fresh machine: set up, build, run the quickstart, report.
demo: setup build
	./$(BIN) run experiments/quickstart.yaml

vet:
	$(GO) vet ./...

# Every test, against the real Docker Engine (setup starts it when needed).
test: setup build vet
	CTRBENCH_BIN=$(abspath $(BIN)) $(GO) test -count=1 -p 1 -timeout 25m ./...

# Unit tests only: no Docker, no root.
test-short:
	$(GO) test -short -count=1 ./...

clean-leftovers: build
	./$(BIN) clean
