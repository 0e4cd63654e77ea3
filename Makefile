# Kafka Connect offsets dashboard. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Django 6 needs Python >= 3.12. The plain `python3` here is 3.11 and pyenv's `python3.12`
# shim may not be active, so look for a working 3.12 interpreter in the usual places.
PYTHON ?= $(firstword $(foreach p,python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) /usr/local/bin/python3.12 /usr/bin/python3.12,$(shell $(p) -c 'import sys; assert sys.version_info[:2] >= (3, 12)' >/dev/null 2>&1 && echo $(p))))
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
DEMO_CLUSTER := demo
LIVE_CLUSTER := live
DEMO_PORT ?= 8000
# The scheduler's period for each demo cluster, in seconds (add_cluster --refresh-every).
LIVE_REFRESH_EVERY ?= 1
DEMO_REFRESH_EVERY ?= 60
# When the seeded history ends: seed_demo writes up to it, and seed_demo --keep-writing goes on from it.
DEMO_END := $(shell date -u +%Y-%m-%dT%H:%M:%S+00:00)
# The demo's processes and the embedded broker keep their pids and logs here (settings.RUN_DIR).
export RUN_DIR ?= $(CURDIR)/.run
export PY
export SPARK_LOCAL_IP := 127.0.0.1
# The broker's and the Connect worker's jars, built from kafka-runtime/ by Maven.
export KAFKA_RUNTIME_LIBS ?= $(CURDIR)/var/kafka-runtime/libs
KAFKA_STAMP := $(KAFKA_RUNTIME_LIBS)/.built
KAFKA_SOURCES := $(shell find kafka-runtime -type f -not -path '*/target/*' -not -path 'kafka-runtime/debezium/*')
# Connect plugins only some test workers load through plugin.path, one folder each: Debezium's
# PostgreSQL connector, fetched by Maven from kafka-runtime/debezium/ on its own stamp.
export KAFKA_RUNTIME_PLUGINS ?= $(CURDIR)/var/kafka-runtime/plugins
DEBEZIUM_PLUGIN := $(KAFKA_RUNTIME_PLUGINS)/debezium-postgres
DEBEZIUM_STAMP := $(DEBEZIUM_PLUGIN)/.built
# Test processes (pytest-xdist): each starts its own broker and Connect worker when a test
# needs them. PYTEST_ARGS adds to any test target's pytest, e.g. PYTEST_ARGS=--reverse.
TEST_PROCESSES ?= 2
PYTEST_ARGS ?=
# AREA runs one area's tests, a folder of tests/ (make test AREA=edits; several: AREA="edits api").
AREA ?=
AREA_PATHS := $(addprefix tests/,$(AREA))
# Options for a benchmark that takes them, e.g. make bench-live-scale BENCH_ARGS='--records 10000000'.
BENCH_ARGS ?=
# Python keeps what it compiles in __pycache__ (pytest: the test modules it rewrites), so each
# module is compiled once, not again in every pytest process and child command of a run. An
# environment that turns that off (PYTHONDONTWRITEBYTECODE) is not passed on.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install kafka-runtime system-deps demo demo-stop image lock test test-image test-fast test-postgres helm bench bench-refresh bench-pages bench-load bench-loop bench-live bench-live-scale bench-scheduler-fleet bench-masking bench-scale bench-connect lint format clean

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.12 not found: install it or run make PYTHON=/path/to/python3.12"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP) ## Create .venv and install the project with its dependencies

$(KAFKA_STAMP): $(KAFKA_SOURCES)
	@command -v java >/dev/null || { echo "Java 17 or later is needed for the Kafka broker and Connect worker (apt-get install openjdk-17-jdk-headless)"; exit 1; }
	@command -v mvn >/dev/null || { echo "Maven is needed to fetch Kafka's jars (apt-get install maven)"; exit 1; }
	@echo "Fetching Apache Kafka's broker and Connect worker from Maven Central into $(KAFKA_RUNTIME_LIBS)..."
	rm -rf $(KAFKA_RUNTIME_LIBS)
	mvn -q -B -f kafka-runtime/pom.xml package -Druntime.libs=$(KAFKA_RUNTIME_LIBS)
	@touch $@

kafka-runtime: $(KAFKA_STAMP) ## Fetch the Kafka broker and Connect worker jars and build the project's connectors

$(DEBEZIUM_STAMP): kafka-runtime/pom.xml kafka-runtime/debezium/pom.xml
	@command -v mvn >/dev/null || { echo "Maven is needed to fetch Debezium's jars (apt-get install maven)"; exit 1; }
	@echo "Fetching Debezium's PostgreSQL connector from Maven Central into $(DEBEZIUM_PLUGIN)..."
	rm -rf $(DEBEZIUM_PLUGIN)
	mvn -q -B -f kafka-runtime/debezium/pom.xml package -Ddebezium.plugin=$(DEBEZIUM_PLUGIN)
	@touch $@

