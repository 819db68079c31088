#!/usr/bin/env bash
# Assemble Apache Nutch 1.20 for the benchmark, without ant/ivy and without the binary
# tarball (adapted from the recipe in /work/shared/peers/nutch/setup_nutch.sh):
#
#   WORK/src-1.20/                 the source tree, tag release-1.20 of github apache/nutch
#   WORK/runtime/local/            bin/ conf/ lib/ plugins/ (local mode: bin/nutch)
#   WORK/runtime/deploy/apache-nutch-1.20.job   the job file for `hadoop jar` (YARN)
#
#   bash bench/nutch/setup.sh            # WORK = bench/work/nutch (git-ignored)
#
# Jars come from Maven Central through mvn; the plugins are compiled with javac from
# src/plugin/. Every step leaves a stamp in WORK/build/ and is skipped when done
# (FORCE=1 redoes all); conf/ and the job file are rewritten only when their input changed.
#
# Environment: NUTCH_WORK (default bench/work/nutch), NUTCH_SRC (an extracted source tree),
# NUTCH_GIT_DIR (a git dir holding the tag; default: the snapshot the `fetch` tool leaves in
# /work/.mirror/apache+nutch/repo; without one, git clone from GitHub), JAVA_HOME (JDK 17).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH=$(dirname "$HERE")
VERSION=1.20
TAG=release-$VERSION
TAG_COMMIT=a2cb6aa5d3e90b7249e47323f2fa4cbf2aa9fa27
WORK=${NUTCH_WORK:-$BENCH/work/nutch}
SRC=${NUTCH_SRC:-$WORK/src-$VERSION}
B=$WORK/build
RT=$WORK/runtime/local
JOB=$WORK/runtime/deploy/apache-nutch-$VERSION.job
# What a crawl of HTML over HTTP needs (lib-* before the plugins compiled against them).
PLUGINS="nutch-extensionpoints lib-http lib-nekohtml lib-regex-filter protocol-http \
parse-html urlfilter-regex urlnormalizer-basic urlnormalizer-regex urlnormalizer-pass \
scoring-opic"
PLUGIN_INCLUDES='protocol-http|urlfilter-regex|parse-html|scoring-opic|urlnormalizer-(pass|regex|basic)'

if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/javac" ]; then
  JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi
