#!/usr/bin/env bash
# Stop mrcrawl's test Solr (started by solr/up.sh): TERM, then KILL after a timeout.
#   solr/down.sh           # stop it (the core and its documents are kept)
#   solr/down.sh --clean   # ... and delete the Solr home (cores, index) and logs; jars kept
#   MRCRAWL_SOLR_STOP_TIMEOUT=30 solr/down.sh   # seconds before KILL (default)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$HERE/env.sh"
H="$MRCRAWL_SOLR_HOME"; PIDFILE="$H/solr.pid"
STOP_TIMEOUT="${MRCRAWL_SOLR_STOP_TIMEOUT:-30}"

clean=0
for a in "$@"; do
  case "$a" in
    --clean) clean=1 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "[solr/down.sh] ERROR: unknown argument $a" >&2; exit 2 ;;
  esac
done
log() { echo "[solr/down.sh] $*" >&2; }

# The pid file's process, and any other JVM of this install whose pid file was lost.
pids=()
if [[ -f "$PIDFILE" ]] && mrcrawl_solr_running "$(cat "$PIDFILE")"; then pids+=("$(cat "$PIDFILE")"); fi
for d in /proc/[0-9]*; do
  p="${d#/proc/}"
  [[ " ${pids[*]} " == *" $p "* ]] && continue
  mrcrawl_solr_running "$p" && pids+=("$p")
done

# Gone = no thread left running. Not `kill -0`: a killed process is a zombie until reaped.
# Nor the main thread's state alone: it can be a zombie while other threads still exit and
# the JVM still holds the port.
gone() {  # gone PID...
  local p f st
  for p in "$@"; do
    for f in /proc/"$p"/task/*/stat; do
      st="$(cat "$f" 2>/dev/null)" || continue
      st="${st##*) }"  # the state follows "(thread name) ", and names may hold spaces
      [[ "${st:0:1}" == [ZX] ]] || return 1
    done
  done
  return 0
}
wait_gone() {  # wait_gone SECONDS PID...
  local end=$(( $(date +%s) + $1 )); shift
  until gone "$@"; do (( $(date +%s) < end )) || return 1; sleep 0.3; done
}
if (( ${#pids[@]} )); then
  log "stopping Solr (pid ${pids[*]})"
  kill -TERM "${pids[@]}" 2>/dev/null || true
  # Solr commits and closes its cores on TERM: give it time before forcing.
  if ! wait_gone "$STOP_TIMEOUT" "${pids[@]}"; then
    log "still running after ${STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait_gone 10 "${pids[@]}" || { echo "[solr/down.sh] ERROR: pid ${pids[*]} survived SIGKILL" >&2; exit 1; }
  fi
else
  log "Solr is not running"
fi
rm -f "$PIDFILE"

if (( clean )); then
  log "deleting $H/home and $H/logs (jars kept)"
  rm -rf "$H/home" "$H/logs"
fi
log "stopped"
