GO ?= go

.PHONY: all test verify fmt-check vet demo generate bench sqlc verify-sqlc

all: test

## test: verify generated code is fresh, vet, then run every test with -race.
test: verify vet
	$(GO) test -race -count=1 ./...

## verify: fail when code is unformatted or committed generated code is stale.
verify: fmt-check verify-sqlc

fmt-check:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## sqlc: regenerate store/pgstore/internal/dbsqlc from queries/ and migrations/.
SQLC = $(GO) tool -modfile=tools/go.mod sqlc
sqlc:
	$(SQLC) generate -f sqlc.yaml

## verify-sqlc: fail when the committed sqlc output is stale.
verify-sqlc:
	$(SQLC) diff -f sqlc.yaml

## demo: generate the example workflow and run it (Postgres when DATABASE_URL is set).
demo:
	$(GO) run ./examples/order/demo
