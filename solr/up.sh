#!/usr/bin/env bash
# Start mrcrawl's test Solr 9 on loopback: one standalone (not SolrCloud) JVM built from
# Maven Central jars and solr/Launcher.java, with one core, "mrcrawl", whose configset is
# conf/solr/mrcrawl/conf/ in the repo.
#
#   solr/up.sh                        # gather jars (once), compile (once), start, wait, core
#   MRCRAWL_SOLR_PORT=8984 solr/up.sh
#   MRCRAWL_SOLR_FRESH=1 solr/up.sh   # drop the core (its index and transaction log) first
#   MRCRAWL_SOLR_TIMEOUT=90 MRCRAWL_SOLR_HEAP=512m   # (defaults)
#   MRCRAWL_SOLR_OPTS='-Dsolr.autoSoftCommit.maxTime=-1'  # extra JVM options
#
# Everything lives in $MRCRAWL_SOLR_HOME (default ~/.cache/mrcrawl-solr):
#   jars/ classes/ conf/log4j2.xml home/ (Solr home: solr.xml, mrcrawl/) logs/solr.log solr.pid
# Idempotent: a running Solr is left alone and the core keeps its documents. When the
# configset in the repo changed, it is copied into the core again and the core reloaded.
# Exits non-zero, with the tail of the log, if anything fails.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
# shellcheck source=env.sh
. "$HERE/env.sh"

H="$MRCRAWL_SOLR_HOME"
JARS="$H/jars"; CLASSES="$H/classes"; SOLR_HOME="$H/home"; LOGS="$H/logs"; PIDFILE="$H/solr.pid"
PORT="$MRCRAWL_SOLR_PORT"; CORE=mrcrawl
CORE_DIR="$SOLR_HOME/$CORE"; SRC_CONF="$REPO/conf/solr/$CORE/conf"
BASE="http://127.0.0.1:$PORT/solr"
TIMEOUT="${MRCRAWL_SOLR_TIMEOUT:-90}"
JAVA="$MRCRAWL_SOLR_JAVA_HOME/bin/java"

log() { echo "[solr/up.sh $(date +%H:%M:%S)] $*" >&2; }
die() { echo "[solr/up.sh] ERROR: $*" >&2; exit 1; }
fail_with_log() {
  echo "[solr/up.sh] ERROR: $*" >&2
  echo "----- end of $LOGS/solr.log (stack frames left out) -----" >&2
  grep -v -E $'^\t(at |\\.\\.\\. [0-9]+ more)' "$LOGS/solr.log" 2>/dev/null | tail -n 40 >&2 || true
  echo "-------------------------------------------" >&2
  exit 1
}

