"""Which Hadoop ``-r hadoop`` uses (drivers/runtime/hadoop_locate.py), on fake installs laid out
in temporary folders: the Apache binary tarball, Bigtop's packages (EMR's and Dataproc's
layout) under a stand-in root, and none; and which environment `make` gives a crawl.
No cluster, no JVM."""
import subprocess

import pytest

from drivers.cli import main as cli
from drivers.runtime import hadoop_locate
from drivers.runtime.hadoop_locate import NoHadoop, locate
from tests.helpers import ROOT

pytestmark = pytest.mark.unit


def executable(path, text='#!/bin/sh\nexit 0\n'):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'PK\x05\x06' + b'\0' * 18)       # an empty zip: a jar's shape
    return path


def site(path, props):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('<?xml version="1.0"?>\n<configuration>\n%s</configuration>\n' % ''.join(
        '  <property><name>%s</name><value>%s</value></property>\n' % kv
        for kv in props.items()))


def tarball(prefix):
    """hadoop-3.x.y/ as the Apache binary tarball unpacks it."""
    for cmd in ('hadoop', 'hdfs', 'yarn', 'mapred'):
        executable(prefix / 'bin' / cmd)
    tools = prefix / 'share' / 'hadoop' / 'tools' / 'lib'
    jar = touch(tools / 'hadoop-streaming-3.5.0.jar')
    touch(tools / 'hadoop-distcp-3.5.0.jar')
    touch(prefix / 'share' / 'hadoop' / 'tools' / 'sources' /
          'hadoop-streaming-3.5.0-sources.jar')
    touch(prefix / 'share' / 'hadoop' / 'common' / 'hadoop-common-3.5.0.jar')
    conf = prefix / 'etc' / 'hadoop'
    site(conf / 'core-site.xml', {'fs.defaultFS': 'hdfs://nn.example:8020'})
    site(conf / 'hdfs-site.xml', {'dfs.namenode.http-address': 'nn.example:9871'})
    return prefix / 'bin' / 'hadoop', conf, jar


def bigtop(root):
    """Bigtop's packages (and EMR's, Dataproc's images): a /usr/bin/hadoop wrapper, the
    jars under /usr/lib/hadoop*, the configuration in /etc/hadoop/conf."""
    hadoop_bin = executable(root / 'usr' / 'bin' / 'hadoop',
                            '#!/bin/sh\nexec /usr/lib/hadoop/bin/hadoop "$@"\n')
    executable(root / 'usr' / 'bin' / 'python3')
    executable(root / 'usr' / 'lib' / 'hadoop' / 'bin' / 'hadoop')
    touch(root / 'usr' / 'lib' / 'hadoop' / 'hadoop-common-3.3.6.jar')
    mapred = root / 'usr' / 'lib' / 'hadoop-mapreduce'
    touch(mapred / 'hadoop-streaming-3.3.6.jar')
    (mapred / 'hadoop-streaming.jar').symlink_to('hadoop-streaming-3.3.6.jar')
    conf = root / 'etc' / 'hadoop' / 'conf'
    site(conf / 'core-site.xml', {'fs.defaultFS': 'hdfs://master.example:8020'})
    # the NameNode listens on every address: the host is fs.defaultFS's
    site(conf / 'hdfs-site.xml', {'dfs.namenode.http-address': '0.0.0.0:9870'})
    return hadoop_bin, conf, mapred / 'hadoop-streaming.jar'


def test_the_apache_tarball_through_hadoop_home(tmp_path):
    hadoop_bin, conf, jar = tarball(tmp_path / 'hadoop-3.5.0')
    found = locate({'HADOOP_HOME': str(tmp_path / 'hadoop-3.5.0'), 'PATH': ''},
                   root=str(tmp_path / 'root'))
    assert found == (str(hadoop_bin), str(tmp_path / 'hadoop-3.5.0'), str(conf), str(jar),
                     'http://nn.example:9871')
    assert hadoop_locate.describe(found) == \
        'hadoop: %s (conf %s), streaming jar %s, webhdfs http://nn.example:9871' % (
            hadoop_bin, conf, jar)