export JAVA_HOME
log() { echo "[nutch setup $(date +%H:%M:%S)] $*"; }
die() { echo "[nutch setup] ERROR: $*" >&2; exit 1; }
[ -x "$JAVA_HOME/bin/javac" ] || die "no JDK at JAVA_HOME=$JAVA_HOME"
mkdir -p "$B" "$RT"
[ "${FORCE:-0}" = 1 ] && rm -f "$B"/*.stamp "$JOB"
t0=$(date +%s)

# ---------------------------------------------------------------- 0. source tree
if [ ! -f "$SRC/build.xml" ]; then
  GIT_DIR_=${NUTCH_GIT_DIR:-/work/.mirror/apache+nutch/repo}
  rm -rf "$SRC.tmp"; mkdir -p "$SRC.tmp"
  if git --git-dir="$GIT_DIR_" rev-parse -q --verify "$TAG^{commit}" >/dev/null 2>&1; then
    log "extracting $TAG from $GIT_DIR_"
    [ "$(git --git-dir="$GIT_DIR_" rev-parse "$TAG^{commit}")" = $TAG_COMMIT ] ||
      die "$TAG in $GIT_DIR_ is not commit $TAG_COMMIT"
    git --git-dir="$GIT_DIR_" archive "$TAG" | tar -x -C "$SRC.tmp"
  else
    log "cloning $TAG from GitHub"
    git clone -q --depth 1 -b "$TAG" https://github.com/apache/nutch "$SRC.tmp/.clone"
    git -C "$SRC.tmp/.clone" archive "$TAG" | tar -x -C "$SRC.tmp"
    rm -rf "$SRC.tmp/.clone"
  fi
  rm -rf "$SRC"; mv "$SRC.tmp" "$SRC"
fi
grep -q "^version=$VERSION\$" "$SRC/default.properties" || die "$SRC is not Nutch $VERSION"

# ---------------------------------------------------------------- 1. lib/ (Maven Central)
# nutch-1.20.pom marks nearly every dependency optional (a transitive resolve brings no
# Hadoop), so this pom restates the non-test dependencies of ivy/ivy.xml at release-1.20.
# org.tallison.tika:tika-core-shaded:2.9.1.0 is not served by the Maven mirror here: then
# org.apache.tika:tika-core:2.9.1 with commons-io 2.15.1 (Nutch core only uses its mime
# detection, the same org.apache.tika classes).
if [ ! -f "$B/lib.stamp" ]; then
  if mvn -B -q dependency:get -Dartifact=org.tallison.tika:tika-core-shaded:2.9.1.0 \
       -Dtransitive=false > "$B/mvn-tika-probe.log" 2>&1; then
    TIKA="org.tallison.tika tika-core-shaded 2.9.1.0"; CIO=2.11.0
  else
    TIKA="org.apache.tika tika-core 2.9.1"; CIO=2.15.1
  fi
  log "resolving lib/ with mvn (tika: $TIKA, commons-io $CIO)"
  none='<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>'
  nolog='<exclusions><exclusion><groupId>ch.qos.reload4j</groupId><artifactId>*</artifactId></exclusion><exclusion><groupId>org.slf4j</groupId><artifactId>*</artifactId></exclusion></exclusions>'
  dep() { echo "<dependency><groupId>$1</groupId><artifactId>$2</artifactId><version>$3</version>${4:-}</dependency>"; }
  mkdir -p "$B/lib-pom"
  {
    echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
    echo '<groupId>local.bench</groupId><artifactId>nutch-lib</artifactId><version>1</version><packaging>pom</packaging><dependencies>'
    dep org.apache.nutch nutch $VERSION "$none"
    dep org.apache.logging.log4j log4j-api 2.21.1
    dep org.apache.logging.log4j log4j-core 2.21.1
    dep org.apache.logging.log4j log4j-slf4j2-impl 2.21.1
    dep org.slf4j slf4j-api 2.0.9
    dep org.apache.commons commons-lang3 3.13.0
    dep org.apache.commons commons-collections4 4.4
    dep org.apache.httpcomponents httpclient 4.5.13
    dep commons-codec commons-codec 1.16.0
    dep commons-io commons-io $CIO
    dep org.apache.commons commons-compress 1.24.0
    dep org.apache.commons commons-jexl3 3.2.1
    dep com.tdunning t-digest 3.3
    for a in hadoop-common hadoop-hdfs hadoop-mapreduce-client-core hadoop-mapreduce-client-jobclient; do
      dep org.apache.hadoop $a 3.3.6 "$nolog"
    done
    # shellcheck disable=SC2086
    dep $TIKA "$none"
    dep xml-apis xml-apis 1.4.01
    dep xerces xercesImpl 2.12.2
    dep com.ibm.icu icu4j 71.1
    dep com.google.guava guava 31.1-jre
    dep com.github.crawler-commons crawler-commons 1.4
    dep com.google.code.gson gson 2.9.1
    dep com.martinkl.warc warc-hadoop 0.1.0 '<exclusions><exclusion><groupId>*</groupId><artifactId>hadoop-client</artifactId></exclusion></exclusions>'
    for a in cxf-rt-frontend-jaxws cxf-rt-frontend-jaxrs cxf-rt-transports-http cxf-rt-transports-http-jetty; do
      dep org.apache.cxf $a 3.5.3
    done
    dep com.fasterxml.jackson.core jackson-databind 2.15.2
    dep com.fasterxml.jackson.core jackson-annotations 2.15.2
    dep com.fasterxml.jackson.dataformat jackson-dataformat-cbor 2.15.2
    dep com.fasterxml.jackson.jaxrs jackson-jaxrs-json-provider 2.15.2
    dep org.netpreserve.commons webarchive-commons 1.1.9 '<exclusions><exclusion><groupId>*</groupId><artifactId>hadoop-core</artifactId></exclusion><exclusion><groupId>com.google.guava</groupId><artifactId>*</artifactId></exclusion><exclusion><groupId>junit</groupId><artifactId>*</artifactId></exclusion><exclusion><groupId>org.json</groupId><artifactId>*</artifactId></exclusion><exclusion><groupId>it.unimi.dsi</groupId><artifactId>dsiutils</artifactId></exclusion><exclusion><groupId>org.gnu.inet</groupId><artifactId>libidn</artifactId></exclusion></exclusions>'
    dep org.apache.httpcomponents httpcore-nio 4.4.14
    dep org.apache.httpcomponents httpcore 4.4.14
    dep de.vandermeer asciitable 0.3.2
    echo '</dependencies></project>'
  } > "$B/lib-pom/pom.xml"
  rm -rf "$RT/lib"; mkdir -p "$RT/lib"
  # ivy.xml's global excludes: log4j 1.x, slf4j-log4j12, jms, jmxtools, jmxri, xstream
  (cd "$B/lib-pom" && mvn -B -q dependency:copy-dependencies -DoutputDirectory="$RT/lib" \
     -DincludeScope=runtime \
     -DexcludeArtifactIds=log4j,slf4j-log4j12,slf4j-reload4j,reload4j,jmxtools,jms,jmxri \
     -DexcludeGroupIds=com.thoughtworks.xstream,ch.qos.reload4j) > "$B/mvn-lib.log" 2>&1 ||
    { tail -40 "$B/mvn-lib.log"; die "mvn failed (log: $B/mvn-lib.log)"; }
  [ -f "$RT/lib/nutch-$VERSION.jar" ] || die "no nutch-$VERSION.jar in $RT/lib"
  log "lib/: $(ls "$RT/lib" | wc -l) jars, $(du -sh "$RT/lib" | cut -f1)"
  touch "$B/lib.stamp"
fi

# ---------------------------------------------------------------- 2. bin/ and conf/
if [ ! -f "$B/binconf.stamp" ]; then
  mkdir -p "$RT/bin" "$RT/conf"
  cp "$SRC/src/bin/nutch" "$SRC/src/bin/crawl" "$RT/bin/"; chmod +x "$RT/bin/"*
  for f in "$SRC"/conf/*; do n=$(basename "$f"); cp "$f" "$RT/conf/${n%.template}"; done
  touch "$B/binconf.stamp"
fi

# ---------------------------------------------------------------- 3. plugins/ (javac)
mkdir -p "$RT/plugins"
for p in $PLUGINS; do
  [ -f "$B/plugin-$p.stamp" ] && continue
  pd=$SRC/src/plugin/$p; out=$RT/plugins/$p; pb=$B/plugin-$p
  [ -f "$pd/plugin.xml" ] || die "no plugin $p in $SRC/src/plugin"
  log "plugin $p"
  rm -rf "$out" "$pb"; mkdir -p "$out" "$pb/classes"
  cp "$pd/plugin.xml" "$out/"
  # third-party jars of the plugin's ivy.xml (test confs left out) -> plugins/<p>/
  deps=$(python3 - "$pd/ivy.xml" <<'PY'
import os, sys, xml.etree.ElementTree as ET
if os.path.exists(sys.argv[1]):
    for d in ET.parse(sys.argv[1]).getroot().iter():
        if d.tag.split('}')[-1] == 'dependency' and not d.get('conf', '').startswith('test'):
            trans = d.get('transitive') != 'false' and not d.get('conf', '').endswith('->master')
            print(d.get('org'), d.get('name'), d.get('rev'), 'true' if trans else 'false')
PY
)
  if [ -n "$deps" ]; then
    mkdir -p "$pb/pom"
    {
      echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
      echo "<groupId>local.bench</groupId><artifactId>plugin-$p</artifactId><version>1</version><packaging>pom</packaging><dependencies>"
      while read -r g a v t; do
        x=; [ "$t" = false ] && x='<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>'
        echo "<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version>$x</dependency>"
      done <<< "$deps"
      echo '</dependencies></project>'
    } > "$pb/pom/pom.xml"
    (cd "$pb/pom" && mvn -B -q dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$out") > "$pb/mvn.log" 2>&1 ||
      { tail -40 "$pb/mvn.log"; die "mvn failed for plugin $p"; }
    for j in "$out"/*.jar; do [ -e "$RT/lib/$(basename "$j")" ] && rm -f "$j"; done
  fi
  if [ -d "$pd/src/java" ]; then
    find "$pd/src/java" -name '*.java' > "$pb/sources.txt"
    cp_plugins=$(find "$RT/plugins" -name '*.jar' | tr '\n' ':')
    "$JAVA_HOME/bin/javac" -nowarn -encoding UTF-8 --release 11 -J-Xmx512m \
      -cp "$RT/lib/*:$cp_plugins" -d "$pb/classes" @"$pb/sources.txt" > "$pb/javac.log" 2>&1 ||
      { cat "$pb/javac.log"; die "javac failed for plugin $p"; }
    (cd "$pd/src/java" && find . -type f ! -name '*.java' ! -name package.html \
       -exec cp --parents {} "$pb/classes/" \;)
    "$JAVA_HOME/bin/jar" cf "$out/$p.jar" -C "$pb/classes" .
  fi
  for lib in $(grep -o '<library name="[^"]*"' "$pd/plugin.xml" | sed 's/.*name="//; s/"$//'); do
    [ -e "$out/$lib" ] || [ -e "$RT/lib/$lib" ] || die "plugin $p: library $lib missing"
  done
  touch "$B/plugin-$p.stamp"
done

# ---------------------------------------------------------------- 4. the bench's conf
# Written on every run, replaced only when different (the job is rebuilt when conf/ is
# newer). A crawl's politeness, agent and limits are -D options of bench/nutch/crawl.sh.
put() { cat > "$B/.put"; cmp -s "$B/.put" "$1" || cp "$B/.put" "$1"; }  # stdin -> $1 if new
put "$RT/conf/nutch-site.xml" <<EOF
<?xml version="1.0"?>
<!-- written by bench/nutch/setup.sh; crawl.sh sets the crawl's own values with -D -->
<configuration>
  <property><name>http.agent.name</name><value>nutchbench</value></property>
  <property><name>plugin.includes</name><value>$PLUGIN_INCLUDES</value></property>
</configuration>
EOF
# Nutch's default rules, but URLs with ? = etc. are kept (the bench web links to
# page.html?ref=nav, and the other crawlers fetch it) and only the loopback web passes.
put "$RT/conf/regex-urlfilter.txt" <<'EOF'
# written by bench/nutch/setup.sh: Nutch's default rules without "-[?*!@=]",
# and only http://127.x.y.z[:port]/ (the bench web) is accepted.
-^(?:file|ftp|mailto):
-(?i)\.(?:gif|jpg|png|ico|css|sit|eps|wmf|zip|ppt|mpg|xls|gz|rpm|tgz|mov|exe|jpeg|bmp|js)$
-.*(/[^/]+)/[^/]+\1/[^/]+\1/
+^https?://127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(:[0-9]+)?/
-.
EOF
rm -f "$B/.put"

# ---------------------------------------------------------------- 5. the job file
# The layout of build.xml's "job" target: Nutch's classes and conf/ at the root, lib/ the
# third-party jars without hadoop-*, slf4j*, log4j* (the cluster has its own), and the
# plugins in classes/plugins/: a task on YARN unpacks only classes/ and lib/ of job.jar
# (mapreduce.job.jar.unpack.pattern), and plugin.folders=plugins is looked up on the class
# path, where classes/ is.
newer=$(find "$RT/conf" "$RT/plugins" "$RT/lib" -newer "$JOB" -print -quit 2>/dev/null || true)
if [ ! -f "$JOB" ] || [ -n "$newer" ]; then
  jb=$B/job; rm -rf "$jb"; mkdir -p "$jb/lib" "$jb/classes/plugins" "$(dirname "$JOB")"
  (cd "$jb" && unzip -q -o "$RT/lib/nutch-$VERSION.jar" -x 'META-INF/*' nutch-default.xml \
     nutch-site.xml overview.html)
  for f in "$RT"/conf/*; do
    case $(basename "$f") in *.template|hadoop*) ;; *) cp "$f" "$jb/" ;; esac
  done
  for f in "$RT"/lib/*.jar; do
    case $(basename "$f") in hadoop-*|slf4j*|log4j*|nutch-*) ;; *) cp "$f" "$jb/lib/" ;; esac
  done
  cp -r "$RT"/plugins/. "$jb/classes/plugins/"
  "$JAVA_HOME/bin/jar" --create --file "$JOB.tmp" -C "$jb" .
  mv "$JOB.tmp" "$JOB"; rm -rf "$jb"
  log "job file $JOB: $(du -h "$JOB" | cut -f1)"
fi
log "ready in $(( $(date +%s) - t0 ))s: $RT (local), $JOB (YARN)"
