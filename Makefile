# kopfgo: make test runs everything CI runs; make demo shows an operator at
# work on a local cluster built from Go modules. Nothing here needs anything
# but Go.

GO      ?= go
E2E_TIMEOUT ?= 60m

.PHONY: all build vet unit e2e test test-fresh flakes cluster demo bench microbench fmt fuzz chaos

all: build

build:
	$(GO) build ./...

fmt:
	gofmt -l -w .

vet:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/... ./examples/...

# Unit tests: pure logic, with the race detector.
unit:
	$(GO) test -race -count=1 ./...

# End-to-end tests against a real etcd and kube-apiserver, built from Go
# modules into ~/.cache/kopfgo on first use (about 5 minutes on 2 cores).
e2e:
	$(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -p 1 ./e2e/...

test: vet unit e2e

# make test as on a fresh machine: empty module, build and kopfgo caches in
# a temporary directory (so etcd and kube-apiserver are built again), no
# KUBECONFIG from the environment. Run it before calling a change to tests,
# modules or the harness done. About 15-20 minutes on 2 cores.
test-fresh:
	@tmp="$$(mktemp -d)"; trap 'chmod -R u+w "$$tmp"; rm -rf "$$tmp"' EXIT; \
	start=$$(date +%s); \
	env -u KUBECONFIG GOMODCACHE="$$tmp/mod" GOCACHE="$$tmp/build" KOPFGO_CACHE="$$tmp/kopfgo" \
		GOFLAGS="$(GOFLAGS) -modcacherw" $(MAKE) --no-print-directory test; rc=$$?; \
	echo "make test-fresh: exit $$rc after $$(( $$(date +%s) - start )) s"; exit $$rc

# The unit suite FLAKE_COUNT times with the race detector, beside two busy
# loops that keep the CPUs loaded (as a shared CI machine does), a dozen
# packages at a time; the failures are listed at the end. About an hour on 2 cores.
FLAKE_COUNT ?= 20
flakes:
	@nice -n 19 sh -c 'while :; do :; done' & h1=$$!; \
	nice -n 19 sh -c 'while :; do :; done' & h2=$$!; \
	trap 'kill $$h1 $$h2' EXIT; rc=0; : > flakes.log; \
	pkgs="$$($(GO) list ./... | grep -v -e /e2e/bench -e /e2e/cmd -e /e2e/operators -e /e2e/chaos)"; \
	set -- $$pkgs; while [ $$# -gt 0 ]; do \
		chunk=""; n=0; while [ $$# -gt 0 ] && [ $$n -lt 12 ]; do chunk="$$chunk $$1"; shift; n=$$((n+1)); done; \
		$(GO) test -race -count=$(FLAKE_COUNT) -timeout 60m $$chunk 2>&1 | tee -a flakes.log | grep -E '^(ok|FAIL|--- FAIL)' || true; \
		grep -q '^FAIL' flakes.log && rc=1; \
	done; \
	echo "make flakes: exit $$rc (full output in flakes.log)"; exit $$rc

# Start a local cluster and keep it running; prints KUBECONFIG=... .
cluster:
	$(GO) run ./e2e/cmd/cluster $(if $(KOPFGO_CLUSTER_DIR),-dir $(KOPFGO_CLUSTER_DIR))

# The performance benchmark (not a test: make test does not run it): the
# floor, kopfgo and the controller-runtime peer one after another on a local
# cluster; prints the table and writes bench.json. About 5 minutes.
# Quick run: make bench BENCH_FLAGS="-n 200 -restart-n 1000 -duration 5s".
bench:
	$(GO) run ./e2e/bench $(BENCH_FLAGS)

# The go test benchmarks of the per-event paths (decoding lists and watch
# events, essence, diffs, progress records, key naming, handler selection,
# filters, indices, one handling cycle).
microbench:
	$(GO) test -run '^$$' -bench . -benchmem . ./internal/unjson ./internal/kube ./internal/causes ./diffbase ./persistence ./internal/handlers ./internal/indexing ./internal/conventions ./internal/logging

# Build the harness, start it, run examples/01-minimal, create obj.yaml,
# show the log and the resulting status, and clean up.
demo:
	$(GO) run ./e2e/cmd/demo

# Native Go fuzzing of every decoder of persisted or received state, each
# target for FUZZTIME (one worker: the machine is shared). make unit runs the
# seeds and the crashers found so far (testdata/fuzz) as ordinary tests.
FUZZTIME ?= 30s
FUZZ_TARGETS = \
	./persistence:FuzzAnnotationsFetch ./persistence:FuzzStatusFetch \
	./persistence:FuzzDecodeFastAgreesWithSlow ./persistence:FuzzParseTime \
	./diffbase:FuzzAnnotationsFetch ./diffbase:FuzzEssence ./diffbase:FuzzDiffItem ./diffbase:FuzzEncodeValue \
	./internal/resources:FuzzParse ./internal/resources:FuzzNamespaces \
	./internal/conventions:FuzzKeys ./internal/causes:FuzzDetect ./internal/handling:FuzzFilters \
	./internal/unjson:FuzzDecoder ./internal/unjson:FuzzUnmarshal ./internal/unjson:FuzzDecodeStreaming

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -parallel 1 $$pkg; \
	done

# The chaos run (not part of make test, whose e2e suite runs a 200-object
# version, TestChaos): N objects created, updated and deleted while the
# operator is SIGKILLed and SIGTERMed, kube-apiserver and etcd restart, and a
# proxy stalls, resets and drops connections and answers 429/5xx; then two
# rounds of the same objects without faults, for the memory invariant. The
# first 2000 objects exist before the operator starts (a backlog), and a
# SIGKILL strikes once a tenth of them are handled. Prints the table, writes
# chaos.json, fails if an invariant breaks. About 15 minutes.
# Quick run: make chaos CHAOS_FLAGS="-n 300 -backlog 200 -every 2s"; the heap
# profiles: CHAOS_FLAGS="-n 600 -faults none -heap-profiles -dir /tmp/chaos".
CHAOS_FLAGS ?= -n 3000 -backlog 2000
chaos:
	$(GO) run ./e2e/cmd/chaos $(CHAOS_FLAGS)