alive() { [[ -f "$PIDFILE" ]] && mrcrawl_solr_running "$(cat "$PIDFILE")"; }
running() {  # running PID: not exited (a zombie, exited but not yet reaped, is not running)
  local st; st="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  st="${st##*) }"; [[ "${st:0:1}" != [ZX] ]]
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# CoreAdmin call: prints Solr's answer; fails on an HTTP error (the answer then says why).
api() { curl -sS --fail-with-body --max-time 60 "$BASE/admin/cores?wt=json&$1"; }

[[ "$PORT" =~ ^[0-9]+$ ]] || die "MRCRAWL_SOLR_PORT must be a port number, not '$PORT'"
[[ -x "$JAVA" ]] || die "no java at $JAVA (need JDK 17; set MRCRAWL_JAVA_HOME)"
[[ -f "$SRC_CONF/solrconfig.xml" ]] || die "no configset at $SRC_CONF"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$H" "$LOGS" "$H/conf" "$SOLR_HOME"
# One up.sh at a time (parallel test runners): two would both see no Solr and start two.
exec 9>"$H/up.lock"
flock -w "$TIMEOUT" 9 || die "another solr/up.sh still holds $H/up.lock after ${TIMEOUT}s"

# ---------------------------------------------------------------- 1. jars and launcher
# Gathered once with Maven (downloads go to ~/.m2, reused); redone only when pom.xml changes
# (stamp = sha256 of pom.xml), into a fresh folder so no stale version stays on the class path.
POM_SUM="$(sha256sum "$HERE/pom.xml" | cut -d' ' -f1)"
if [[ "$(cat "$JARS/.complete" 2>/dev/null)" != "$POM_SUM" ]]; then
  command -v mvn >/dev/null || die "mvn not found (needed once to gather the Solr jars)"
  alive && die "solr/pom.xml changed while Solr runs on the old jars: run solr/down.sh first"
  log "gathering Solr jars into $JARS with Maven (once per pom.xml change)..."
  t0=$(date +%s)
  rm -rf "$JARS.tmp"
  if ! mvn -B -q -f "$HERE/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$JARS.tmp" >"$H/mvn.log" 2>&1; then
    tail -n 30 "$H/mvn.log" >&2
    die "maven failed (log: $H/mvn.log)"
  fi
  echo "$POM_SUM" >"$JARS.tmp/.complete"
  rm -rf "$JARS"; mv "$JARS.tmp" "$JARS"
  log "jars ready in $(( $(date +%s) - t0 ))s: $(du -sh "$JARS" | cut -f1), $(ls "$JARS" | wc -l) files"
fi

# Compiled when Launcher.java or the jars change (javac is ~1 s; the JDK's single-file
# source launcher would pay that at every start).
SRC_SUM="$(cat "$HERE/Launcher.java" "$JARS/.complete" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$CLASSES/.complete" 2>/dev/null)" != "$SRC_SUM" ]]; then
  [[ -x "$MRCRAWL_SOLR_JAVA_HOME/bin/javac" ]] || die "no javac in $MRCRAWL_SOLR_JAVA_HOME (need a JDK, not a JRE)"
  log "compiling Launcher.java"
  rm -rf "$CLASSES.tmp"; mkdir -p "$CLASSES.tmp"
  "$MRCRAWL_SOLR_JAVA_HOME/bin/javac" -nowarn -d "$CLASSES.tmp" -cp "$JARS/*" "$HERE/Launcher.java" \
    || die "javac failed on $HERE/Launcher.java"
  echo "$SRC_SUM" >"$CLASSES.tmp/.complete"
  rm -rf "$CLASSES"; mv "$CLASSES.tmp" "$CLASSES"
fi

# ---------------------------------------------------------------- 2. configuration
# Rewritten at every run; a running Solr keeps the one it started with (down.sh + up.sh).
cat >"$SOLR_HOME/solr.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8" ?>
<!-- generated by mrcrawl solr/up.sh; edits are overwritten. Standalone: no <solrcloud>. -->
<solr>
  <int name="maxBooleanClauses">${solr.max.booleanClauses:1024}</int>
  <shardHandlerFactory name="shardHandlerFactory" class="HttpShardHandlerFactory">
    <int name="socketTimeout">${socketTimeout:600000}</int>
    <int name="connTimeout">${connTimeout:60000}</int>
  </shardHandlerFactory>
</solr>
EOF

# Logs go to stderr, which up.sh sends to logs/solr.log (with the JVM's own messages).
# shutdownHook="disable": log4j must not close before Solr has logged its shutdown.
cat >"$H/conf/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by mrcrawl solr/up.sh; edits are overwritten -->
<Configuration shutdownHook="disable">
  <Appenders>
    <Console name="STDERR" target="SYSTEM_ERR">
      <PatternLayout pattern="%d{yyyy-MM-dd HH:mm:ss.SSS} %-5p (%t) [%X{core}] %c{1.} %m%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <!-- SolrCore.Request logs one line per request: set it to WARN to quiet the log -->
    <Logger name="org.apache.solr.core.SolrCore.Request" level="INFO"/>
    <Logger name="org.apache.solr.update.LoggingInfoStream" level="OFF"/>
    <Logger name="org.apache.zookeeper" level="WARN"/>
    <Logger name="org.eclipse.jetty" level="WARN"/>
    <Root level="INFO"><AppenderRef ref="STDERR"/></Root>
  </Loggers>
</Configuration>
EOF

# The repo's configset -> the core's conf/, only when it differs (a reload costs a searcher).
CONF_CHANGED=0
sync_conf() {
  if ! diff -rq "$SRC_CONF" "$CORE_DIR/conf" >/dev/null 2>&1; then
    mkdir -p "$CORE_DIR"
    rm -rf "$CORE_DIR/conf.tmp"; cp -r "$SRC_CONF" "$CORE_DIR/conf.tmp"
    rm -rf "$CORE_DIR/conf"; mv "$CORE_DIR/conf.tmp" "$CORE_DIR/conf"
    CONF_CHANGED=1
  fi
}

# ---------------------------------------------------------------- 3. start
if alive; then
  pid="$(cat "$PIDFILE")"
  [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == *" Launcher $PORT "* ]] \
    || die "Solr (pid $pid) is running on another port than $PORT; run solr/down.sh first"
  log "Solr already running (pid $pid)"
  if [[ "${MRCRAWL_SOLR_FRESH:-0}" == 1 ]]; then
    log "MRCRAWL_SOLR_FRESH=1: unloading core $CORE and deleting its folder"
    api "action=UNLOAD&core=$CORE&deleteInstanceDir=true" >/dev/null || true
    # the folder goes when the core's last searcher closes, maybe after UNLOAD answered
    for _ in $(seq 1 40); do [[ -d "$CORE_DIR" ]] || break; sleep 0.25; done
    [[ -d "$CORE_DIR" ]] && die "core folder $CORE_DIR still there after UNLOAD"
  fi
