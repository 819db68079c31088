"""A user's Hadoop, laid out as the Apache binary tarball is, for the running cluster.

    python -m tests.tarball_hadoop PREFIX

makes PREFIX/bin/{hadoop,hdfs,yarn,mapred}, PREFIX/etc/hadoop (its own configuration
folder) and PREFIX/share/hadoop/{common,common/lib,hdfs,mapreduce,yarn,tools/lib} (the
test cluster's Maven jars, linked there by name as the tarball sorts them; the
streaming jar in tools/lib), and prints the variables a user of it sets. The launcher
is a short stand-in for the tarball's bin/hadoop: its class path is the configuration
folder and share/hadoop/*, as ``hadoop classpath`` prints on a tarball install; it knows
the client commands only. Its configuration names the cluster that ``hadoop/up.sh``
started ("their cluster": NameNode, ResourceManager, JobHistoryServer), and the job
containers' class path is the prefix's share/hadoop, so jobs submitted from it run on
its jars. Nothing of it names the test cluster's folders, launcher or environment.
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

LAUNCHER = r'''#!/usr/bin/env bash
# Hadoop's launcher as the Apache binary tarball lays it out (client commands only):
# jars from $HADOOP_HOME/share/hadoop, configuration from $HADOOP_CONF_DIR.
set -euo pipefail
bin="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HADOOP_HOME="${HADOOP_HOME:-$(dirname "$bin")}"
HADOOP_CONF_DIR="${HADOOP_CONF_DIR:-$HADOOP_HOME/etc/hadoop}"
if [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/java" ]]; then
  echo "ERROR: JAVA_HOME is not set and could not be found." >&2; exit 1
fi
S="$HADOOP_HOME/share/hadoop"
CP="$HADOOP_CONF_DIR:$S/common/lib/*:$S/common/*:$S/hdfs/*:$S/mapreduce/*:$S/yarn/*"
me="$(basename "$0")"
case "$me ${1:-}" in
  "hadoop version")                 class=org.apache.hadoop.util.VersionInfo ;;
  "hadoop fs"|"hdfs dfs")           class=org.apache.hadoop.fs.FsShell ;;
  "hadoop jar"|"yarn jar")          class=org.apache.hadoop.util.RunJar ;;
  "hdfs getconf")                   class=org.apache.hadoop.hdfs.tools.GetConf ;;
  "hdfs dfsadmin")                  class=org.apache.hadoop.hdfs.tools.DFSAdmin ;;
  "mapred job")                     class=org.apache.hadoop.mapred.JobClient ;;
  *" classpath")                    echo "$CP"; exit 0 ;;
  *) echo "$me: this stand-in knows version, fs, dfs, jar, getconf, dfsadmin, job," \
          "classpath" >&2; exit 1 ;;
esac
shift
opens=()
for p in java.io java.lang java.lang.reflect java.math java.net java.nio java.text \
         java.util java.util.concurrent java.util.zip sun.nio.ch sun.security.util \
         sun.security.x509; do
  opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
exec "$JAVA_HOME/bin/java" -Xmx512m "${opens[@]}" -Dproc_"$me" \
  -Dhadoop.home.dir="$HADOOP_HOME" -Dhadoop.log.dir="$HADOOP_HOME/logs" \
  -Dhadoop.root.logger="${HADOOP_ROOT_LOGGER:-INFO,console}" \
  -Dhadoop.id.str="$(id -un)" -Djava.net.preferIPv4Stack=true \
  -Dlog4j.configuration="file:$HADOOP_CONF_DIR/log4j.properties" \
  -cp "$CP" "$class" "$@"
'''

#: share/hadoop/<folder> of each jar, by name, as the tarball has them (the rest, third
#: parties, in common/lib).
FOLDERS = (('hadoop-streaming', 'tools/lib'), ('hadoop-hdfs', 'hdfs'),
           ('hadoop-mapreduce', 'mapreduce'), ('hadoop-yarn', 'yarn'),
           ('hadoop-common', 'common'))


def test_cluster_home():
    return os.environ.get('MRCRAWL_HADOOP_HOME') or \
        os.path.join(os.path.expanduser('~'), '.cache', 'mrcrawl-hadoop')


def classpath(prefix):
    s = os.path.join(prefix, 'share', 'hadoop')
    return ','.join([os.path.join(prefix, 'etc', 'hadoop')] + [
        os.path.join(s, f, '*') for f in ('common', 'common/lib', 'hdfs', 'mapreduce',
                                           'yarn')])


def site_xml(props):
    lines = ['<?xml version="1.0"?>', '<configuration>']
    for name, value in props:
        prop = ET.Element('property')
        ET.SubElement(prop, 'name').text = name
        ET.SubElement(prop, 'value').text = value
        lines.append('  ' + ET.tostring(prop, encoding='unicode'))
    return '\n'.join(lines + ['</configuration>', ''])


def client_conf(cluster_conf, prefix, cluster_home):
    """{file: [(name, value)]}: the cluster's *-site.xml for a client installed at
    *prefix*. Values naming the test cluster's folders become the prefix's (the job
    class path, HADOOP_MAPRED_HOME, the client's tmp folder); the daemons' own folders
    (name, data, NodeManager dirs, logs) are left out, as a client's copy has them not."""
    out = {}
    for path in sorted(glob.glob(os.path.join(cluster_conf, '*-site.xml'))):
        props = []
        for prop in ET.parse(path).getroot().iter('property'):
            name, value = prop.findtext('name'), prop.findtext('value') or ''
            if name in ('mapreduce.application.classpath', 'yarn.application.classpath'):
                value = classpath(prefix)
            elif name == 'hadoop.tmp.dir':
                value = os.path.join(prefix, 'tmp')
            elif value.startswith('HADOOP_MAPRED_HOME='):
                value = 'HADOOP_MAPRED_HOME=' + prefix
            elif cluster_home in value:
                continue
            props.append((name, value))
        out[os.path.basename(path)] = props
    return out


def build(prefix, cluster_home=None):
    """Lay the Hadoop out under *prefix*; return (bin/hadoop, etc/hadoop, streaming jar)."""
    cluster_home = cluster_home or test_cluster_home()
    prefix = os.path.abspath(prefix)
    jars = sorted(glob.glob(os.path.join(cluster_home, 'jars', '*.jar')))
    if not jars:
        raise SystemExit('no jars in %s/jars: run hadoop/up.sh first' % cluster_home)
    streaming = None
    for jar in jars:
        name = os.path.basename(jar)
        folder = next((f for start, f in FOLDERS if name.startswith(start)), 'common/lib')
        dest = os.path.join(prefix, 'share', 'hadoop', folder)
        os.makedirs(dest, exist_ok=True)
        link = os.path.join(dest, name)
        if not os.path.lexists(link):
            os.symlink(jar, link)
        if folder == 'tools/lib' and re.match(r'hadoop-streaming-[\d.]+\.jar$', name):
            streaming = link
    bindir = os.path.join(prefix, 'bin')
    os.makedirs(bindir, exist_ok=True)
    for cmd in ('hadoop', 'hdfs', 'yarn', 'mapred'):
        with open(os.path.join(bindir, cmd), 'w') as f:
            f.write(LAUNCHER)
        os.chmod(os.path.join(bindir, cmd), 0o755)
    conf = os.path.join(prefix, 'etc', 'hadoop')
    os.makedirs(conf, exist_ok=True)
    for name, props in client_conf(os.path.join(cluster_home, 'conf'), prefix,
                                   cluster_home).items():
        with open(os.path.join(conf, name), 'w') as f:
            f.write(site_xml(props))
    with open(os.path.join(cluster_home, 'conf', 'log4j.properties')) as src, \
            open(os.path.join(conf, 'log4j.properties'), 'w') as dst:
        dst.write(src.read())
    os.makedirs(os.path.join(prefix, 'logs'), exist_ok=True)
    return os.path.join(bindir, 'hadoop'), conf, streaming


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit('usage: python -m tests.tarball_hadoop PREFIX')
    hadoop_bin, conf, jar = build(sys.argv[1])
    prefix = os.path.dirname(os.path.dirname(hadoop_bin))
    print('export HADOOP_HOME=%s HADOOP_CONF_DIR=%s PATH=%s/bin:$PATH' % (prefix, conf, prefix))
