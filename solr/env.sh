# shellcheck shell=bash
# Source me:  . solr/env.sh
# Where mrcrawl's test Solr lives and answers (see solr/up.sh). Set MRCRAWL_SOLR_PORT
# (default 8983) and MRCRAWL_SOLR_HOME before sourcing to move them.
export MRCRAWL_SOLR_HOME="${MRCRAWL_SOLR_HOME:-$HOME/.cache/mrcrawl-solr}"
export MRCRAWL_SOLR_PORT="${MRCRAWL_SOLR_PORT:-8983}"
export MRCRAWL_SOLR_URL="http://127.0.0.1:$MRCRAWL_SOLR_PORT/solr/mrcrawl"

# Solr 9 runs on JDK 11+; take the JDK 17 that hadoop/ uses, not whatever `java` is first.
# (Not exported as JAVA_HOME: sourcing this file should not change other tools' Java.)
if [[ -z "${MRCRAWL_JAVA_HOME:-}" ]]; then
  for _j in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64 /usr/lib/jvm/java-17-openjdk /usr/lib/jvm/temurin-17*; do
    if [[ -x "$_j/bin/java" ]]; then MRCRAWL_JAVA_HOME="$_j"; break; fi
  done
  unset _j
fi
MRCRAWL_SOLR_JAVA_HOME="${MRCRAWL_JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java || echo /usr/bin/java)")")")}"

# mrcrawl_solr_running PID -> 0 if PID is alive and is the Solr of this MRCRAWL_SOLR_HOME
# (its command line carries -Dmrcrawl.solr.home=...), so a recycled PID is not mistaken
# for it. Matched in bash, not with `tr | grep -q` (SIGPIPE under pipefail: hadoop/env.sh).
mrcrawl_solr_running() {
  local pid="$1" cmd
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmd" == *"-Dmrcrawl.solr.home=$MRCRAWL_SOLR_HOME "* ]]
}
