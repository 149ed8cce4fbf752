GO ?= go

.PHONY: all test verify fmt-check vet demo generate bench bench-pgbouncer bench-shards sqlc verify-sqlc

all: test

## test: verify generated code is fresh, vet, vacuum the test server's
## catalog (the dead rows earlier runs' schemas left), then run every test
## with -race.
test: verify vet
	$(GO) run ./internal/pgtest/vacuumcatalog
	$(GO) test -race -count=1 -timeout 30m ./...

## test-shards-clusters: the sharded store's longer variant, each shard a Postgres cluster of its own.
.PHONY: test-shards-clusters
test-shards-clusters:
	DAGEN_SHARD_CLUSTERS=1 $(GO) test -race -count=1 -p 1 -run 'OnThreeClusters|OneShardDown' ./runtime/store/shardstore/

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

## demo: generate the example workflows and run them, the order demo (a run started in a transaction, and a child run), the album demo (a mapped step) then the expense demo (a signal wait and a nightly schedule) (Postgres when DATABASE_URL is set).
demo:
	$(GO) generate ./examples/...
	$(GO) run ./examples/order/demo
	$(GO) run ./examples/album/demo
	$(GO) run ./examples/expense/demo

## bench-pgbouncer: dagen's single_step, chain10 and fan50 (tuned as in bench) straight to Postgres and through
## PgBouncer in transaction mode with a direct session URL, in ROUNDS interleaved rounds, then each round's ratio.
## Needs Debian's pgbouncer; outputs in BENCH_OUT/pgbouncer. Flags for both sides: BENCH_FLAGS.
bench-pgbouncer:
	@set -e; out='$(abspath $(BENCH_OUT))/pgbouncer'; mkdir -p "$$out"; \
	$(GO) build -o "$$out/dagen-bench" ./examples/bench; \
	bash bench/pgbouncer/run.sh "$$out/dagen-bench" "$$out" $(ROUNDS) $(BENCH_TUNED) $(BENCH_FLAGS)

## bench-shards: dagen's single_step and chain10 (tuned as in bench) on three Postgres clusters made with initdb: through
## a plain pgstore on one, then a sharded store over 1, 2 and 3, in ROUNDS interleaved rounds, then each round's ratios
## to the plain pgstore. Outputs in BENCH_OUT/shards. Flags for every run: BENCH_FLAGS.
bench-shards:
	@set -e; out='$(abspath $(BENCH_OUT))/shards'; mkdir -p "$$out"; \
	$(GO) build -o "$$out/dagen-bench" ./examples/bench; \
	bash bench/shards/run.sh "$$out/dagen-bench" "$$out" $(ROUNDS) $(BENCH_TUNED) $(BENCH_FLAGS)

