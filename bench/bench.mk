# Benchmark suite (issue 9), included from the top-level Makefile. bench/README.md
# explains the points and every number. Needs root for `apt-get install nginx-light`
# the first time (Debian's package); Scrapy lives in its own venv, bench/.venv-scrapy.
BENCH_PY     := bench/.venv-scrapy/bin/python
BENCH_STAMP  := bench/.venv-scrapy/.installed
# Which mrcrawl code the crawls run: worktree, or a git revision exported read-only.
BENCH_SRC    ?= worktree
# Points of `make bench` (bench/run.py lists them) and the time limit of one crawl (s).
BENCH_POINTS ?= polite cpu1x cpu4x cpu10x
BENCH_TIMEOUT ?= 5400

.PHONY: bench-wide bench bench-quick bench-overhead bench-summary bench-deps bench-main-text bench-media bench-render bench-refresh bench-refresh-nutch bench-inline-vs-local bench-same-outputs bench-http2 bench-solr

$(BENCH_STAMP):
	test -x $(BENCH_PY) || python3.11 -m venv bench/.venv-scrapy
	$(BENCH_PY) -m pip install --quiet scrapy psutil py-spy pillow
	touch $@

bench-deps: $(STAMP) $(BENCH_STAMP)  ## Install the benchmark's tools: nginx-light (apt), Scrapy venv
	command -v nginx >/dev/null || (apt-get update && apt-get install -y nginx-light)

bench: bench-deps  ## Full benchmark suite (mrcrawl vs Scrapy, all scale points; hours): bench/results/
	$(BENCH_PY) bench/run.py $(BENCH_POINTS) --mrcrawl-src $(BENCH_SRC) --timeout $(BENCH_TIMEOUT)
	$(MAKE) bench-overhead
	$(MAKE) bench-yarn

bench-quick: bench-deps  ## Smallest benchmark point only (politeness-bound, a few minutes)
	$(BENCH_PY) bench/run.py polite --mrcrawl-src $(BENCH_SRC) --timeout 900

bench-same-outputs: $(STAMP)  ## One fixture crawl, refresh and deepen by BEFORE (a commit) and this tree, compared
	$(BIN)/python bench/same_outputs.py --before $(or $(BEFORE),HEAD~1)

bench-solr: $(STAMP)  ## mrcrawl index of a finished crawl (CRAWL=, default the cpu1x one) vs one client posting to Solr
	$(BIN)/python bench/solr_index.py $(if $(CRAWL),--crawl $(CRAWL),)

bench-http2: $(TEST_STAMP)  ## Does HTTP/2 pay for one request at a time on one connection? curl vs nginx, loopback and 20 ms
	$(BIN)/python bench/http2.py --requests 200 --rounds 5
	$(BIN)/python bench/http2.py --requests 50 --rounds 3 --delay-ms 20

bench-refresh: bench-deps  ## A crawl cycle's refresh cost: 1 % of the cpu4x web changed (POINT=cpu4x REPEAT=3)
	$(BENCH_PY) bench/refresh.py $(or $(POINT),cpu4x) --repeat $(or $(REPEAT),3)

bench-refresh-nutch: bench-deps  ## The same refresh with Apache Nutch 1.20 in local mode (POINT=cpu1x)
	test -x bench/work/nutch/runtime/local/bin/nutch || bash bench/nutch/setup.sh
	$(BENCH_PY) bench/refresh_nutch.py $(or $(POINT),cpu1x)

bench-media: bench-deps  ## Media store + thumbnails vs Scrapy's ImagesPipeline on a gallery web
	$(BENCH_PY) bench/media.py

bench-render: bench-deps  ## Rendered pages vs Scrapy with scrapy-playwright (Debian's Chromium)
	$(BENCH_PY) -m pip install --quiet scrapy-playwright
	$(BENCH_PY) bench/render.py
	$(BENCH_PY) bench/render.py --delay 1.0 --json bench/results/render-delay1.json

