#!/usr/bin/env bash
# Stop mrcrawl's test Hadoop (hadoop/up.sh).
#   hadoop/down.sh           # stop daemons (PID files, then leftovers of this install)
#   hadoop/down.sh --clean   # ... and wipe HDFS/YARN data and logs (jars are kept)
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$HERE/env.sh"
H="$MRCRAWL_HADOOP_HOME"; PIDS="$H/pids"

clean=0
for a in "$@"; do
  case "$a" in
    --clean) clean=1 ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "down.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

log() { echo "[down.sh] $*" >&2; }

# Stop order: compute first, then storage. Worker nodes' daemons carry their node number
# (nodemanager2); "datanode" and "nodemanager" are from clusters started before that.
names=(historyserver)
for f in "$PIDS"/nodemanager*.pid; do [[ -f "$f" ]] && names+=("$(basename "$f" .pid)"); done
names+=(resourcemanager)
for f in "$PIDS"/datanode*.pid; do [[ -f "$f" ]] && names+=("$(basename "$f" .pid)"); done
names+=(namenode)
pids=()
for n in "${names[@]}"; do
  f="$PIDS/$n.pid"
  [[ -f "$f" ]] || continue
  pid="$(cat "$f")"
  if mrcrawl_daemon_running "$n" "$pid"; then
    log "stopping $n (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    pids+=("$pid")
  fi
  rm -f "$f"
done

wait_gone() {  # wait_gone SECONDS PID...
  local secs="$1"; shift
  local end=$(( $(date +%s) + secs )) p left
  while :; do
    left=0
    for p in "$@"; do
      # zombies (state Z: exited, not yet reaped by their parent) count as gone
      if kill -0 "$p" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]]; then left=1; fi
    done
    (( left == 0 )) && return 0
    (( $(date +%s) >= end )) && return 1
    sleep 0.3
  done
}
if (( ${#pids[@]} )) && ! wait_gone 20 "${pids[@]}"; then
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && { log "pid $p still alive: SIGKILL"; kill -KILL "$p" 2>/dev/null; }; done
fi

# Leftovers: JVMs started from this install's jar folder (daemons whose PID file was lost,
# and YARN containers orphaned by a killed NodeManager). Matched by exact classpath prefix,
# so other Java processes on the machine are untouched.
left=()
for d in /proc/[0-9]*; do
  p="${d#/proc/}"
  [[ "$p" == "$$" ]] && continue
  cmd="$(tr '\0' ' ' 2>/dev/null <"$d/cmdline")" 2>/dev/null || continue
  case "$cmd" in
    *java*"$H/jars/"*|*java*"$H/logs/userlogs"*) left+=("$p") ;;
  esac
done
if (( ${#left[@]} )); then
  log "killing leftover Hadoop JVMs: ${left[*]}"
  kill -TERM "${left[@]}" 2>/dev/null
  wait_gone 10 "${left[@]}" || kill -KILL "${left[@]}" 2>/dev/null
fi

if (( clean )); then
  log "wiping $H/data and $H/logs (jars and conf kept)"
  rm -rf "$H/data" "$H/logs" "$PIDS"
fi
log "stopped"