## bench: the benchmark on Postgres (DATABASE_URL), alone on the machine. ROUNDS rounds (3), each: River's single_step,
## DBOS's single_step, chain10 and fan50 (skipped when DBOS_DIR, bench/dbos, is absent), dagen's throughput workloads
## and single_capped (judged against that round's single_step).
## Then once: dagen's latency workloads (fairness five times: its ratio is judged on the median), River's and DBOS's fairness, dagen's mapped and trigger workloads, a
## million queued runs drained (backlog1m, beside a single_step of its own), a 10,000-step workflow generated, built
## and drained (wide10k, beside a fan50 of its own), the fairness workload behind backlog1m's backlog (fairness1m),
## the soak (10 minutes). Last, the comparison: every figure's median [min-max] over the rounds, ratios paired by round, verdicts.
## Outputs in BENCH_OUT: round-N/{river.txt,dbos.txt,dagen.jsonl}, then latency.jsonl, river-fairness.txt,
## dbos-fairness.txt, mapped.jsonl, backlog.jsonl, wide10k.jsonl, fairness1m.jsonl, soak.jsonl. Flags: BENCH_FLAGS (every dagen run), RIVER_FLAGS, DBOS_FLAGS,
## SOAK_FLAGS (the soak, after BENCH_FLAGS), e.g. a quick check:
##   make bench ROUNDS=2 BENCH_FLAGS='-scale 0.05' RIVER_FLAGS='-scale 0.05' SOAK_FLAGS='-soak-duration 2m'
## dagen's throughput workloads run tuned (Concurrency 2048, batches of 512), as River runs tuned (2,000 workers);
## the latency workloads at Concurrency 64.
ROUNDS ?= 3
BENCH_FLAGS ?=
RIVER_FLAGS ?=
DBOS_FLAGS ?=
SOAK_FLAGS ?=
DBOS_DIR ?= bench/dbos
BENCH_OUT ?= $(or $(TMPDIR),/tmp)/dagen-bench
BENCH_TUNED = -concurrency 2048 -batch 512
bench:
	@set -e; out='$(abspath $(BENCH_OUT))'; bin="$$out/bin"; \
	mkdir -p "$$bin"; rm -rf "$$out"/round-*; rm -f "$$out"/*.jsonl "$$out"/*.txt; \
	$(GO) build -o "$$bin/dagen-bench" ./examples/bench; \
	(cd bench/river && $(GO) build -o "$$bin/river-bench" .); \
	rm -f "$$bin/dbos-bench"; \
	if [ -d '$(DBOS_DIR)' ]; then (cd '$(DBOS_DIR)' && $(GO) build -o "$$bin/dbos-bench" .); \
	else echo "bench: $(DBOS_DIR) is absent: DBOS is skipped, and the dagen/DBOS ratios are not judged"; fi; \
	for r in $$(seq 1 $(ROUNDS)); do \
		echo "bench: round $$r of $(ROUNDS)"; mkdir -p "$$out/round-$$r"; \
		"$$bin/river-bench" -settings tuned $(RIVER_FLAGS) > "$$out/round-$$r/river.txt"; cat "$$out/round-$$r/river.txt"; \
		if [ -x "$$bin/dbos-bench" ]; then \
			(cd '$(DBOS_DIR)' && "$$bin/dbos-bench" -workloads single_step,chain10,fan50 $(DBOS_FLAGS)) > "$$out/round-$$r/dbos.txt"; cat "$$out/round-$$r/dbos.txt"; \
		fi; \
		"$$bin/dagen-bench" -workloads single_step,single_capped,chain10,fan50 $(BENCH_TUNED) $(BENCH_FLAGS) -json-out "$$out/round-$$r/dagen.jsonl"; \
	done; \
	echo "bench: once: latency workloads, fairness of the peers, mapped and trigger workloads, backlog1m, wide10k, fairness1m, the soak"; \
	"$$bin/dagen-bench" -workloads fairness,fairness,fairness,fairness,fairness,low_load $(BENCH_FLAGS) -json-out "$$out/latency.jsonl"; \
	"$$bin/river-bench" -settings tuned -workload fairness $(RIVER_FLAGS) > "$$out/river-fairness.txt"; cat "$$out/river-fairness.txt"; \
	if [ -x "$$bin/dbos-bench" ]; then \
		(cd '$(DBOS_DIR)' && "$$bin/dbos-bench" -workloads fairness $(DBOS_FLAGS)) > "$$out/dbos-fairness.txt"; cat "$$out/dbos-fairness.txt"; \
	fi; \
	"$$bin/dagen-bench" -workloads map100k,map1k,trigger,trigger_key $(BENCH_TUNED) $(BENCH_FLAGS) -json-out "$$out/mapped.jsonl"; \
	"$$bin/dagen-bench" -workloads single_step,backlog1m $(BENCH_TUNED) $(BENCH_FLAGS) -json-out "$$out/backlog.jsonl"; \
	"$$bin/dagen-bench" -workloads fan50,wide10k $(BENCH_TUNED) $(BENCH_FLAGS) -json-out "$$out/wide10k.jsonl"; \
	"$$bin/dagen-bench" -workloads fairness1m $(BENCH_TUNED) $(BENCH_FLAGS) -json-out "$$out/fairness1m.jsonl"; \
	"$$bin/dagen-bench" -workloads soak $(BENCH_TUNED) $(BENCH_FLAGS) $(SOAK_FLAGS) -json-out "$$out/soak.jsonl"; \
	echo; "$$bin/dagen-bench" -compare "$$out"