.PHONY: kafka-plugins
kafka-plugins: $(DEBEZIUM_STAMP) ## Fetch the Connect plugins some tests load with plugin.path (Debezium's PostgreSQL connector)

# The session's test worker loads the plugin folder (the Debezium test runs on it).
test test-postgres test-image: kafka-plugins

# Helm, for the chart in deploy/helm/ and its test (tests/deploy/test_helm_chart.py): built from
# its Go module (no release download needed), once per version; var/bin/helm points at it.
HELM_VERSION := v3.22.0
HELM_BUILT := var/bin/helm-$(HELM_VERSION)
GO ?= $(or $(shell command -v go),/usr/local/go/bin/go)

$(HELM_BUILT):
	@test -x "$(GO)" || { echo "Go 1.26 or later is needed to build helm (https://go.dev/dl, or GO=/path/to/go)"; exit 1; }
	@echo "Building helm $(HELM_VERSION) from its Go module into var/bin (a few minutes the first time)..."
	rm -rf var/helm-build
	GOBIN=$(CURDIR)/var/helm-build $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@mkdir -p var/bin
	mv var/helm-build/helm $@
	rm -rf var/helm-build

helm: $(HELM_BUILT) ## Build helm into var/bin when missing (the chart's test runs it)
	@ln -sfn $(notdir $(HELM_BUILT)) var/bin/helm

# The chart's test runs helm: a no-op once it is built.
test test-fast: helm

