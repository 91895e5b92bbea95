# ctrbench — the two commands: `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/ctrbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/ctrbench/ctrbench/internal/sysinfo.Version=$(VERSION)
GOFILES := $(shell find . -name '*.go' -not -path './.git/*') go.mod go.sum

.PHONY: all build setup images demo test test-full test-short vet lint bench fuzz chaos clean-leftovers kernels docker-engine k8s test-k8s k8s-background

all: build

$(BIN): $(GOFILES)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ctrbench

build: $(BIN)

# Installs Docker Engine and the benchmark tools when missing, starts dockerd.
setup:
	bash scripts/setup.sh

# The example images of docs/own-services.md (busybox httpd, nginx, redis),
# built offline from Debian packages into images/.
images: setup
	bash scripts/images.sh

# The main job on a fresh machine: set up, build, run the quickstart, report.
demo: setup build
	mkdir -p results
	./$(BIN) run experiments/quickstart.yaml --html results/quickstart.html

vet:
	$(GO) vet ./...

# staticcheck, pinned; installed with go install when missing or another
# version.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
lint:
	@$(STATICCHECK) -version 2>/dev/null | grep -q '$(STATICCHECK_VERSION:v%=%)' || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt'ed (run gofmt -w): $$unformatted"; exit 1; fi

# Every test, against the real Docker Engine (setup starts it when needed).
# The example images are inputs of the tests: experiments/own-service.yaml
# runs from them (scripts/images.sh skips what is built already).
# scripts/test.sh runs them (the end-to-end tests one at a time while
# make vet lint runs and, on Docker Engine 28, the tests of what depends on
# the engine, then the packages that make nothing the end-to-end tests
# look at; then the other packages); the log is plain go
# test's (each package's line, every failed test's output, skip reasons),
# then the slowest tests and a recap of what failed
# (scripts/gotest-summary.py), so the log's tail names a failed or hung
# test. Where two tests run one code path, make test keeps the quicker
# (the other says which, and make test-full runs both).
OTHER_PKGS = $$($(GO) list ./... | grep -v '/e2e$$')
DOCKER_ENGINE = bash scripts/docker-engine.sh
test: k8s-background setup build images
	set -o pipefail; CTRBENCH_BIN=$(abspath $(BIN)) bash scripts/test.sh | python3 scripts/gotest-summary.py

# Docker Engine 28.2.2 for the tests that run on it (scripts/docker-engine.sh
# build: from the Go module proxy, once; cached in /var/cache/ctrbench).
docker-engine:
	$(DOCKER_ENGINE) build

# Kubernetes v1.34.4 for the kubernetes platform's tests (scripts/k8s.sh
# build: from the Go module proxy and Debian's packages, once; cached in
# /var/cache/ctrbench; 5 minutes here on two cores).
k8s:
	bash scripts/k8s.sh build

# make test starts Kubernetes' build first, in the background at the lowest
# priority, so it runs beside the installs and the builds (once per
# machine; scripts/test.sh waits for it before the Kubernetes tests).
k8s-background:
	@nohup nice -n 19 bash scripts/k8s.sh build >/tmp/ctrbench-k8s-build.log 2>&1 </dev/null &

# The Kubernetes tests on a two-node test cluster of their own
# (scripts/k8s-test.sh: make k8s's build if not cached, up, the tests,
# down — nothing left).
test-k8s: build
	set -o pipefail; CTRBENCH_BIN=$(abspath $(BIN)) bash scripts/k8s-test.sh | python3 scripts/gotest-summary.py

# make test with every workload in all eight placements (make test runs
# each once, the placements in turn) and the tests make test leaves to it
# (each names the quicker one of make test that runs its path); not in
# CI's time budget.
test-full: setup build images vet lint
	set -o pipefail; { CTRBENCH_E2E_FULL=1 CTRBENCH_BIN=$(abspath $(BIN)) $(GO) test -json -count=1 -p 1 -timeout 45m ./e2e; e=$$?; \
	  CTRBENCH_BIN=$(abspath $(BIN)) $(GO) test -json -count=1 -p 2 -timeout 8m $(OTHER_PKGS); o=$$?; \
	  [ $$e -eq 0 ] && [ $$o -eq 0 ]; } | python3 scripts/gotest-summary.py

