GO ?= go

.PHONY: all test verify fmt-check vet demo generate bench sqlc verify-sqlc

all: test

## test: verify generated code is fresh, vet, then run every test with -race.
test: verify vet
	$(GO) test -race -count=1 ./...

## verify: fail when code is unformatted or committed generated code is stale.
verify: fmt-check verify-sqlc verify-generated

fmt-check:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## sqlc: regenerate runtime/store/pgstore/internal/dbsqlc from queries/ and migrations/.
SQLC = $(GO) tool -modfile=tools/go.mod sqlc
sqlc:
	$(SQLC) generate -f sqlc.yaml

## verify-sqlc: fail when the committed sqlc output is stale.
verify-sqlc:
	$(SQLC) diff -f sqlc.yaml

## verify-generated: fail when any committed dag_gen.go (every package, golden cases) is stale.
.PHONY: verify-generated
verify-generated:
	$(GO) run ./cmd/dagen diff ./...
	$(GO) test -count=1 -run 'TestGolden' ./gen

## demo: generate the example workflows and run them, the order demo, the album demo (a mapped step) then the expense demo (a signal wait and a nightly schedule) (Postgres when DATABASE_URL is set).
demo:
	$(GO) generate ./examples/...
	$(GO) run ./examples/order/demo
	$(GO) run ./examples/album/demo
	$(GO) run ./examples/expense/demo

## bench: dagen's benchmark workloads on Postgres (DATABASE_URL), with River's single_step on the same database right before and right after dagen's throughput workloads, then dagen/River throughput ratios (against the mean of the two River runs). BENCH_FLAGS and RIVER_FLAGS pass flags, e.g. BENCH_FLAGS='-scale 0.05' RIVER_FLAGS='-jobs 1000'.
## The throughput workloads run tuned (Concurrency 2048, batches of 512), as River runs tuned (2,000 workers); the latency workloads at Concurrency 64.
BENCH_FLAGS ?=
RIVER_FLAGS ?=
BENCH_OUT ?= $(or $(TMPDIR),/tmp)/dagen-bench
bench:
	@mkdir -p $(abspath $(BENCH_OUT))
	cd bench/river && $(GO) run . -settings tuned $(RIVER_FLAGS) > $(abspath $(BENCH_OUT))/river.txt
	$(GO) run ./examples/bench -workloads single_step,chain10,fan50,map100k,map1k,trigger,trigger_key -concurrency 2048 -batch 512 $(BENCH_FLAGS) -json-out $(abspath $(BENCH_OUT))/dagen.jsonl
	cd bench/river && $(GO) run . -settings tuned $(RIVER_FLAGS) >> $(abspath $(BENCH_OUT))/river.txt
	$(GO) run ./examples/bench -workloads fairness,low_load $(BENCH_FLAGS) -json-out $(abspath $(BENCH_OUT))/dagen-latency.jsonl
	@cat $(abspath $(BENCH_OUT))/river.txt
	$(GO) run ./examples/bench -compare $(abspath $(BENCH_OUT))/dagen.jsonl -river-json $(abspath $(BENCH_OUT))/river.txt
