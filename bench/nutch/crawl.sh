#!/usr/bin/env bash
# Crawl a seeds file with Apache Nutch 1.20 (built by bench/nutch/setup.sh), in local mode
# (each step a JVM with Hadoop's LocalJobRunner) or in deploy mode on the project's YARN
# (`hadoop jar JOB CLASS`, the crawl dir on HDFS). Adapted from
# /work/shared/peers/nutch/crawl_nutch.sh and crawl_nutch_yarn.sh.
#
#   bench/nutch/crawl.sh --mode local|yarn --seeds FILE --crawl-dir DIR --rounds N
#                        [--delay SECONDS] [--threads N] [--logs DIR] [--stats]
#
# One inject, then N rounds of generate, fetch, parse, updatedb (like bin/crawl without
# invertlinks, dedup and index); stops early when generate finds nothing due (exit 1).
# DIR: a local folder (local mode) or an HDFS path (yarn mode); either is wiped first.
# --logs: the client log of every step (default DIR/logs in local mode, required in yarn
# mode). --stats: `readdb -stats` at the end. Yarn mode needs `. hadoop/env.sh` and the
# cluster up. Env: NUTCH_WORK (default bench/work/nutch), NUTCH_HEAPSIZE (local JVMs, MB),
# NUTCH_EXTRA_D (more -Dkey=value options for every step, space-separated).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${NUTCH_WORK:-$(dirname "$HERE")/work/nutch}
RT=$WORK/runtime/local
JOB=$WORK/runtime/deploy/apache-nutch-1.20.job
MODE= SEEDS= CRAWL= ROUNDS= DELAY=0 THREADS=64 LOGS= STATS=0
while [ $# -gt 0 ]; do
  case $1 in
    --mode) MODE=$2; shift 2 ;;        --seeds) SEEDS=$2; shift 2 ;;
    --crawl-dir) CRAWL=$2; shift 2 ;;  --rounds) ROUNDS=$2; shift 2 ;;
    --delay) DELAY=$2; shift 2 ;;      --threads) THREADS=$2; shift 2 ;;
    --logs) LOGS=$2; shift 2 ;;        --stats) STATS=1; shift ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
[ -n "$MODE" ] && [ -f "$SEEDS" ] && [ -n "$CRAWL" ] && [ -n "$ROUNDS" ] ||
  { echo "crawl.sh: --mode, --seeds FILE, --crawl-dir and --rounds are required" >&2; exit 2; }
SEEDS=$(readlink -f "$SEEDS")

# Every step gets these (Hadoop's ToolRunner puts them in the job's configuration, so
# YARN's tasks see them too).
D=(-Dhttp.agent.name=nutchbench            # the User-Agent is nutchbench/Nutch-1.20
   -Dfetcher.server.delay="$DELAY"          # seconds from one response to the next request
   -Dfetcher.server.min.delay="$DELAY"
   -Dfetcher.threads.per.queue=1            # one connection per host (queue = host)
   -Dfetcher.queue.mode=byHost
   -Dfetcher.threads.fetch="$THREADS"
   -Ddb.ignore.external.links=false         # the web spans many hosts
   -Ddb.max.outlinks.per.page=-1            # default 100 cuts an index page's links
   -Dmapreduce.job.reduces=1
   -Dmapreduce.map.speculative=false -Dmapreduce.reduce.speculative=false
   -Dmapreduce.map.output.compress=true)
