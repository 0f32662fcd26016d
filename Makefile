# nicflow build, test and benchmark entry points. Pure Go: CGO is off for
# everything in the main module, so the binary cross-compiles to linux/arm64.
export CGO_ENABLED := 0
GO      ?= go
BIN     ?= bin/nicflow
SF      ?= 0.1
DATA    ?= data/sf$(SF)
PKGS    := ./...

.PHONY: all build build-arm64 run test test-short bench lint fmt clean

all: build

# -buildvcs=auto: the binary records its commit (nicflow --version,
# SELECT version()) when built from a git checkout.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/nicflow

# One static binary for DPUs and ARM boards.
build-arm64:
	GOOS=linux GOARCH=arm64 $(GO) build -buildvcs=auto -o bin/nicflow-linux-arm64 ./cmd/nicflow

# The main job on the embedded default: generate TPC-H at SF (default 0.1)
# and run the 22 queries, checking the answers.
run: build
	$(BIN) tpch gen --sf $(SF) --dir $(DATA) --if-missing
	$(BIN) tpch run --dir $(DATA) --verify

# The whole test suite, as CI runs it (.ci/run). Well under 20 minutes on
# 2 cores.
test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 30m $(PKGS)

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

clean:
	rm -rf bin

# The Flight SQL endpoint of `nicflow serve` through the ADBC Go driver (the
# one under Python's adbc_driver_flightsql): a module of its own, bench/adbc,
# since the driver pulls in dependencies the main module does not need.
# Builds nicflow, generates TPC-H SF 0.01 and checks the 22 answers.
.PHONY: test-adbc
test-adbc:
	cd bench/adbc && $(GO) test -count=1 -timeout 20m ./
