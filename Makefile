# pingroll. Every target installs what it needs: a fresh clone runs `make demo` or `make test` as is.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPM_STAMP := node_modules/.package-lock.json
PINGROLL := node bin/pingroll.js
BIN := node_modules/.bin
DEMO_DATE ?= 2026-11-01
FILE ?= -

.PHONY: help install build test demo rollup rollup-stale backfill parse bench busy-day soak clean

help:
	@echo "make demo                 generate a sample day under ./data and run pingroll on it"
	@echo "make test                 install, type-check and run the test suite"
	@echo "make rollup DATE=YYYY-MM-DD  the daily job (ARGS='--dry-run' and more: see pingroll help)"
	@echo "make backfill FROM=YYYY-MM-DD TO=YYYY-MM-DD  every day of a range, resumable"
	@echo "make rollup-stale          the days late data changed since they were published"
	@echo "make parse FILE=<log>     one JSON line per log line: outcome, fields, ping"
	@echo "make bench                every benchmark; writes docs/benchmarks.md"
	@echo "make busy-day             50M pings through make rollup, once: time and peak RSS"
	@echo "make soak                 the reliability soak: runs killed at random, concurrent runs, bad objects"

# Install exactly the lock file, only when it changed since the last install. npm ci refuses a lock
# whose optional per-platform packages the registry does not serve (npm/cli#9846: here only DuckDB's
# linux-x64 build is served); npm install then installs the same tree, and must leave the lock as is.
$(NPM_STAMP): package.json package-lock.json
	@npm ci --no-audit --no-fund --loglevel=silent 2>/dev/null || { \
	  echo "npm ci refused the lock (optional builds for other platforms are not on this registry); installing the locked tree with npm install"; \
	  cp package-lock.json .package-lock.before && \
	  npm install --no-audit --no-fund --loglevel=error && \
	  cmp -s package-lock.json .package-lock.before || { echo "npm install changed package-lock.json: commit the lock that matches package.json"; exit 1; }; \
	  rm -f .package-lock.before; }
	@touch $@

install: $(NPM_STAMP)

WASM := dist/wasm/access-log.wasm

# The record scanner and ping rules: AssemblyScript with SIMD, compiled to WebAssembly.
$(WASM): ingest/access-log/wasm/access-log.as.ts $(wildcard ingest/access-log/wasm/*.as.ts) $(NPM_STAMP)
	@mkdir -p dist/wasm
	@$(BIN)/asc $< -O3 --runtime stub --enable simd --noAssert -o $@

# The compiled program. The commands users run (rollup, backfill, parse, demo) depend on this file, so
# they compile only when a TypeScript source, the config or the dependencies changed since the last
# build; otherwise they start the program at once. `make build` and `make test` always type-check.
# deploy/ (the CDK app, its own package and its own node_modules) is no part of the program.
TS_SOURCES := $(shell find . \( -name node_modules -o -path ./dist -o -path './.*' -o -path ./data -o -path ./deploy \) -prune -o -name '*.ts' ! -name '*.as.ts' -print)
BUILT := dist/.built

$(BUILT): $(NPM_STAMP) $(WASM) tsconfig.json $(TS_SOURCES)
	@$(BIN)/tsc -p tsconfig.json
	@touch $@

# Quiet, so that `make parse ... | jq` sees only JSON; errors still reach stderr.
build: $(NPM_STAMP) $(WASM)
	@$(BIN)/tsc -p tsconfig.json
	@touch $(BUILT)

# The deployment (deploy/, an AWS CDK app) is its own package, so that the product's install stays
# small; the tests synthesize it, so they install it too, exactly as locked.
DEPLOY_STAMP := deploy/node_modules/.package-lock.json
$(DEPLOY_STAMP): deploy/package.json deploy/package-lock.json
	@cd deploy && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The S3 tests run against moto's S3 server, a Python package: installed here when it is missing.
# (Asked in the recipe, not at parse time: importing moto costs half a second every make would pay.)
test: build $(DEPLOY_STAMP)
	@python3 -c 'import moto.server' 2>/dev/null || python3 -m pip install --quiet "moto[server]"
	@$(BIN)/tsc -p deploy/tsconfig.json
	$(BIN)/vitest run

demo: $(BUILT)
	$(PINGROLL) generate --out data/logs --date $(DEMO_DATE) --sessions 3000 --seed 7
	$(PINGROLL) rollup --date $(DEMO_DATE)
	@$(PINGROLL) top --date $(DEMO_DATE)

rollup: $(BUILT)
	@$(PINGROLL) rollup --date "$(DATE)" $(ARGS)

# The days whose staged data changed since they were published (late objects), and only those.
rollup-stale: $(BUILT)
	@$(PINGROLL) backfill --stale $(ARGS)

backfill: $(BUILT)
	@$(PINGROLL) backfill --from "$(FROM)" --to "$(TO)" $(ARGS)

parse: $(BUILT)
	@$(PINGROLL) parse $(FILE)

# The reliability soak: hundreds of runs killed at random instants, concurrent runs, a corrupt object.
soak: build
	node dist/bench/soak.js $(or $(KILLS),200) $(or $(ROUNDS),30)

# Every benchmark, each in its own process; the results table goes to docs/benchmarks.md.
bench: build
	node dist/bench/run-all.js

# A busy day end to end, once: 50M pings through make rollup, its time and peak RSS (many minutes, ~22 GB under .bench/).
busy-day: build
	node dist/bench/busy-day.js $(PINGS)

clean:
	rm -rf dist data .bench