# More -D options for every step, space-separated (bench/wide.py: nutch-no503defer).
# shellcheck disable=SC2206
[ -n "${NUTCH_EXTRA_D:-}" ] && D+=($NUTCH_EXTRA_D)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
case $MODE in
  local)
    [ -x "$RT/bin/nutch" ] || { echo "no $RT/bin/nutch: run bench/nutch/setup.sh" >&2; exit 1; }
    if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/java" ]; then
      export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
    fi
    rm -rf "$CRAWL"; mkdir -p "$CRAWL"; CRAWL=$(cd "$CRAWL" && pwd)
    LOGS=${LOGS:-$CRAWL/logs}
    # Hadoop's local job runner keeps its temp and staging files in the crawl dir.
    D+=(-Dhadoop.tmp.dir="$CRAWL/.hadoop-tmp"
        -Dmapreduce.jobtracker.staging.root.dir="$CRAWL/.hadoop-tmp/staging")
    export NUTCH_HOME=$RT NUTCH_CONF_DIR=$RT/conf NUTCH_LOG_DIR=$LOGS
    run() { "$RT/bin/nutch" "$@"; }
    INJECT=inject GENERATE=generate FETCH=fetch PARSE=parse UPDATEDB=updatedb READDB=readdb
    SEEDS_IN=$SEEDS ;;
  yarn)
    [ -f "$JOB" ] || { echo "no $JOB: run bench/nutch/setup.sh" >&2; exit 1; }
    command -v hadoop >/dev/null || { echo "no hadoop on PATH: . hadoop/env.sh" >&2; exit 1; }
    [ -n "$LOGS" ] || { echo "crawl.sh: --logs DIR is required in yarn mode" >&2; exit 2; }
    CRAWL=${CRAWL#hdfs://}; CRAWL=/${CRAWL#/}      # hdfs:///a/b -> /a/b
    run() { hadoop jar "$JOB" "$@"; }
    INJECT=org.apache.nutch.crawl.Injector GENERATE=org.apache.nutch.crawl.Generator
    FETCH=org.apache.nutch.fetcher.Fetcher PARSE=org.apache.nutch.parse.ParseSegment
    UPDATEDB=org.apache.nutch.crawl.CrawlDb READDB=org.apache.nutch.crawl.CrawlDbReader
    SEEDS_IN=$CRAWL/seeds ;;
  *) echo "crawl.sh: --mode local or yarn" >&2; exit 2 ;;
esac
rm -rf "$LOGS"; mkdir -p "$LOGS"

RC=0
step() { # name logfile tool args...: one JVM (local) or one `hadoop jar` (yarn)
  local name=$1 lf=$LOGS/$2 t; shift 2; t=$(now); RC=0
  run "$@" > "$lf" 2>&1 || RC=$?
  printf '  %-9s %6ss  rc=%s  %s\n' "$name" "$(secs "$t" "$(now)")" "$RC" \
    "$(grep -o 'running in uber mode : [a-z]*' "$lf" | awk '{print "uber=" $NF}' | tr '\n' ' ')"
  if [ $RC -ne 0 ] && ! { [ "$name" = generate ] && [ $RC -eq 1 ]; }; then
    echo "FAILED ($lf):"; tail -30 "$lf"; exit $RC
  fi
}

T0=$(now)
echo "nutch $MODE: seeds=$SEEDS crawl=$CRAWL rounds=$ROUNDS delay=${DELAY}s threads=$THREADS"
if [ "$MODE" = yarn ]; then
  t=$(now)
  hadoop fs -rm -r -f -skipTrash "$CRAWL" > /dev/null
  hadoop fs -mkdir -p "$SEEDS_IN"
  hadoop fs -put "$SEEDS" "$SEEDS_IN/seeds.txt"
  printf '  %-9s %6ss\n' hdfs-prep "$(secs "$t" "$(now)")"
fi
step inject 0-inject.log $INJECT "${D[@]}" "$CRAWL/crawldb" "$SEEDS_IN"
for ((r = 1; r <= ROUNDS; r++)); do
  echo "[round $r/$ROUNDS]"
  # no -topN: the whole layer is generated; -noFilter: URLs were filtered when found
  step generate "$r-generate.log" $GENERATE "${D[@]}" "$CRAWL/crawldb" "$CRAWL/segments" \
    -numFetchers 1 -noFilter
  if [ $RC -eq 1 ]; then echo "  nothing due for fetching: stopping"; break; fi
  SEG=$(grep -o 'Generator: segment: .*' "$LOGS/$r-generate.log" | tail -1 | sed 's/.*segment: //')
  if [ -z "$SEG" ] && [ "$MODE" = local ]; then
    SEG=$CRAWL/segments/$(ls "$CRAWL/segments" | sort | tail -1)
  fi
  [ -n "$SEG" ] || { echo "no segment name in $LOGS/$r-generate.log"; exit 1; }
  step fetch    "$r-fetch.log"    $FETCH    "${D[@]}" "$SEG" -threads "$THREADS"
  step parse    "$r-parse.log"    $PARSE    "${D[@]}" "$SEG"
  step updatedb "$r-updatedb.log" $UPDATEDB "${D[@]}" "$CRAWL/crawldb" "$SEG"
done
echo "crawl: $(secs "$T0" "$(now)")s"
if [ $STATS = 1 ]; then
  run $READDB "$CRAWL/crawldb" -stats > "$LOGS/readdb-stats.log" 2>&1 || true
  grep -hE 'TOTAL urls|status [0-9]' "$LOGS/readdb-stats.log" "$LOGS/hadoop.log" 2>/dev/null |
    sed 's/^.*\] //; s/^.*INFO [^ ]* //' | sort -u
fi
exit 0