system-deps: ## Install Debian packages the tests need (chromium, postgresql, nodejs) when missing
	@command -v chromium >/dev/null || { \
	  echo "Installing Debian's chromium for the browser tests..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "Installing Debian's postgresql for the Debezium test (it starts a server of its own)..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
	@command -v npm >/dev/null || { \
	  echo "Installing Debian's nodejs and npm for the single sign-on tests' OpenID provider..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@$(MAKE) --no-print-directory $(OIDC_PROVIDER_STAMP)

# The single sign-on tests' OpenID provider (node-oidc-provider), exactly as its lock file says.
OIDC_PROVIDER_STAMP := tests/oidc_provider/node_modules/.installed
$(OIDC_PROVIDER_STAMP): tests/oidc_provider/package.json tests/oidc_provider/package-lock.json
	cd tests/oidc_provider && npm ci --no-audit --no-fund --silent
	@touch $@

demo: install kafka-runtime ## Start Kafka and a Connect worker with live connectors, seed a simulated cluster, keep both moving and refreshed, serve http://127.0.0.1:8000 (DEMO_PORT)
	$(PY) manage.py migrate --no-input -v 0
	scripts/demo-processes stop
	$(PY) manage.py embedded_kafka stop
	$(PY) manage.py embedded_kafka start
	$(PY) manage.py add_cluster $(DEMO_CLUSTER) --update --embedded --offsets-topic connect-offsets --configs-topic connect-configs --status-topic connect-status --connect-url '' --offset-flush-interval-ms 60000 --refresh-every $(DEMO_REFRESH_EVERY)
	$(PY) manage.py add_cluster $(LIVE_CLUSTER) --update --embedded --refresh-every $(LIVE_REFRESH_EVERY)
	$(PY) manage.py seed_demo --cluster $(DEMO_CLUSTER) --end-time $(DEMO_END)
	$(PY) manage.py live_demo --cluster $(LIVE_CLUSTER) --setup-only
	scripts/demo-processes start $(LIVE_CLUSTER) $(DEMO_CLUSTER) $(DEMO_END)
	$(PY) manage.py demo_users --url http://127.0.0.1:$(DEMO_PORT)/
	@echo "Prometheus metrics: curl http://127.0.0.1:$(DEMO_PORT)/metrics"
	@echo "Stop the server with Ctrl-C; make demo-stop stops it too, with the scheduler, the worker and the broker."
	scripts/demo-processes serve $(DEMO_PORT) || test $$? = 143  # 143: ended by make demo-stop

demo-stop: install ## Stop what the demo started: the server, the writers, the scheduler, the worker and the broker
	scripts/demo-processes stop
	$(PY) manage.py embedded_kafka stop

lock: ## Write deploy/requirements.lock: the exact dependencies the image installs
	rm -rf var/lock-venv && $(PYTHON) -m venv var/lock-venv
	var/lock-venv/bin/pip install --quiet .
	{ echo "# The image's dependencies, exact (its virtualenv; the app itself runs from /app)."; \
	  echo "# Made from pyproject.toml with: make lock"; \
	  var/lock-venv/bin/pip freeze --exclude connect-offsets-dashboard; } > deploy/requirements.lock
	rm -rf var/lock-venv

image: ## Build the OCI image with podman (a Debian 13 base made here with debootstrap; prints its size)
	. deploy/sandbox.env && deploy/build-image

test: install kafka-runtime system-deps ## Run the whole test suite (unit, integration on the real broker and worker, Spark, browser); AREA=edits runs one area
	$(BIN)/pytest -m "not container" -n $(TEST_PROCESSES) -ra --durations=25 $(PYTEST_ARGS) $(AREA_PATHS)

test-image: install kafka-runtime ## The README's deploy steps (deploy/quickstart) in a fresh clone: both images, compose with PostgreSQL, migrate, web and scheduler against the embedded broker and worker
	$(BIN)/pytest -m container -n 0 -ra $(PYTEST_ARGS) tests/deploy

test-fast: install ## Units and database tests, without broker, worker, Spark or browser: the inner loop; AREA=edits runs one area
	$(BIN)/pytest -m "not integration and not spark and not browser and not container" -n $(TEST_PROCESSES) -q $(PYTEST_ARGS) $(AREA_PATHS)

test-postgres: install kafka-runtime ## Run the tests whose outcome can depend on the database engine against PostgreSQL (DATABASE_URL); AREA=edits runs one area
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} $(BIN)/pytest -m "db_engine and not browser and not container" -n $(TEST_PROCESSES) -ra $(PYTEST_ARGS) $(AREA_PATHS)

bench: bench-refresh bench-pages bench-load bench-loop bench-live bench-masking ## Run every benchmark (they print figures, they assert nothing)

bench-refresh: install kafka-runtime ## The refresh on 1M offsets records vs plain Python (prints figures)
	@command -v kcat >/dev/null || command -v kafkacat >/dev/null || { \
	  echo "Installing Debian's kcat for the raw-read figure..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null; }
	$(PY) tests/bench/bench_refresh.py

bench-scale: install kafka-runtime ## ~10M offsets records: refresh vs kcat, local vs standalone, memory, pages (not in make bench: it takes a while)
	@command -v kcat >/dev/null || command -v kafkacat >/dev/null || { \
	  echo "Installing Debian's kcat for the raw-read figure..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null; }
	$(PY) -m tests.bench.bench_scale

bench-connect: install kafka-runtime ## ~10M offsets records: the full refresh over Spark Connect vs local[2] vs kcat, the scheduler's memory with SPARK_REMOTE vs local (not in make bench)
	@command -v kcat >/dev/null || command -v kafkacat >/dev/null || { \
	  echo "Installing Debian's kcat for the raw-read figure..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null; }
	$(PY) -m tests.bench.bench_connect $(BENCH_ARGS)

bench-pages: install kafka-runtime ## Time the pages and htmx partials on 1,000 connectors / 10,000 partitions
	$(PY) -m tests.bench.bench_pages

bench-load: install kafka-runtime ## 50 users on the app server (waitress), idle and during a full refresh: p50/p95/max per URL
	$(PY) -m tests.bench.bench_load

bench-scheduler-fleet: install kafka-runtime ## One scheduler over 20 clusters of 50 connectors: each refreshed within its period? (not in make bench)
	$(PY) -m tests.bench.bench_scheduler_fleet $(BENCH_ARGS)

bench-masking: install ## Masking 1 KB vs 1 MB of each hostile value: times and ratios (linear ~1,000)
	$(PY) -m tests.bench.bench_masking

bench-loop: install kafka-runtime ## What a long --every loop leaves behind: lag samples and history folders, before/after
	$(PY) -m tests.bench.bench_long_loop

bench-live: install kafka-runtime ## Freshness under a live loop (--every 1) on the real worker: p50/p95/max, CPU, memory
	$(PY) -m tests.bench.bench_live

bench-live-scale: install kafka-runtime ## The live loop at 10 and at 1,000 connectors: freshness, CPU a round, round times, memory (not in make bench: it takes a while)
	@command -v kcat >/dev/null || command -v kafkacat >/dev/null || { \
	  echo "Installing Debian's kcat for the raw-read figure..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null; }
	$(PY) -m tests.bench.bench_live_scale $(BENCH_ARGS)

lint: install ## Check style with ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install ## Reformat with ruff
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean: ## Remove the virtualenv, caches and the local database
	-$(PY) manage.py embedded_kafka stop 2>/dev/null
	rm -rf $(VENV) .run var db.sqlite3 kafka-runtime/*/target .pytest_cache .ruff_cache .hypothesis tests/screenshots
