"""``make crawl RUNNER=hadoop`` on a user's Hadoop, not the test cluster's environment.

The user's Hadoop is laid out as the Apache binary tarball is (tests/tarball_hadoop.py):
its own prefix with bin/, etc/hadoop and share/hadoop, made from the test cluster's
Maven jars, its configuration naming the running cluster (``make test`` starts it). The
crawl runs with the user's variables only: HADOOP_HOME, HADOOP_CONF_DIR, JAVA_HOME, PATH
(the prefix's bin first, no hadoop/bin of the checkout), HOME and MRCRAWL_TASK_PYTHON;
nothing of hadoop/env.sh.
"""
import getpass
import glob
import json
import os
import shutil
import subprocess
import time
import urllib.request
import uuid

import pytest

from drivers.fixtures.site import FixtureSite
from drivers.runtime.hadoop_locate import read_site
from drivers.runtime.hdfs import WebHDFS
from tests import tarball_hadoop
from tests.helpers import ROOT, TEST_SETTINGS

pytestmark = pytest.mark.hadoop

SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin'


def java_home():
    for path in [os.environ.get('JAVA_HOME', '')] + sorted(
            glob.glob('/usr/lib/jvm/java-17-openjdk*')):
        if path and os.access(os.path.join(path, 'bin', 'java'), os.X_OK):
            return path
    pytest.fail('no JDK 17 for the user\'s Hadoop (hadoop/env.sh finds one the same way)')


def task_python():
    """A Python 3.11 the cluster's nodes have (as hadoop/env.sh picks it)."""
    for path in ('/usr/bin/python3.11', '/usr/local/bin/python3.11',
                 os.environ.get('MRCRAWL_TASK_PYTHON', '')):
        if path and os.access(path, os.X_OK):
            return path
    pytest.fail('no Python 3.11 for the tasks')


