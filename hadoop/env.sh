# shellcheck shell=bash
# Source me:  . hadoop/env.sh
# Sets up the environment for mrcrawl's single-node Hadoop (see hadoop/NOTES.md).
_mrcrawl_hadoop_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

export MRCRAWL_HADOOP_HOME="${MRCRAWL_HADOOP_HOME:-$HOME/.cache/mrcrawl-hadoop}"
# Hadoop 3.5 wants JDK 17; do not rely on the system default java.
if [[ -z "${MRCRAWL_JAVA_HOME:-}" ]]; then
  for _j in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64 /usr/lib/jvm/java-17-openjdk /usr/lib/jvm/temurin-17*; do
    if [[ -x "$_j/bin/java" ]]; then MRCRAWL_JAVA_HOME="$_j"; break; fi
  done
  unset _j
fi
export JAVA_HOME="${MRCRAWL_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}"
export HADOOP_HOME="$MRCRAWL_HADOOP_HOME"
export HADOOP_CONF_DIR="$MRCRAWL_HADOOP_HOME/conf"
export HADOOP_LOG_DIR="$MRCRAWL_HADOOP_HOME/logs"
export MRCRAWL_HADOOP_BIN="$_mrcrawl_hadoop_dir/bin/hadoop"
case ":$PATH:" in
  *":$_mrcrawl_hadoop_dir/bin:"*) ;;
  *) export PATH="$_mrcrawl_hadoop_dir/bin:$JAVA_HOME/bin:$PATH" ;;
esac
# hadoop-streaming is published on Maven Central only up to 3.4.2 (see pom.xml).
# (|| true: before the jars are gathered ls finds none, and up.sh sources this file under
# set -e -o pipefail: a failing pipeline here ended it silently on a fresh machine.)
MRCRAWL_STREAMING_JAR="$(ls "$MRCRAWL_HADOOP_HOME"/jars/hadoop-streaming-*.jar 2>/dev/null | head -n1 || true)"
export MRCRAWL_STREAMING_JAR="${MRCRAWL_STREAMING_JAR:-$MRCRAWL_HADOOP_HOME/jars/hadoop-streaming.jar}"
# Python used by tasks on the NodeManager (a system interpreter, not the venv).
if [[ -z "${MRCRAWL_TASK_PYTHON:-}" ]]; then
  # The system's Python first, as on a cluster's nodes: not one under a user's HOME.
  for _p in /usr/bin/python3.11 /usr/local/bin/python3.11 /root/.pyenv/versions/3.11.7/bin/python3.11; do
    if [[ -x "$_p" ]]; then MRCRAWL_TASK_PYTHON="$_p"; break; fi
  done
  unset _p
fi
export MRCRAWL_TASK_PYTHON
unset _mrcrawl_hadoop_dir

# mrcrawl_daemon_running NAME PID -> 0 if PID is alive and runs daemon NAME (up.sh and
# down.sh). Briefly the command line is "bash .../bin/hdfs namenode", before the shim
# execs java, and empty while it execs (counted as running). Matched in bash, not with
# `tr | grep -q`: under pipefail, grep -q leaving early made tr die of SIGPIPE on the
# JVM's long command line, so a live NameNode was reported dead on a fresh machine.
# A worker node's daemon is named with its node number (datanode2: the DataNode of node 2)
# and runs with that node's configuration folder.
mrcrawl_daemon_running() {
  local name="$1" pid="$2" cmd re base k
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ -z "$cmd" ]] && return 0
  base="${name%%[0-9]*}"; k="${name#"$base"}"
  re="(-Dproc_$base |bin/(hdfs|yarn|mapred) $base( |$))"
  [[ "$cmd" =~ $re ]] || return 1
  [[ -z "$k" || "$cmd" != *-Dproc_* || "$cmd" == *"/nodes/$k/conf"* ]]
}