def test_the_apache_tarball_through_path_and_its_own_conf_dir(tmp_path):
    """hadoop on PATH names the home (symlinks resolved); HADOOP_CONF_DIR wins over
    the home's etc/hadoop, and its hdfs-site.xml gives the WebHDFS address."""
    hadoop_bin, _, jar = tarball(tmp_path / 'opt' / 'hadoop-3.5.0')
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'hadoop').symlink_to(hadoop_bin)
    conf = tmp_path / 'my-conf'
    site(conf / 'core-site.xml', {'fs.defaultFS': 'hdfs://other.example:8020'})
    found = locate({'PATH': '%s:%s' % (tmp_path / 'empty', tmp_path / 'bin'),
                    'HADOOP_CONF_DIR': str(conf)}, root=str(tmp_path / 'root'))
    assert found.bin == str(tmp_path / 'bin' / 'hadoop')
    assert found.home == str(tmp_path / 'opt' / 'hadoop-3.5.0')
    assert (found.conf_dir, found.streaming_jar) == (str(conf), str(jar))
    assert found.webhdfs_url == 'http://other.example:9870'    # no hdfs-site.xml there


def test_bigtop_emr_dataproc_layout(tmp_path):
    hadoop_bin, conf, jar = bigtop(tmp_path)
    found = locate({'PATH': str(tmp_path / 'usr' / 'bin')}, root=str(tmp_path))
    # /usr is no Hadoop home (mrjob's rule): /usr/lib/hadoop is
    assert found == (str(hadoop_bin), str(tmp_path / 'usr' / 'lib' / 'hadoop'), str(conf),
                     str(jar), 'http://master.example:9870')


def test_the_environment_overrides_win(tmp_path):
    """MRCRAWL_HADOOP_BIN, MRCRAWL_STREAMING_JAR and MRCRAWL_WEBHDFS_URL (what
    hadoop/env.sh sets for the test cluster) over HADOOP_HOME's."""
    tarball(tmp_path / 'hadoop')
    shim = executable(tmp_path / 'shim' / 'hadoop')
    jar = touch(tmp_path / 'jars' / 'hadoop-streaming-3.4.2.jar')
    found = locate({'HADOOP_HOME': str(tmp_path / 'hadoop'), 'PATH': '',
                    'MRCRAWL_HADOOP_BIN': str(shim), 'MRCRAWL_STREAMING_JAR': str(jar),
                    'MRCRAWL_WEBHDFS_URL': 'http://127.0.0.1:9870'},
                   root=str(tmp_path / 'root'))
    assert (found.bin, found.streaming_jar, found.webhdfs_url) == (
        str(shim), str(jar), 'http://127.0.0.1:9870')
    assert found.conf_dir == str(tmp_path / 'hadoop' / 'etc' / 'hadoop')


@pytest.mark.parametrize('env, message', [
    ({'PATH': '{t}/empty'}, 'no hadoop command: none in HADOOP_HOME/bin nor on PATH'),
    ({'PATH': '', 'HADOOP_HOME': '{t}/gone'}, 'none in HADOOP_HOME={t}/gone/bin'),
    ({'PATH': '', 'MRCRAWL_HADOOP_BIN': '{t}/gone/hadoop'},
     'MRCRAWL_HADOOP_BIN={t}/gone/hadoop is not an executable file'),
    ({'PATH': '{t}/bin'}, 'no hadoop-streaming jar in '),
    ({'PATH': '{t}/bin', 'MRCRAWL_STREAMING_JAR': '{t}/x.jar'},
     'MRCRAWL_STREAMING_JAR={t}/x.jar is not a file'),
])
def test_no_usable_hadoop_is_one_line(tmp_path, env, message):
    executable(tmp_path / 'bin' / 'hadoop')          # a command, but no jar anywhere
    env = {k: v.format(t=tmp_path) for k, v in env.items()}
    with pytest.raises(NoHadoop) as e:
        locate(env, root=str(tmp_path / 'root'))
    assert message.format(t=tmp_path) in str(e.value)
    assert '\n' not in str(e.value)


def test_an_ha_nameservice_gives_its_first_namenode(tmp_path):
    """fs.defaultFS names a nameservice (HA), which is no host: its first NameNode's
    HTTP address is used."""
    conf = tmp_path / 'conf'
    site(conf / 'core-site.xml', {'fs.defaultFS': 'hdfs://prodCluster'})
    site(conf / 'hdfs-site.xml', {
        'dfs.nameservices': 'prodCluster,other', 'dfs.ha.namenodes.prodCluster': 'nn1, nn2',
        'dfs.namenode.http-address.prodCluster.nn1': 'master-1.example:9870',
        'dfs.namenode.http-address.prodCluster.nn2': 'master-2.example:9870'})
    assert hadoop_locate.webhdfs_url({}, str(conf)) == 'http://master-1.example:9870'