def run_make(env, *args, timeout=900):
    return subprocess.run(['make', '--no-print-directory'] + list(args), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def history_jobs_under(conf, folder, since_ms):
    """{job id: its mapreduce.application.classpath} of every job the JobHistoryServer
    recorded since *since_ms* that wrote under the HDFS *folder* (the cluster may run
    others' jobs too); its address from the user's mapred-site.xml in *conf*."""
    addr = read_site(os.path.join(conf, 'mapred-site.xml'))[
        'mapreduce.jobhistory.webapp.address']
    base = 'http://%s/ws/v1/history/mapreduce/jobs' % addr
    with urllib.request.urlopen(base, timeout=30) as r:
        jobs = json.load(r)['jobs']['job'] or []
    out = {}
    for j in (jobs if isinstance(jobs, list) else [jobs]):   # Jersey: one job is no list
        if j['startTime'] < since_ms:
            continue
        with urllib.request.urlopen('%s/%s/conf' % (base, j['id']), timeout=30) as r:
            props = {p['name']: p['value'] for p in json.load(r)['conf']['property']}
        if folder + '/' in props.get('mapreduce.output.fileoutputformat.outputdir', ''):
            out[j['id']] = props.get('mapreduce.application.classpath')
    return out


def test_make_crawl_uses_the_users_tarball_hadoop(tmp_path):
    cluster_home = tarball_hadoop.test_cluster_home()
    assert glob.glob(os.path.join(cluster_home, 'jars', 'hadoop-streaming-*.jar')), \
        'no test cluster jars in %s: run through `make test` (hadoop/up.sh)' % cluster_home
    prefix = str(tmp_path / 'hadoop-3.5.0')
    hadoop_bin, conf, jar = tarball_hadoop.build(prefix, cluster_home)
    assert jar == os.path.join(prefix, 'share', 'hadoop', 'tools', 'lib',
                               os.path.basename(jar))
    for name in os.listdir(conf):        # its own configuration: no test cluster folder
        assert cluster_home not in open(os.path.join(conf, name)).read(), name
    user_env = {'HOME': os.path.expanduser('~'), 'JAVA_HOME': java_home(),
                'HADOOP_HOME': prefix, 'HADOOP_CONF_DIR': conf,
                'PATH': '%s/bin:%s' % (prefix, SYSTEM_PATH),
                'MRCRAWL_TASK_PYTHON': task_python(), 'LANG': 'C.UTF-8'}
    assert shutil.which('hadoop', path=user_env['PATH']) == hadoop_bin

    out_uri = 'hdfs:///mrcrawl-user-hadoop/%s' % uuid.uuid4().hex[:8]
    # The fetch on YARN (a layer this small is fetched in the driver by default).
    args = ' '.join('--set %s' % s for s in TEST_SETTINGS + ['hadoop.driver_fetch_max_urls=0'])
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        started_ms = int(time.time() * 1000) - 2000
        res = run_make(user_env, 'crawl', 'RUNNER=hadoop', 'OUT=' + out_uri,
                       'SEEDS=%s' % seeds, 'DEPTH=1', 'ARGS=' + args)
        requested = {r['path'] for r in site.requests}
    assert res.returncode == 0, 'make crawl failed:\n%s\n%s' % (res.stdout[-3000:],
                                                                 res.stderr[-5000:])
    assert 'hadoop/env.sh' not in res.stdout          # make echoes the command it runs
    # the NameNode's web address, as the user's hdfs-site.xml gives it
    webhdfs = 'http://' + read_site(os.path.join(conf, 'hdfs-site.xml'))[
        'dfs.namenode.http-address']
    lines = [line for line in res.stderr.splitlines() if line.startswith('hadoop: ')]
    assert lines == ['hadoop: %s (conf %s), streaming jar %s, webhdfs %s' % (
        hadoop_bin, conf, jar, webhdfs)]

    # The pages landed in the cluster's HDFS: the fixture's home page and the pages it
    # links to, one XML document each, every one of them fetched by this crawl.
    fs = WebHDFS(webhdfs, getpass.getuser(), 'hdfs://')
    try:
        docs = {}
        for name in fs.listdir(out_uri + '/xml'):
            if not name.startswith(('_', '.')):
                for line in fs.read_text('%s/xml/%s' % (out_uri, name)).splitlines():
                    url, _, doc = line.partition('\t')
                    docs[url] = doc
        report = json.loads(fs.read_text(out_uri + '/report.json'))
    finally:
        fs.rm(out_uri)
    assert site.url('/') in docs and len(docs) >= 3
    base = site.url('/')[:-1]
    assert all(u.startswith(base) and u[len(base):] in requested for u in docs), \
        (sorted(docs), sorted(requested))
    assert all(doc.startswith('<page ') for doc in docs.values())
    assert (report['runner'], report['out'], [r['layer'] for r in report['layers']]) == \
        ('hadoop', out_uri, [0, 1])

    # Its fetches ran on YARN (one job a layer), submitted by the user's client: the
    # jobs' class path is the prefix's share/hadoop, from the user's mapred-site.xml.
    deadline = time.time() + 30       # the history takes a finished job in within ~1 s
    while True:
        confs = history_jobs_under(conf, out_uri[len('hdfs://'):], started_ms)
        if len(confs) >= 2 or time.time() > deadline:
            break
        time.sleep(1)
    assert len(confs) >= 2, 'YARN jobs of the crawl: %s' % confs
    assert all(cp == tarball_hadoop.classpath(prefix) for cp in confs.values()), confs


def test_no_hadoop_anywhere_is_one_line_and_exit_2(tmp_path):
    bare = {'HOME': os.path.expanduser('~'), 'PATH': SYSTEM_PATH, 'LANG': 'C.UTF-8'}
    assert shutil.which('hadoop', path=SYSTEM_PATH) is None, 'this machine has a hadoop'
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('http://127.0.0.1:1/\n')
    res = subprocess.run([os.path.join(ROOT, '.venv', 'bin', 'mrcrawl'), 'crawl', '--seeds',
                          str(seeds), '--depth', '1', '--out', 'hdfs:///never', '-r',
                          'hadoop'], cwd=ROOT, env=bare, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        'mrcrawl: no hadoop command: none in HADOOP_HOME/bin nor on PATH (set HADOOP_HOME '
        'or MRCRAWL_HADOOP_BIN; CLUSTER=test for the test cluster)'], res.stderr
    # make crawl RUNNER=hadoop says the same (make adds its own "Error 2" line)
    res = run_make(bare, 'crawl', 'RUNNER=hadoop', 'OUT=hdfs:///never', 'SEEDS=%s' % seeds,
                   'DEPTH=1', timeout=120)
    assert res.returncode == 2
    assert res.stderr.splitlines()[0].startswith('mrcrawl: no hadoop command: ')