bench-inline-vs-local: $(STAMP)  ## Where local tasks overtake the inline runner (after bench-refresh)
	$(BIN)/python bench/inline_vs_local.py

bench-overhead: $(STAMP)  ## Fixed cost of one job, local vs inline runner, with profiles
	mkdir -p bench/results
	$(BIN)/python bench/job_overhead.py --json bench/results/job_overhead.json \
		--profile-out bench/results/job_overhead_profile.txt

bench-main-text: $(STAMP)  ## Main-text extractors: CPU and word F1 on the python3-doc manual
	mkdir -p bench/results
	$(BIN)/python bench/main_text.py --json bench/results/main_text.json \
		$(if $(wildcard bench/work/web-cpu1x),--web bench/work/web-cpu1x)

bench-summary:  ## Rebuild bench/results/summary.md from the results JSON
	$(BENCH_PY) bench/run.py --summary

# Apache Nutch 1.20 as a peer (bench/nutch/README.md): runtime + job file under
# bench/work/nutch/, for `bench/run.py POINT --crawlers nutch,nutch-yarn`. Idempotent:
# every finished step is skipped (a second run takes well under a second).
.PHONY: bench-nutch
bench-nutch:  ## Build Apache Nutch 1.20 (local runtime + YARN job file) in bench/work/nutch
	bash bench/nutch/setup.sh

# The Hadoop path (issue 17): the test cluster, then mrcrawl on YARN (small jobs
# in the driver, and every job on YARN), its local runner, Nutch in local mode and on the
# same YARN, each point in one run with a trivial streaming job's time (the floor).
BENCH_YARN_POINTS ?= yarn20 cpu1x
BENCH_YARN_CRAWLERS ?= mrcrawl-yarn,mrcrawl-yarn-all,mrcrawl,nutch,nutch-yarn
.PHONY: bench-yarn
bench-yarn: $(STAMP) bench-deps bench-nutch  ## mrcrawl on YARN against Nutch on the same YARN (hours at cpu1x)
	bash hadoop/up.sh
	. hadoop/env.sh && $(BENCH_PY) bench/run.py $(BENCH_YARN_POINTS) --crawlers $(BENCH_YARN_CRAWLERS) --timeout $(BENCH_TIMEOUT)
	. hadoop/env.sh && $(BIN)/python bench/yarn_anatomy.py --job optimize --repeat 3 --json bench/results/yarn_anatomy.json

# The wide, slow web (issue 48): thousands of hosts on 127.x.y.z, each answering after its
# own latency (bench/wide_web.py, served by bench/wide_server.py, one asyncio process).
# mrcrawl (defaults, and without in-fetch following), Scrapy at 64 and 256 requests at
# once (the fastest of 64-1,024 on 2026-12-06; scrapy-N for others) and Nutch 1.20 in
# local mode, each crawl bounded by WIDE_TIMEOUT seconds. POINT=wide1k (~10 min) or
# wide10k (mrcrawl alone ~6 min, the peers hours). `nutch` (its defaults)
# stalls on the web's 503 robots.txt (bench/README.md): nutch-no503defer is the default.
WIDE_CRAWLERS ?= mrcrawl,scrapy-64,scrapy-256,nutch-no503defer,mrcrawl+fetch.follow_hops=0
WIDE_TIMEOUT ?= 1800
NUTCH_THREADS ?= 200
bench-wide: bench-deps  ## Wide slow web: mrcrawl vs Scrapy vs Nutch (POINT=wide1k|wide10k)
	$(if $(findstring nutch,$(WIDE_CRAWLERS)),test -x bench/work/nutch/runtime/local/bin/nutch || bash bench/nutch/setup.sh)
	ulimit -n $$(ulimit -Hn); $(BENCH_PY) bench/wide.py $(or $(POINT),wide1k) \
		--crawlers $(WIDE_CRAWLERS) --timeout $(WIDE_TIMEOUT) --nutch-threads $(NUTCH_THREADS) \
		--mrcrawl-src $(BENCH_SRC)