def test_the_resourcemanagers_web_address_comes_from_yarn_site(tmp_path):
    conf = tmp_path / 'conf'
    assert hadoop_locate.rm_webapp_url(str(conf)) is None          # no yarn-site.xml
    site(conf / 'yarn-site.xml', {'yarn.resourcemanager.hostname': 'rm.example'})
    assert hadoop_locate.rm_webapp_url(str(conf)) == 'http://rm.example:8088'
    site(conf / 'yarn-site.xml', {'yarn.resourcemanager.hostname': 'rm.example',
                                  'yarn.resourcemanager.webapp.address': '0.0.0.0:18088'})
    assert hadoop_locate.rm_webapp_url(str(conf)) == 'http://rm.example:18088'
    site(conf / 'yarn-site.xml', {'rm': 'rm2.example',
                                  'yarn.resourcemanager.webapp.address': '${rm}:8090'})
    assert hadoop_locate.rm_webapp_url(str(conf)) == 'http://rm2.example:8090'


def test_site_files_with_entities_are_not_read(tmp_path):
    """No entity of a configuration file is expanded (billion laughs, external files):
    a file with a DOCTYPE is ignored, fs.defaultFS's host is used."""
    conf = tmp_path / 'conf'
    site(conf / 'core-site.xml', {'fs.defaultFS': 'hdfs://safe.example:8020'})
    (conf / 'hdfs-site.xml').write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE c [<!ENTITY h SYSTEM "file:///etc/hostname">]>\n'
        '<configuration><property><name>dfs.namenode.http-address</name>'
        '<value>&h;:9870</value></property></configuration>\n')
    assert hadoop_locate.webhdfs_url({}, str(conf)) == 'http://safe.example:9870'


def test_variables_in_site_files_are_expanded(tmp_path):
    conf = tmp_path / 'conf'
    site(conf / 'hdfs-site.xml', {'nn.host': 'nn1.example',
                                  'dfs.namenode.http-address': '${nn.host}:50070'})
    assert hadoop_locate.webhdfs_url({}, str(conf)) == 'http://nn1.example:50070'
    # no configuration at all: the test cluster's old default
    assert hadoop_locate.webhdfs_url({}, str(tmp_path / 'none')) == 'http://127.0.0.1:9870'


def test_crawl_without_a_hadoop_prints_one_line_and_exits_2(tmp_path, monkeypatch, capsys):
    for name in ('HADOOP_HOME', 'HADOOP_PREFIX', 'HADOOP_INSTALL', 'HADOOP_CONF_DIR',
                 'MRCRAWL_HADOOP_BIN', 'MRCRAWL_STREAMING_JAR'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('http://127.0.0.1:1/\n')
    status = cli.main(['crawl', '--seeds', str(seeds), '--depth', '1', '--out',
                       'hdfs:///never', '-r', 'hadoop'])
    out, err = capsys.readouterr()
    assert status == 2
    assert err.splitlines() == [
        'mrcrawl: no hadoop command: none in HADOOP_HOME/bin nor on PATH (set HADOOP_HOME '
        'or MRCRAWL_HADOOP_BIN; CLUSTER=test for the test cluster)']
    assert out == ''


def make_n(*args, **env):
    """What `make -n` would run (nothing is run), with a bare environment (+ *env*)."""
    return subprocess.run(['make', '-n', '--no-print-directory'] + list(args), cwd=ROOT,
                          env=dict(env, PATH='/usr/bin:/bin', HOME='/nonexistent'),
                          capture_output=True, text=True, timeout=60)


@pytest.mark.crawl
@pytest.mark.parametrize('target', ['crawl', 'recrawl', 'demo'])
def test_make_sources_the_test_cluster_only_with_cluster_test(target):
    """RUNNER=hadoop keeps the user's environment (issue 47: hadoop/env.sh overwrote
    HADOOP_HOME, HADOOP_CONF_DIR and PATH); CLUSTER=test sources it and runs hadoop."""
    mine = make_n(target, 'RUNNER=hadoop', 'OUT=hdfs:///c')
    assert mine.returncode == 0, mine.stderr
    assert 'env.sh' not in mine.stdout and ' -r hadoop' in mine.stdout
    test = make_n(target, 'CLUSTER=test', 'OUT=hdfs:///c')
    assert test.returncode == 0, test.stderr
    command = test.stdout.strip().splitlines()[-1]
    assert command.startswith('. hadoop/env.sh && ') and ' -r hadoop' in command
    other = make_n(target, 'CLUSTER=prod', 'RUNNER=hadoop')
    # (make -n may first print the virtual environment's set-up, if setup.cfg is newer)
    assert other.returncode == 2 and 'mrcrawl' not in other.stdout
    assert 'CLUSTER=prod: only CLUSTER=test is known' in other.stderr
    # a CLUSTER exported for something else is not make's: the local runner as ever
    exported = make_n(target, CLUSTER='prod')
    assert exported.returncode == 0, exported.stderr
    assert 'env.sh' not in exported.stdout and ' -r local' in exported.stdout
