# memex — common tasks. `make test` is what CI runs (.ci/run).

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 20s
BIN      ?= bin/memex
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Redis tests talk to a real Redis: the machine's server at 127.0.0.1:6379
# unless MEMEX_TEST_REDIS_URL names another (internal/redistest). With
# CI=true a missing Redis fails the tests instead of skipping them.

.PHONY: attack chromium ui-screenshots all build test test-integration lint bench fuzz demo clean perf scale compare retrieval-perf mcp-inspector

all: lint test build

## build: the memex binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/memex

## test: lint, then the fast tier — every test but the integration tier's, with the race detector
## (GORACE: a race-built process otherwise sleeps 1 s at exit — each test binary and every
## memex process the tests start)
test: lint
	GORACE="$${GORACE:-atexit_sleep_ms=0}" $(GO) test -race -count=1 -timeout 20m $(PKGS)

## attack: the attack suite (docs/SECURITY.md): the secret corpus through every CLI and HTTP
## write path (records, store file, Redis AOF, answers, errors, logs), repo config trust,
## redaction choke point, quotas, idempotency bound, auth limits, the isolation matrix and the
## ledger's rules on both stores (lanes, quarantine, max_qas); `make test` runs it too
attack:
	$(GO) test -race -count=1 -timeout 10m -run 'TestAttack|TestRepoConfig|TestStore|TestExtractRedactsBeforeCutting|TestQuotaCounts|TestSearchResponseBounded|TestMaxQAsHolds|TestUnauthenticatedRate|TestInsecureLocalWith|TestIdempotency|TestIsolationMatrix|TestLedgerRules' \
		./cmd/memex ./extract/... ./service ./plugins/embedded ./plugins/redis

## test-integration: the integration tier — the slow and fault tests (files tagged
## `//go:build integration`: Redis kill/stall/cluster faults, 64 × 1,000 validations)
test-integration:
	GO=$(GO) bash scripts/test-integration.sh

## chromium: install Debian's chromium for the dashboard's browser tests (apt-get, when missing)
chromium:
	bash scripts/install-chromium.sh

## ui-screenshots: rerun the dashboard's browser tests, writing a PNG of each page to docs/dashboard
ui-screenshots: chromium
	MEMEX_UI_SCREENSHOTS=$(CURDIR)/docs/dashboard $(GO) test -tags integration -count=1 -run 'TestDashboardInBrowser' ./cmd/memex

# The MCP Inspector's CLI (pinned in tools/mcp-inspector/package-lock.json),
# an MCP client memex does not write, for cmd/memex's TestMCPInspector.
mcp-inspector:
	cd tools/mcp-inspector && npm ci --ignore-scripts --no-audit --no-fund

## lint: gofmt and golangci-lint (.golangci.yml: depguard layering, errcheck, staticcheck,
## ineffassign, unused, and govet — go vet's analyzers, the integration tier's files
## included), installed at its pinned version into bin/
lint:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	GO=$(GO) bash scripts/install-golangci-lint.sh
	bin/golangci-lint run $(PKGS)

## bench: every benchmark, 6 runs each, into bench.txt (compare with benchstat)
bench:
	$(GO) test -run="^$$" -bench=. -benchmem -count=6 $(PKGS) | tee bench.txt

## fuzz: each fuzz target for $(FUZZTIME) (go test fuzzes one target per call)
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for fz in $$($(GO) test -list="^Fuzz" $$pkg | grep "^Fuzz" || true); do \
			echo "== $$pkg $$fz"; \
			$(GO) test -run="^$$" -fuzz="^$$fz$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=3s $$pkg; \
		done; \
	done

## demo: the three-run quickstart with the offline example agent
demo:
	bash examples/quickstart.sh

clean:
	rm -rf bin bench.txt

## perf: the docs/PERFORMANCE.md figures for memex as a process (static build)
perf:
	CGO_ENABLED=0 $(GO) build -o /tmp/memex-perf ./cmd/memex
	$(GO) run ./cmd/memex-bench process -memex /tmp/memex-perf -sizes 1000,10000,100000 -runs 200 -overhead-at 100000 -dir /tmp/memex-perf-stores
	$(GO) run ./cmd/memex-bench latency -n 100000 -queries 2000
	$(GO) run ./cmd/memex-bench quality

## compare: memex vs bleve v2 vs SQLite FTS5, quality and speed on every set (bench/, ~10 min)
compare:
	cd bench && $(GO) run ./cmd/compare -runs 3

## scale: the search-cost curve at 1k, 10k, 100k and 1M QAs (process, in process, service on Redis; ~1 h)
scale:
	bash scripts/scale.sh

## retrieval-perf: the comparison table and the scale curve of docs/PERFORMANCE.md (issue 4)
retrieval-perf: compare scale
