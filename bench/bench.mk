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

.PHONY: bench bench-quick bench-overhead bench-summary bench-deps bench-main-text

$(BENCH_STAMP):
	test -x $(BENCH_PY) || python3.11 -m venv bench/.venv-scrapy
	$(BENCH_PY) -m pip install --quiet scrapy psutil py-spy
	touch $@

bench-deps: $(STAMP) $(BENCH_STAMP)  ## Install the benchmark's tools: nginx-light (apt), Scrapy venv
	command -v nginx >/dev/null || (apt-get update && apt-get install -y nginx-light)

bench: bench-deps  ## Full benchmark suite (mrcrawl vs Scrapy, all scale points; hours): bench/results/
	$(BENCH_PY) bench/run.py $(BENCH_POINTS) --mrcrawl-src $(BENCH_SRC) --timeout $(BENCH_TIMEOUT)
	$(MAKE) bench-overhead

bench-quick: bench-deps  ## Smallest benchmark point only (politeness-bound, a few minutes)
	$(BENCH_PY) bench/run.py polite --mrcrawl-src $(BENCH_SRC) --timeout 900

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
