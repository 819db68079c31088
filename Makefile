# mrcrawl: `make help` lists the targets. Variables can be set on the command line:
#   make crawl DEPTH=2 SEEDS=seeds/seeds.txt OUT=crawl RUNNER=local
# RUNNER=hadoop uses the Hadoop your environment names (HADOOP_HOME, HADOOP_CONF_DIR,
# `hadoop` on PATH: drivers/runtime/hadoop_locate.py); CLUSTER=test the project's test cluster
# (make hadoop-up) instead, and makes RUNNER=hadoop the default.
SHELL  := /bin/bash
PYTHON ?= python3.11
VENV   ?= .venv
# CLUSTER only from make's command line: an exported CLUSTER (a common name) is not ours.
ifeq ($(origin CLUSTER),environment)
CLUSTER :=
endif
RUNNER ?= $(if $(filter test,$(CLUSTER)),hadoop,local)
DEPTH  ?= 3
SEEDS  ?= seeds/seeds.txt
OUT    ?= crawl
# Extra arguments for `mrcrawl crawl`, e.g. ARGS="--set politeness.delay=2"
ARGS   ?=

BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The test extras (pytest, hypothesis, duckdb, atheris) on top: only the test and fuzz
# targets need them, so `make crawl` does not install them.
TEST_STAMP := $(VENV)/.installed-test
# The test cluster's environment, for CLUSTER=test only (hadoop/env.sh sets HADOOP_HOME,
# HADOOP_CONF_DIR, MRCRAWL_HADOOP_BIN, ... over the user's).
TEST_CLUSTER_ENV = $(if $(filter-out test,$(CLUSTER)),$(error CLUSTER=$(CLUSTER): only CLUSTER=test is known; leave it unset for your own Hadoop))$(if $(filter test,$(CLUSTER)),. hadoop/env.sh && ,)

.DEFAULT_GOAL := help
.PHONY: help venv crawl recrawl demo demo-search test test-fast system-deps bench-parse fuzz hadoop-up hadoop-down solr-up solr-down clean

help:  ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

$(STAMP): setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(STAMP)  ## Create the virtual environment (.venv) and install mrcrawl in it

crawl: $(STAMP)  ## Crawl SEEDS to DEPTH into OUT with RUNNER (local, ./crawl; hadoop: yours, CLUSTER=test: the test one)
	$(TEST_CLUSTER_ENV)$(BIN)/mrcrawl crawl --seeds $(SEEDS) --depth $(DEPTH) --out $(OUT) -r $(RUNNER) $(ARGS)

recrawl: $(STAMP)  ## The next cycle of OUT without seeds: due pages, new links; delta XML
	$(TEST_CLUSTER_ENV)$(BIN)/mrcrawl recrawl --out $(OUT) -r $(RUNNER) $(ARGS)

demo: $(STAMP)  ## Serve the fixture website on 127.0.0.1 and crawl it (DEPTH, default 3)
	$(TEST_CLUSTER_ENV)$(BIN)/mrcrawl demo --depth $(DEPTH) -r $(RUNNER) $(ARGS)

test: $(TEST_STAMP) system-deps  ## Run every test: starts the test Hadoop (2 worker nodes) and Solr, runs pytest, stops them
	bash hadoop/up.sh || { rc=$$?; bash hadoop/down.sh; exit $$rc; }
	bash solr/up.sh || { rc=$$?; bash solr/down.sh; bash hadoop/down.sh; exit $$rc; }
	. hadoop/env.sh && . solr/env.sh && $(BIN)/python -m pytest tests; rc=$$?; \
		bash solr/down.sh; bash hadoop/down.sh; exit $$rc

# Debian packages of the programs the media previews (ffmpeg) and page rendering
# (chromium) run, and those the protocol tests run against: openssl (it makes the TLS
# tests' certificates), nginx (TLS, credentials, content codings), lighttpd (digest
# authentication), tinyproxy (an HTTP proxy) and microsocks (a SOCKS5 one). The tests
# run them for real, so `make test` installs them.
SYSTEM_PROGRAMS := ffmpeg chromium openssl nginx lighttpd tinyproxy microsocks
system-deps:  ## Install ffmpeg, Chromium, openssl and the protocol tests' servers from Debian's packages when missing
	@missing=$$(for p in $(SYSTEM_PROGRAMS); do command -v $$p >/dev/null || \
	  [ -x /usr/sbin/$$p ] || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); echo "installing:" $$missing; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null || \
	  { $$sudo apt-get update -q >/dev/null && \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; }; \
	fi

test-fast: $(TEST_STAMP) system-deps  ## Run the unit and job tests (under two minutes, for development)
	$(BIN)/python -m pytest --kinds unit,job tests

bench-parse: $(STAMP)  ## HTML parse + link extraction speed on the python3-doc manual (target >= 30 MB/s per core)
	$(BIN)/python bench/parse_speed.py --compare

fuzz: $(TEST_STAMP)  ## Fuzz the HTML-to-records path with atheris (FUZZ_SECONDS, default 600)
	mkdir -p fuzz/corpus && $(BIN)/python fuzz/fuzz_parse.py -max_total_time=$(or $(FUZZ_SECONDS),600) -rss_limit_mb=2048 -max_len=65536 -timeout=20 fuzz/corpus fuzz/seeds

hadoop-up:  ## Assemble (once, with Maven) and start a Hadoop on loopback (2 worker nodes)
	bash hadoop/up.sh

hadoop-down:  ## Stop the test Hadoop
	bash hadoop/down.sh

demo-search: $(STAMP)  ## Index the demo's crawl into the test Solr and search it (Q=words, default: rivers)
	bash solr/up.sh
	. solr/env.sh && $(BIN)/mrcrawl index demo-crawl --solr "$$MRCRAWL_SOLR_URL" && \
		curl -sG "$$MRCRAWL_SOLR_URL/select" --data-urlencode "q=$(or $(Q),rivers)" \
			--data-urlencode "fl=id,title,score" --data-urlencode "rows=5"

solr-up:  ## Assemble (once, with Maven) and start a Solr 9 on loopback with the mrcrawl core
	bash solr/up.sh

solr-down:  ## Stop the test Solr
	bash solr/down.sh

clean:  ## Remove the virtual environment and local crawl outputs
	rm -rf $(VENV) crawl demo-crawl

-include bench/bench.mk