# The fault-injection suite: every case, the slow ones too (they freeze
# and kill the machine's engine and boot VMs; not in CI), printing the
# table docs/reliability.md keeps, which it rewrites. make test runs the
# quick cases.
chaos: setup build images
	CTRBENCH_CHAOS=1 CTRBENCH_CHAOS_DOC=$(abspath docs/reliability.md) CTRBENCH_BIN=$(abspath $(BIN)) \
		$(GO) test -count=1 -p 1 -timeout 60m -v -run 'Chaos|Hostile' ./e2e
	CTRBENCH_CHAOS=1 CTRBENCH_CHAOS_DOC=$(abspath docs/reliability.md) CTRBENCH_CHAOS_TABLE='kubernetes chaos table' \
		CTRBENCH_K8S_PKGS=none CTRBENCH_K8S_E2E='^TestChaosKubernetes' CTRBENCH_K8S_E2E_FLAGS=-v CTRBENCH_BIN=$(abspath $(BIN)) \
		bash scripts/k8s-test.sh

# The experiment-file parser and --set under Go's fuzzer, seeded with every
# shipped experiment and bad file (not in CI; FUZZTIME=10m by default).
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./internal/spec

# Unit tests only: no Docker, no root.
test-short:
	$(GO) test -short -count=1 ./...

clean-leftovers: build
	./$(BIN) clean

# C kernels run by workloads (cpu.linpack, mem.stream), built beside
# bin/ctrbench, where the workloads and the image builder look for them.
# x86-64-v2, never -march=native: an image may run on another machine.
KERNEL_CC ?= gcc
KERNEL_CFLAGS := -O3 -Wall -Wextra -Werror -march=x86-64-v2
OPENBLAS_A ?= /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.a
KERNELS := bin/ctb-linpack bin/ctb-stream

.PHONY: kernels kernel-cc
kernels: $(KERNELS)
build: kernels
$(BIN): | $(KERNELS)

# On a fresh machine `make build` may come before `make setup`: say what is
# missing and where it comes from, not a compiler's or linker's error.
kernel-cc:
	@command -v $(KERNEL_CC) >/dev/null 2>&1 || { \
		echo "make: the C compiler $(KERNEL_CC) is not installed: the kernels bin/ctb-linpack and bin/ctb-stream need it (Debian package gcc)." >&2; \
		echo "make: run 'make setup' first (as root): it installs gcc, OpenBLAS and the benchmark tools (scripts/setup.sh)." >&2; \
		exit 1; }

$(OPENBLAS_A):
	@echo "make: $@ is missing: bin/ctb-linpack (cpu.linpack's kernel) links OpenBLAS statically, from the Debian package libopenblas-dev." >&2
	@echo "make: run 'make setup' first (as root): it installs OpenBLAS, gcc and the benchmark tools (scripts/setup.sh); or set OPENBLAS_A to a libopenblas.a." >&2
	@exit 1

# OpenBLAS (pthread build) linked statically: no BLAS library in the image.
bin/ctb-linpack: kernels/linpack.c $(OPENBLAS_A) | kernel-cc
	@mkdir -p bin
	$(KERNEL_CC) $(KERNEL_CFLAGS) -o $@ $< $(OPENBLAS_A) -lpthread -lm

bin/ctb-stream: kernels/stream.c | kernel-cc
	@mkdir -p bin
	$(KERNEL_CC) $(KERNEL_CFLAGS) -fopenmp -o $@ $< -lm

# Side by side with the reference tools (iperf3, sockperf, wrk): prints ratios
# with 95% intervals against the targets. A few minutes on 2 cores. First the
# Go benchmarks with targets of their own: the memory reading a 10 MB output
# takes, per format (fails above its target), and the placement advice's
# exact packing.
bench: setup build images
	$(GO) test -run '^$$' -bench . -benchtime 1x ./internal/outputs ./internal/advice
	$(GO) run ./bench -bin $(BIN)