else
  rm -f "$PIDFILE"
  port_busy "$PORT" && die "port $PORT is in use by another process; free it or set MRCRAWL_SOLR_PORT"
  if [[ "${MRCRAWL_SOLR_FRESH:-0}" == 1 ]]; then
    log "MRCRAWL_SOLR_FRESH=1: deleting core $CORE ($CORE_DIR)"
    rm -rf "$CORE_DIR"
  fi
  # Before the start, so that an existing core loads the current configset.
  sync_conf
  [[ -f "$LOGS/solr.log" ]] && mv -f "$LOGS/solr.log" "$LOGS/solr.log.1"
  log "starting Solr on 127.0.0.1:$PORT"
  # SerialGC: one small heap, no GC threads competing for the 2 cores with the tests.
  # shellcheck disable=SC2086
  (cd "$H" && exec nohup "$JAVA" -Dmrcrawl.solr.home="$H" \
      -Xms64m -Xmx"${MRCRAWL_SOLR_HEAP:-512m}" -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError \
      -Dlog4j2.configurationFile="$H/conf/log4j2.xml" -Dsolr.log.dir="$LOGS" \
      -Dfile.encoding=UTF-8 -Duser.timezone=UTC -Djava.awt.headless=true \
      ${MRCRAWL_SOLR_OPTS:-} \
      -cp "$CLASSES:$JARS/*" Launcher "$PORT" "$SOLR_HOME") >"$LOGS/solr.log" 2>&1 </dev/null 9>&- &
  pid=$!  # the JVM itself: the subshell execs nohup, which execs java
  echo "$pid" >"$PIDFILE"
  t0=$(date +%s)
  deadline=$(( t0 + TIMEOUT ))
  until curl -sf --max-time 2 -o /dev/null "$BASE/admin/cores?action=STATUS"; do
    running "$pid" || { rm -f "$PIDFILE"; fail_with_log "Solr died during startup"; }
    (( $(date +%s) < deadline )) \
      || fail_with_log "Solr (pid $pid) not answering on $BASE after ${TIMEOUT}s (solr/down.sh stops it)"
    sleep 0.5
  done
  log "Solr up in $(( $(date +%s) - t0 ))s (pid $pid)"
  CONF_CHANGED=0  # the core (if any) loaded the current configset
fi

# ---------------------------------------------------------------- 4. core
# One of: loaded, missing, or "failed <reason>" (the core exists but did not load).
core_state() {
  api "action=STATUS&core=$CORE" | python3 -c 'import sys, json
r = json.load(sys.stdin)
fail = r.get("initFailures", {}).get(sys.argv[1])
if fail: print("failed", fail)
elif r.get("status", {}).get(sys.argv[1], {}).get("name"): print("loaded")
else: print("missing")' "$CORE"
}
# The reason of a failed admin call: Solr's message and the last "Caused by" of its trace.
api_error() { python3 -c 'import sys, json
t = sys.stdin.read()
try:
    e = json.loads(t)["error"]
    causes = [l.split(": ", 1)[-1] for l in e.get("trace", "").splitlines() if l.startswith("Caused by:")]
    print(e["msg"] + (": " + causes[-1] if causes else ""))
except Exception:
    print(t.strip().splitlines()[0] if t.strip() else "no answer")'; }

sync_conf
state="$(core_state)" || fail_with_log "core STATUS call failed"
if [[ "$state" == missing ]]; then
  log "creating core $CORE from $SRC_CONF"
  out="$(api "action=CREATE&name=$CORE&instanceDir=$CORE")" \
    || fail_with_log "creating core $CORE failed: $(api_error <<<"$out")"
elif (( CONF_CHANGED )) || [[ "$state" != loaded ]]; then
  # RELOAD also retries a core that failed to load: it creates it again from its folder.
  if (( CONF_CHANGED )); then log "configset changed: reloading core $CORE"
  else log "core $CORE failed to load: reloading it"; fi
  out="$(api "action=RELOAD&core=$CORE")" \
    || fail_with_log "reloading core $CORE failed: $(api_error <<<"$out")"
fi
state="$(core_state)"
[[ "$state" == loaded ]] || fail_with_log "core $CORE did not load: ${state#failed }"
docs="$(curl -s --max-time 10 "$BASE/$CORE/select?q=*:*&rows=0&wt=json" \
        | python3 -c 'import sys, json; print(json.load(sys.stdin)["response"]["numFound"])' 2>/dev/null || echo '?')"
log "ready: $MRCRAWL_SOLR_URL ($docs documents)"
