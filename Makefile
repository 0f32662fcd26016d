# nicflow build, test and benchmark entry points. Pure Go: CGO is off for
# everything in the main module, so the binary cross-compiles to linux/arm64.
export CGO_ENABLED := 0
GO      ?= go
BIN     ?= bin/nicflow
SF      ?= 0.1
DATA    ?= data/sf$(SF)
PKGS    := ./...

# Version stamping (internal/buildinfo): VERSION from a VERSION file, else
# git describe (tags when there are some, else the short commit; -dirty
# for a modified tree). DATE honours SOURCE_DATE_EPOCH for reproducible
# builds. An unstamped build falls back to what Go records (-buildvcs).
VERSION ?= $(shell cat VERSION 2>/dev/null || git describe --tags --always --dirty 2>/dev/null)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%Y-%m-%dT%H:%M:%SZ)
BIPKG   := github.com/nicflow/nicflow/internal/buildinfo
LDFLAGS := -X $(BIPKG).version=$(VERSION) -X $(BIPKG).commit=$(COMMIT) -X $(BIPKG).date=$(DATE)
DIST    ?= dist
# qemu-user runs the linux/arm64 test binaries (apt-get install qemu-user).
QEMU_ARM64 ?= qemu-aarch64

.PHONY: all build build-arm64 release image run test test-short test-arm64 test-arm64-smoke test-adbc helm-test bench lint fmt clean

all: build

# -buildvcs=auto: the binary records its commit (nicflow --version,
# SELECT version()) when built from a git checkout.
build:
	$(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/nicflow

# One static binary for DPUs and ARM boards.
build-arm64:
	GOOS=linux GOARCH=arm64 $(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o bin/nicflow-linux-arm64 ./cmd/nicflow

# Release binaries: static (CGO off), stripped, -trimpath, stamped with
# version, commit and date, one per platform, with their SHA-256 sums.
release:
	rm -rf $(DIST) && mkdir -p $(DIST)
	for arch in amd64 arm64; do \
		GOOS=linux GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto -ldflags "-s -w $(LDFLAGS)" \
			-o $(DIST)/nicflow-$(VERSION)-linux-$$arch ./cmd/nicflow || exit 1; \
	done
	cd $(DIST) && sha256sum nicflow-* > SHA256SUMS && cat SHA256SUMS

# The multi-arch container image (Dockerfile; needs a Docker engine with
# buildx). By default an OCI archive in dist/; IMAGE_OUTPUT=--push pushes
# IMAGE to its registry instead.
IMAGE        ?= nicflow:$(VERSION)
IMAGE_OUTPUT ?= --output type=oci,dest=$(DIST)/nicflow-$(VERSION)-image.tar
image:
	mkdir -p $(DIST)
	docker buildx build --platform linux/amd64,linux/arm64 \
		--build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) \
		-t $(IMAGE) $(IMAGE_OUTPUT) .

# The main job on the embedded default: generate TPC-H at SF (default 0.1)
# and run the 22 queries, checking the answers.
run: build
	$(BIN) tpch gen --sf $(SF) --dir $(DATA) --if-missing
	$(BIN) tpch run --dir $(DATA) --verify

# The whole test suite, as CI runs it (.ci/run). Well under 20 minutes on
# 2 cores. The arm64 binary is always built; where qemu-aarch64 is
# installed it also runs TPC-H end to end (test-arm64-smoke). The arm64 unit
# tests under qemu (test-arm64) take too long for this target on 2 cores
# (docs/deployment.md has the figures).
test: build-arm64
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 30m $(PKGS)
	@if command -v $(QEMU_ARM64) >/dev/null 2>&1; then $(MAKE) --no-print-directory test-arm64-smoke; \
	else echo "arm64 smoke test skipped: $(QEMU_ARM64) not installed (apt-get install qemu-user)"; fi

# The arm64 binary under qemu-user, end to end: TPC-H SF 0.01 generated and
# the 22 queries run with every answer checked.
test-arm64-smoke: build-arm64
	@command -v $(QEMU_ARM64) >/dev/null 2>&1 || { echo "test-arm64-smoke: $(QEMU_ARM64) not found (apt-get install qemu-user)"; exit 1; }
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(QEMU_ARM64) bin/nicflow-linux-arm64 version && \
	$(QEMU_ARM64) bin/nicflow-linux-arm64 tpch gen --sf 0.01 --dir "$$d/sf0.01" && \
	$(QEMU_ARM64) bin/nicflow-linux-arm64 tpch run --dir "$$d/sf0.01" --verify

# The test suites cross-compiled for linux/arm64 and run under qemu-user
# (no binfmt registration needed: go test runs each test binary through
# $(QEMU_ARM64)). -short, and without the exec package's large spill tests
# (ARM64_SKIP: several minutes each natively, hours under emulation; pure-Go
# file and hash code they share with the spill harness tests that do run).
# Tests that start processes of the target architecture (cluster nodes,
# crash children, network namespaces) skip themselves, saying so, when
# NICFLOW_TEST_EMULATOR is set (internal/emutest).
ARM64_SKIP ?= ^Test(HashAgg|HashJoin|Parallel|Sort|Distinct|Window)Spills$$
test-arm64:
	@command -v $(QEMU_ARM64) >/dev/null 2>&1 || { echo "test-arm64: $(QEMU_ARM64) not found (apt-get install qemu-user)"; exit 1; }
	@echo "test-arm64: -short, skipping '$(ARM64_SKIP)' (too slow under emulation; they run natively in make test)"
	NICFLOW_TEST_EMULATOR=$(QEMU_ARM64) GOOS=linux GOARCH=arm64 $(GO) test -short -count=1 -timeout 60m \
		-skip '$(ARM64_SKIP)' -exec $(QEMU_ARM64) $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# Long runs and figures: testing.B benchmarks with allocations, then the
# command-level benchmarks that print tables.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x -timeout 60m $(PKGS)
	$(BIN) bench gen --sf 1
	$(BIN) tpch gen --sf 1 --dir data/sf1 --if-missing
	$(BIN) bench cluster --dir data/sf1 --configs 1x1,2x1,4x1,1x2,2x2,4x2 --runs 3
	$(BIN) bench lovelock model
	@if [ "$$(id -u)" = 0 ]; then $(BIN) bench lovelock run --dir data/sf1 --phi 1,2,3 --nic-mbit 200; \
	else echo "bench lovelock run skipped: it needs root (network namespaces, tc, cgroups)"; fi

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

# The Flight SQL endpoint of `nicflow serve` through the ADBC Go driver (the
# one under Python's adbc_driver_flightsql): a module of its own, bench/adbc,
# since the driver pulls in dependencies the main module does not need.
# Builds nicflow, generates TPC-H SF 0.01 and checks the 22 answers.
test-adbc:
	cd bench/adbc && $(GO) test -count=1 -timeout 20m ./


# The Helm chart linted and rendered with helm's Go packages (a module of
# its own: the main module does not depend on helm).
helm-test:
	cd deploy/helm/test && $(GO) test -count=1 ./...

clean:
	rm -rf bin $(DIST)
