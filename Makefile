# HotKV developer commands. `make run` serves on 127.0.0.1:6379; `make test` runs every check
# CI runs, installing what it needs (scripts/setup.sh).

GO       ?= go
PORT     ?= 6379
BIND     ?= 127.0.0.1
DATA     ?= ./data
ARGS     ?=
FUZZTIME ?= 1000000x
KEYS     ?= 1000000
TTL      ?= 1s
IMAGE    ?= hotkv:latest

.PHONY: run build test fuzz stress-expiry docs lint setup bench bench-raft bench-cluster bench-rls redis-tests ratelimit-libs soak docker cluster-demo cluster-demo-stop

## run: build and run the server on $(BIND):$(PORT) with dir $(DATA); ARGS adds flags
run: build
	mkdir -p $(DATA)
	./bin/hotkv-server --port $(PORT) --bind $(BIND) --dir $(DATA) $(ARGS)

## build: bin/hotkv-server, bin/hotkv-bench and bin/hotkv-docs
build:
	$(GO) build -o bin/hotkv-server ./cmd/hotkv-server
	$(GO) build -o bin/hotkv-bench ./cmd/hotkv-bench
	@if [ -d cmd/hotkv-docs ]; then echo "$(GO) build -o bin/hotkv-docs ./cmd/hotkv-docs"; $(GO) build -o bin/hotkv-docs ./cmd/hotkv-docs; fi

## test: setup, gofmt, vet, go test -race ./..., a short fuzz run, the redis-cli smoke test
test:
	bash scripts/test.sh

## setup: install what the tests need (Go modules, redis-cli/redis-server)
setup:
	bash scripts/setup.sh

## fuzz: fuzz the RESP reader, the snapshot decoder, the log reader and the DUMP decoder for FUZZTIME each (an execution count, default 1000000x: see scripts/test.sh)
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzReader$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2000x ./internal/resp/
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2000x ./internal/persist/
	$(GO) test -run='^$$' -fuzz='^FuzzLogReader$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2000x ./internal/persist/
	$(GO) test -run='^$$' -fuzz='^FuzzRestore$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2000x ./internal/rdb/

## bench: HotKV vs Redis 7 side by side; rewrites docs/benchmarks.md (BENCHARGS go to `hotkv-bench suite`)
bench:
	bash scripts/bench.sh $(BENCHARGS)

## bench-raft: a 3-node Raft group on 127.0.0.1: allowed GCRA.LIMIT decisions/s (256 clients) against standalone HotKV and Redis with appendfsync always, and 10 leader kills; adds the "Replicated (Raft)" section to docs/benchmarks.md (BENCHARGS go to `hotkv-bench raft`)
bench-raft:
	bash scripts/bench.sh raft $(BENCHARGS)

## bench-cluster: sharded clusters on 127.0.0.1: allowed GCRA.LIMIT decisions/s (256 clients routed to the shards' leaders) for 1, 2 and 3 shards, and a CLUSTERX MIGRATE of 1M keys timed; adds the "Sharded cluster" section to docs/benchmarks.md (BENCHARGS go to `hotkv-bench cluster`: -shards 1,2,4,8 -nodes 3 -move-keys N)
bench-cluster:
	bash scripts/bench.sh cluster $(BENCHARGS)

## bench-rls: the Envoy rate limit service: ShouldRateLimit decisions/s and latency through gRPC for each algorithm, many concurrent calls and one; adds the "Envoy rate limit service" section to docs/benchmarks.md (BENCHARGS go to `hotkv-bench rls`)
bench-rls:
	bash scripts/bench.sh rls $(BENCHARGS)

## redis-tests: Redis's own TCL suite for the data types and scripting, HotKV vs Redis 7 in external mode; rewrites docs/compatibility.md (REDISTESTARGS go to scripts/redis-tests.sh: units, --server, --check PCT); not in `make test`
redis-tests:
	bash scripts/redis-tests.sh $(REDISTESTARGS)

## soak: SOAKARGS go to hotkv-soak (10,000 connections, slow readers, a pipeline flood) against a fresh HotKV; not in `make test`
soak:
	bash scripts/soak.sh $(SOAKARGS)

## ratelimit-libs: redis_rate and ulule/limiter Redis suites (unchanged) and a rate-limiter-flexible check, against Redis 7 and HotKV (part of `make test`)
ratelimit-libs:
	bash scripts/ratelimit-libs.sh

## stress-expiry: KEYS (default 1M) keys with a TTL (default 1s), HotKV vs Redis; not in `make test`
stress-expiry:
	KEYS=$(KEYS) TTL=$(TTL) bash scripts/stress-expiry.sh

## cluster-demo: a sharded cluster on 127.0.0.1: 3 shards of 3 nodes (clients 7001-7009, Raft 7101-7109, meta group 17101-17109; BASE=7000 moves them, SHARDS and NODES resize it), slots spread evenly (docs/cluster.md)
cluster-demo:
	bash scripts/cluster-demo.sh start

## cluster-demo-stop: stop the cluster-demo nodes (their data stays in ./cluster-demo)
cluster-demo-stop:
	bash scripts/cluster-demo.sh stop

## docs: regenerate the command and config references under docs/ and deploy/hotkv.conf
docs:
	$(GO) run ./cmd/hotkv-docs -out docs

## docker: build the container image hotkv:latest from the Dockerfile (needs a Docker daemon; IMAGE=name:tag changes the tag)
docker:
	docker build -t $(IMAGE) .

## lint: gofmt -l must print nothing, and go vet must pass
lint:
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
