"""The same crawl on a real Hadoop (HDFS + YARN + streaming) and on the local runner.

The cluster is the one ``make hadoop-up`` starts (``make test`` starts and stops it): two
worker nodes (DataNode + NodeManager each, replication 2) whose environment holds nothing
of the checkout's. One Hadoop crawl loses a fetch task attempt, another a whole worker node
in the middle of a fetch. Needs the
environment of ``hadoop/env.sh``. If the cluster is not there the test fails, loudly: a
crawler whose Hadoop path is untested is not done.
"""
import collections
import glob
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET

import pytest
from PIL import Image
from warcio.archiveiterator import ArchiveIterator

from drivers.fixtures.site import FixtureSite
from drivers.runtime.hdfs import WebHDFS, webhdfs_address
from tests.helpers import ROOT, TEST_SETTINGS, history_jobs, read_records, read_xml

pytestmark = pytest.mark.hadoop
DEPTH = 2


#: Both crawls: a delay long enough that a fetch task of layer 1 lives a few seconds.
SETTINGS = TEST_SETTINGS + ['politeness.delay=0.5', 'warc.enabled=true']


def mrcrawl_crawl(seeds, out, runner, extra=()):
    args = [sys.executable, '-m', 'drivers.cli', 'crawl', '--seeds', str(seeds), '--depth',
            str(DEPTH), '--out', out, '-r', runner]
    for s in SETTINGS + list(extra):
        args += ['--set', s]
    res = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, 'crawl -r %s failed:\n%s\n%s' % (runner, res.stdout[-3000:],
                                                                  res.stderr[-5000:])
    return res.stdout


class TaskKiller(threading.Thread):
    """SIGKILLs the first YARN container task running ``fetch.py --mapper`` that holds a
    TCP connection to *port* (the fixture site) and has lived *min_age* seconds: a task
    attempt dying in the middle of its fetches, which Hadoop must retry
    (mapreduce.map.maxattempts=2; the fetch is MRFetch's map-only step, and the lists
    step before it never connects to the site). Never a process outside a YARN container."""

    def __init__(self, port, min_age=1.0):
        super().__init__(daemon=True)
        self.port, self.min_age, self.seen, self.killed = port, min_age, {}, None
        self.done = threading.Event()

    def tasks(self):
        for pid in os.listdir('/proc'):
            if not pid.isdigit():
                continue
            try:
                with open('/proc/%s/cmdline' % pid, 'rb') as f:
                    argv = f.read().decode('utf-8', 'replace').split('\0')
                if 'python' in os.path.basename(argv[0]) and '--mapper' in argv and \
                        any(a.endswith('fetch.py') for a in argv) and \
                        '/appcache/application_' in os.readlink('/proc/%s/cwd' % pid):
                    yield int(pid)
            except OSError:
                continue

    def connected(self, pid):
        """Does *pid* hold an established TCP connection to the site's port?"""
        inodes = set()
        try:
            fds = os.listdir('/proc/%d/fd' % pid)
            with open('/proc/%d/net/tcp' % pid) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            return False
        for fd in fds:
            try:
                inodes.add(os.readlink('/proc/%d/fd/%s' % (pid, fd))[len('socket:['):-1])
            except OSError:     # closed meanwhile
                continue
        return any(int(r[2].split(':')[1], 16) == self.port and r[3] == '01' and r[9] in inodes
                   for r in rows)

    def kill(self, pid):
        os.kill(pid, signal.SIGKILL)

    error = None

    def run(self):
        try:
            self.watch()
        except Exception as e:      # reported by the test, not lost with the thread
            self.error = e

    def watch(self):
        while not self.done.is_set() and self.killed is None:
            now = time.monotonic()
            for pid in self.tasks():
                if now - self.seen.setdefault(pid, now) >= self.min_age and \
                        self.connected(pid):
                    try:
                        self.kill(pid)
                    except (ProcessLookupError, FileNotFoundError):
                        continue
                    self.killed = pid
                    break
            time.sleep(0.05)


def node_conf(k, name):
    """Property *name* of worker node *k*'s yarn-site.xml (written by hadoop/up.sh)."""
    path = os.path.join(os.environ['MRCRAWL_HADOOP_HOME'], 'nodes', str(k), 'conf',
                        'yarn-site.xml')
    return re.search(r'%s</name><value>([^<]+)' % re.escape(name), open(path).read()).group(1)


def proc_view(pid):
    """What process *pid* can reach: its environment, working folder, executable and the
    files it has mapped (shared libraries)."""
    with open('/proc/%d/environ' % pid, 'rb') as f:
        env = f.read().decode('utf-8', 'replace').split('\0')
    with open('/proc/%d/maps' % pid) as f:
        maps = sorted({l.split()[-1] for l in f if len(l.split()) >= 6})
    return {'env': env, 'cwd': os.readlink('/proc/%d/cwd' % pid),
            'exe': os.readlink('/proc/%d/exe' % pid), 'maps': maps}


class NodeKiller(TaskKiller):
    """Kills the whole worker node that runs a fetch task in the middle of its fetches:
    its NodeManager and every container process of that node (a machine gone), not the
    DataNode. Before, it records what the task could reach (:func:`proc_view`)."""
    nodes = range(1, 5)

    def kill(self, pid):
        cwd = os.readlink('/proc/%d/cwd' % pid)
        pids_dir = os.path.join(os.environ['MRCRAWL_HADOOP_HOME'], 'pids')
        for k in self.nodes:
            if not os.path.exists(os.path.join(pids_dir, 'nodemanager%d.pid' % k)):
                continue
            local = node_conf(k, 'yarn.nodemanager.local-dirs').rstrip('/') + '/'
            if cwd.startswith(local):
                break
        else:
            raise AssertionError('task %d runs in no known node: %s' % (pid, cwd))
        self.task_view = proc_view(pid)
        nm = int(open(os.path.join(pids_dir, 'nodemanager%d.pid' % k)).read())
        self.nm_view = proc_view(nm)
        logs = node_conf(k, 'yarn.nodemanager.log-dirs').rstrip('/') + '/'
        os.kill(nm, signal.SIGKILL)
        for _ in range(3):          # the node's containers: launch scripts, JVMs, Pythons
            for p in os.listdir('/proc'):
                if not p.isdigit():
                    continue
                try:
                    here = os.readlink('/proc/%s/cwd' % p).startswith(local) or \
                        logs in open('/proc/%s/cmdline' % p, 'rb').read().decode('utf-8', 'replace')
                    if here:
                        os.kill(int(p), signal.SIGKILL)
                except OSError:
                    continue
            time.sleep(0.1)
        # After the node's processes are gone: its fetch task could still send a request
        # between the NodeManager's death and its own (a fetch then, not the re-run's).
        self.t_kill = time.monotonic()
        self.node = k


def am_attempts(job):
    """How many ApplicationMaster attempts the ResourceManager made for *job* (a lost
    node that ran the AM, as an uber job's task runs in it: YARN starts it again
    elsewhere, and the history keeps only the last attempt's record)."""
    conf = open(os.path.join(os.environ['HADOOP_CONF_DIR'], 'yarn-site.xml')).read()
    m = re.search(r'yarn.resourcemanager.webapp.address</name><value>([^<]+)', conf)
    app = job['id'].replace('job_', 'application_', 1)
    url = 'http://%s/ws/v1/cluster/apps/%s/appattempts' % (m.group(1) if m else
                                                             '127.0.0.1:8088', app)
    with urllib.request.urlopen(url, timeout=30) as r:
        attempts = json.load(r)['appAttempts']['appAttempt']
    return len(attempts) if isinstance(attempts, list) else 1


def reruns(jobs):
    """The jobs that failed: each must have run in uber mode (one attempt per task),
    and the next job, HadoopRunner's re-run of it in task containers, succeeded. Every
    other job succeeded (a task attempt lost in containers is retried within its job)."""
    jobs = sorted(jobs, key=lambda j: j['startTime'])
    failed = [i for i, j in enumerate(jobs) if j['state'] != 'SUCCEEDED']
    for i in failed:
        assert jobs[i]['uberized'] and i + 1 < len(jobs), jobs[i]
        again = jobs[i + 1]
        assert again['name'] == jobs[i]['name'] and again['state'] == 'SUCCEEDED' and \
            not again['uberized'], (jobs[i], again)
    return failed


def hdfs_records(fs, folder):
    out = []
    for name in fs.listdir(folder):
        if name.startswith(('_', '.')):
            continue
        out.extend(json.loads(l) for l in fs.read_text(fs.join(folder, name)).splitlines()
                   if l.strip())
    return out


def hdfs_xml(fs, folder):
    docs = {}
    for name in fs.listdir(folder):
        if name.startswith(('_', '.')):
            continue
        for line in fs.read_text(fs.join(folder, name)).splitlines():
            url, _, doc = line.partition('\t')
            assert url not in docs
            docs[url] = doc
    return docs


def same_xml(hadoop_xml, local_xml):
    """The same pages, with the same titles, text, links, anchors, digests, duplicates."""
    assert sorted(hadoop_xml) == sorted(local_xml)
    assert len(hadoop_xml) >= 8
    for url, doc in hadoop_xml.items():
        h, l = ET.fromstring(doc), ET.fromstring(local_xml[url])
        for field in ('title', 'text', 'links', 'anchors', 'fetch/digest'):
            assert ET.tostring(h.find(field)) == ET.tostring(l.find(field)), (url, field)
        assert [u.text for u in h.find('duplicates')] == [u.text for u in l.find('duplicates')]


def test_hadoop_crawl_matches_local_runner(tmp_path, capsys):
    for var in ('MRCRAWL_HADOOP_BIN', 'MRCRAWL_STREAMING_JAR', 'MRCRAWL_TASK_PYTHON'):
        assert os.environ.get(var), '%s is not set: run through `make test` (it sources ' \
                                    'hadoop/env.sh and starts the cluster)' % var
    out_uri = 'hdfs:///mrcrawl-it/%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    try:
        fs.client.status('/')
    except Exception as e:
        pytest.fail('the test Hadoop is not reachable over WebHDFS (%s): %s' % (
            fs.client.url, e))

    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        local_out = str(tmp_path / 'local')
        mrcrawl_crawl(seeds, local_out, 'local')
        n_local = len(site.requests)
        local_requests = list(site.requests)
        # While the Hadoop crawl runs, one fetch task attempt is SIGKILLed mid-run.
        killer = TaskKiller(site.port)
        killer.start()
        started_ms = int(time.time() * 1000) - 5000
        try:
            # Every job on YARN (none small enough to run in the driver).
            summary = mrcrawl_crawl(seeds, out_uri, 'hadoop', ['hadoop.local_max_bytes=0'])
        finally:
            killer.done.set()
            killer.join()
        # Default settings but the fetch on YARN: the small jobs run in the driver on
        # HDFS data (Hive's local mode). In the middle of a fetch, the worker node
        # running it dies: its NodeManager and its containers are killed.
        small_uri = out_uri + '-small'
        node_killer = NodeKiller(site.port, min_age=1.5)
        node_killer.start()
        second_ms, n_before = int(time.time() * 1000) - 1000, len(site.requests)
        try:
            mrcrawl_crawl(seeds, small_uri, 'hadoop', ['hadoop.driver_fetch_max_urls=0'])
        finally:
            node_killer.done.set()
            node_killer.join()
            restart = subprocess.run(['bash', os.path.join(ROOT, 'hadoop', 'up.sh')],
                                     capture_output=True, text=True, timeout=300)
        second_requests = site.requests[n_before:]
        assert restart.returncode == 0, restart.stderr[-3000:]
        # The first crawl's next cycle, every job on YARN: a new seed joins (the
        # seeds' join is a two-step generate), every known page is due again
        # (recrawl.interval = 0) and comes back unchanged (304 or the same digest).
        new_url = site.url('/hidden/3.html')
        seeds2 = tmp_path / 'seeds2.txt'
        seeds2.write_text(site.url('/') + '\n' + new_url + '\n')
        n_cycle = len(site.requests)
        mrcrawl_crawl(seeds2, out_uri, 'hadoop', ['hadoop.local_max_bytes=0',
                                                  'recrawl.interval=0'])
        cycle_paths = {r['path'] for r in site.requests[n_cycle:]}

    # The node died mid-fetch (a task of it was talking to the site); YARN declared it
    # lost and ran the fetch again on the other node, and the crawl still succeeded.
    assert node_killer.error is None, node_killer.error
    assert node_killer.killed is not None, 'no fetch task was seen fetching'
    # The task could reach nothing of the submitting machine's: not the checkout, not
    # .venv, not the user's HOME or caches (its Python, its libraries and the jobs came
    # from the node and from what the job shipped).
    home, hadoop_home = os.path.expanduser('~'), os.environ['MRCRAWL_HADOOP_HOME']
    for view in (node_killer.task_view, node_killer.nm_view):
        env = dict(v.partition('=')[::2] for v in view['env'])
        paths = [view['cwd'], view['exe']] + view['maps'] + [
            p for var in ('HOME', 'PWD', 'PYTHONPATH', 'PYTHONHOME', 'PYTHONUSERBASE',
                          'VIRTUAL_ENV', 'LD_LIBRARY_PATH', 'PATH')
            for p in env.get(var, '').split(':')]
        leaks = [p for p in paths if p.startswith(ROOT) or '.venv' in p or (
            p.startswith(home) and not p.startswith(hadoop_home))]
        assert not leaks, leaks
    assert node_killer.nm_view['cwd'].startswith(os.path.join(hadoop_home, 'nodes'))
    # The requests made again by the re-run (those the dead attempt had made), counted
    # from the server's log; and politeness held across both attempts.
    again = collections.Counter(r['path'] for r in second_requests) - \
        collections.Counter(r['path'] for r in local_requests)
    before_kill = {r['path'] for r in second_requests if r['t'] < node_killer.t_kill}
    assert sum(again.values()) >= 1 and set(again) <= before_kill, (again, before_kill)
    times = sorted(r['t'] for r in second_requests)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= 0.5 * 0.95, min(gaps)
    assert '/private/secret.html' not in [r['path'] for r in second_requests]
    with capsys.disabled():
        print('\nnode %d killed mid-fetch: %d requests in the crawl (%d in the local run), %d '
              'made again by the re-run, smallest gap between two requests %.3f s' % (
                  node_killer.node, len(second_requests), len(local_requests),
                  sum(again.values()), min(gaps)))
    time.sleep(3)        # the history server picks finished jobs up every second
    second_jobs = history_jobs(second_ms)
    assert reruns(second_jobs) or sum(j['failedMapAttempts'] + j['killedMapAttempts']
                                      for j in second_jobs) >= 1 or \
        any(am_attempts(j) > 1 for j in second_jobs), second_jobs

    # The small jobs' crawl: the same XML, every fetch on YARN (its lists made in the
    # driver) and the rest in the driver.
    local_xml = read_xml(os.path.join(local_out, 'xml'))
    same_xml(hdfs_xml(fs, small_uri + '/xml'), local_xml)
    small_steps = {n[:-5]: json.loads(fs.read_text(small_uri + '/steps/' + n)).get('runner')
                   for n in fs.listdir(small_uri + '/steps')}
    assert {k: v for k, v in small_steps.items() if k.startswith('fetch-')} == {
        'fetch-%03d' % n: 'inline+hadoop' for n in range(DEPTH + 1)}
    assert small_steps['optimize-000'] == small_steps['merge'] == \
        small_steps['mergejoin'] == 'inline'
    # xml/ written by the merge join's tasks (here in the driver) through WebHDFS.
    assert small_steps['xml'] is None and json.loads(fs.read_text(
        small_uri + '/steps/xml.json'))['made_by'] == 'mergejoin'
    # Parsed again from the WARC records on HDFS with a new field rule: the site is gone,
    # so nothing could have been fetched, and the field is in merged/.
    sites_dir = tmp_path / 'sites'
    sites_dir.mkdir()
    (sites_dir / 'fixture.toml').write_text(
        '[site]\nname = "fixture"\nhosts = ["127.0.0.1"]\n[fields.HEADING]\ncss = "h1"\n')
    args = [sys.executable, '-m', 'drivers.cli', 'reparse', small_uri, '-r', 'hadoop']
    for setting in SETTINGS + ['parse.sites=["%s"]' % sites_dir]:
        args += ['--set', setting]
    res = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    merged = {r['url']: r for r in hdfs_records(fs, small_uri + '/merged')}
    assert merged[site.url('/')]['fields'] == {'HEADING': 'Fixture home'}
    assert len(hdfs_xml(fs, small_uri + '/delta/001-reparse1/xml')) == len(merged)
    fs.rm(small_uri)
    # The dependency archive went to HDFS once, under its content hash, and each
    # NodeManager downloaded (localised) it at most once for all the jobs of the crawls.
    ship = fs.listdir('/user/%s/.mrcrawl/ship' % webhdfs_address()[1])   # hadoop.ship_dir
    deps = [n for n in ship if n.startswith('mrcrawl-deps-')]
    assert deps and not [n for n in ship if n.startswith('.tmp-')]
    named, downloads = 0, {}
    for log in glob.glob(os.path.join(os.environ['HADOOP_LOG_DIR'], 'nodemanager*.log')):
        with open(log, errors='replace') as f:      # since the NodeManager started
            for line in f:
                for d in deps:
                    if d in line:
                        named += 'is localizing' in line
                        key = (os.path.basename(log), d)
                        downloads[key] = downloads.get(key, 0) + ('Downloading' in line)
    assert named >= DEPTH + 1, named       # at least this test's fetch containers
    assert all(n <= 1 for n in downloads.values()), downloads

    # The killed attempt was retried by Hadoop: the crawl succeeded (above), the job
    # history shows one failed map attempt and every job succeeded, and yet no record
    # is lost or doubled (below: the same statuses as the local run, exactly one page
    # record per in/ URL).
    assert killer.error is None, killer.error
    assert killer.killed is not None, 'no fetch task was seen fetching'
    time.sleep(3)        # the history server picks finished jobs up every second
    jobs = history_jobs(started_ms, second_ms)
    assert sum(j['failedMapAttempts'] for j in jobs) == 1, jobs
    assert len(reruns(jobs)) <= 1

    # Same pages in xml/ (read from HDFS as a downstream job would) and same documents,
    # after the second cycle: the new seed's page besides; the delta holds it alone.
    # xml/ is the first build, and OUT/outputs.json lists the delta over it.
    outputs = json.loads(fs.read_text(out_uri + '/outputs.json'))
    assert outputs['mode'] == 'delta' and outputs['deltas'] == ['002']
    hadoop_xml = hdfs_xml(fs, out_uri + '/xml')
    assert new_url not in hadoop_xml
    base_documents = len(hadoop_xml)
    hadoop_xml.update(hdfs_xml(fs, out_uri + '/delta/002/xml'))
    assert new_url in hadoop_xml and {'/', '/hidden/3.html'} <= cycle_paths
    same_xml({u: d for u, d in hadoop_xml.items() if u != new_url}, local_xml)
    assert set(hdfs_xml(fs, out_uri + '/delta/002/xml')) == {new_url}
    cycle2 = json.loads(fs.read_text(out_uri + '/cycles/002.json'))
    assert cycle2['finished'] and cycle2['first_layer'] == DEPTH + 1
    # The second build merged only the groups its change affects (drivers/later/affected.py),
    # from the key rows the map tasks of the first build's MRMerge and the reduce tasks
    # of MRCurrent wrote to HDFS through WebHDFS.
    merge2 = json.loads(fs.read_text(out_uri + '/steps/merge.json'))['counters']['merge']
    assert merge2['merge_affected_urls_total'] >= 1, merge2
    assert merge2['merged_pages_total'] == len(hdfs_records(fs, out_uri + '/merge_map'))
    # Its anchors were inverted for the affected URLs only (drivers/later/affected_anchors.py):
    # MRCurrent's link rows through WebHDFS, MRAnchors --only from HDFS, the last build's
    # records kept.
    anchors2 = json.loads(fs.read_text(out_uri + '/steps/anchors.json'))['counters']['merge']
    assert anchors2['anchors_affected_urls_total'] >= 1, anchors2
    assert anchors2['anchors_kept_total'] > 0, anchors2
    # And its join took those URLs only, the others' signatures kept from HDFS.
    join2 = json.loads(fs.read_text(out_uri + '/steps/mergejoin.json'))['counters']
    assert join2['merge_join']['join_affected_urls_total'] >= 1, join2
    assert join2['merge_join']['signatures_kept_total'] > 0, join2
    # Its current fetches: MRCurrent shuffled the URLs the fetch named in changes/ only,
    # its map tasks wrote the others' through WebHDFS (drivers/later/affected_current.py).
    current2 = json.loads(fs.read_text(out_uri + '/steps/current.json'))['counters']
    current2 = current2['current']
    assert current2['current_unshuffled_total'] >= 1, current2
    current_urls = [r['url'] for r in hdfs_records(fs, out_uri + '/current')]
    assert len(current_urls) == len(set(current_urls)) == current2['current_total']
    # Its index was made from the last build's (drivers/later/affected_index.py): the Parquet
    # files read and written through WebHDFS, MRCurrent's rows for the changed URLs.
    index2 = json.loads(fs.read_text(out_uri + '/steps/index.json'))['counters']['index']
    assert index2['index_rows_made_total'] >= 1, index2
    assert index2['index_rows_kept_total'] > 0, index2

    # Same statuses, layer by layer (out/: the fetch parses, fetch.parse).
    for layer in ['%03d' % n for n in range(DEPTH + 1)]:
        local_docs = {d['url']: d['status'] for d in read_records(
            os.path.join(local_out, 'out', layer))}
        hadoop_pages = hdfs_records(fs, '%s/out/%s' % (out_uri, layer))
        hadoop_docs = {d['url']: d['status'] for d in hadoop_pages}
        assert hadoop_docs == local_docs, layer
        in_urls = sorted(r['url'] for r in hdfs_records(fs, '%s/in/%s' % (out_uri, layer)))
        assert sorted(d['url'] for d in hadoop_pages) == in_urls, layer  # none lost or twice

    # WARC (warc.enabled): the fetch tasks uploaded their files to HDFS through WebHDFS;
    # read back with warcio, the first cycle's hold the same responses as the local
    # run's.
    def responses(paths, read):
        got = []
        for path in paths:
            for rec in ArchiveIterator(io.BytesIO(read(path))):
                if rec.rec_type == 'response':
                    rec.content_stream().read()
                    got.append((rec.rec_headers.get_header('WARC-Target-URI').replace(
                        'http://127.0.0.1:%d' % site.port, ''),
                        rec.rec_headers.get_header('WARC-Payload-Digest')))
        return sorted(got)
    local_warc = os.path.join(local_out, 'warc')
    hadoop_names = [n for n in fs.listdir(out_uri + '/warc') if n.endswith('.warc.gz')
                    and int(n.split('-')[1][1:]) <= DEPTH]     # the first cycle's layers
    assert hadoop_names and not [n for n in fs.listdir(out_uri + '/warc')
                                 if n.startswith('.tmp-')]
    got = responses([out_uri + '/warc/' + n for n in hadoop_names], fs.read_bytes)
    want = responses([os.path.join(local_warc, n) for n in os.listdir(local_warc)],
                     lambda p: open(p, 'rb').read())
    assert got == want and len(got) >= 8

    # The Hadoop jobs' counters feed the same per-layer summary.
    local_report = json.load(open(os.path.join(local_out, 'report.json')))
    hadoop_report = json.loads(fs.read_text(out_uri + '/report.json'))
    keys = ('urls_in', 'fetched', 'http_error', 'robots_denied', 'new_urls', 'accounted')
    assert [{k: r[k] for k in keys} for r in hadoop_report['layers'][:DEPTH + 1]] == \
        [{k: r[k] for k in keys} for r in local_report['layers']]
    assert len(hadoop_report['layers']) > DEPTH + 1           # and the second cycle's
    assert hadoop_report['xml']['documents'] == base_documents       # xml/: the base
    assert hadoop_report['xml']['deltas'] == ['002']
    # One row per URL's current fetch after the second cycle, the new page's included.
    assert hadoop_report['index']['rows'] >= local_report['index']['rows'] > 0
    assert 'crawl summary' in summary
    assert n_local > 0

    # A downstream team's job reads xml/ straight from HDFS (jobs/inverted_index.py
    # imports nothing from mrcrawl; mrjob ships itself).
    res = subprocess.run(
        [sys.executable, '-m', 'jobs.inverted_index', '-r', 'hadoop', '--python-bin',
         os.environ['MRCRAWL_TASK_PYTHON'], '--hadoop-streaming-jar',
         os.environ['MRCRAWL_STREAMING_JAR'], '--hadoop-bin', os.environ['MRCRAWL_HADOOP_BIN'],
         out_uri + '/xml', '--output-dir', out_uri + '/inverted_index'],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    index = hdfs_records(fs, out_uri + '/inverted_index')   # OUT/index is the Parquet index
    assert index, 'empty inverted index'
    terms = {rec['term']: rec for rec in index}
    # "Fixture home" is the title of the seed page: its term points back to it.
    assert any(p['url'].endswith(':%d/' % site.port) for p in terms['fixture']['postings'])
    fs.rm(out_uri)


def test_small_layers_of_a_hadoop_crawl_are_fetched_in_the_driver(tmp_path):
    """hadoop.driver_fetch_max_urls: a layer of a Hadoop crawl with at most that many URLs
    is fetched in the driver's process (StagedInlineRunner), not by a YARN job; its pages,
    meta/, robots/ and WARC files land on HDFS as a YARN task's do, politeness holds
    across layers, and a layer over the limit still goes to YARN. Same XML as the local
    runner's crawl."""
    out_uri = 'hdfs:///mrcrawl-it/driverfetch-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        local_out = str(tmp_path / 'local')
        mrcrawl_crawl(seeds, local_out, 'local')
        n0 = len(site.requests)
        started_ms = int(time.time() * 1000) - 1000
        # The seed's layer (1 URL) in the driver; layer 1 (more) on YARN; layer 2 too.
        mrcrawl_crawl(seeds, out_uri, 'hadoop', ['hadoop.driver_fetch_max_urls=1'])
        times = sorted(r['t'] for r in site.requests[n0:])
        paths = [r['path'] for r in site.requests[n0:] if r['path'] != '/robots.txt']
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.5 * 0.95
    assert len(paths) == len(set(paths)) and '/private/secret.html' not in paths
    runners = {n[:-5]: json.loads(fs.read_text(out_uri + '/steps/' + n)).get('runner')
               for n in fs.listdir(out_uri + '/steps') if n.startswith('fetch-')}
    assert runners == {'fetch-000': 'inline', 'fetch-001': 'inline+hadoop',
                       'fetch-002': 'inline+hadoop'}, runners
    time.sleep(3)        # the history server picks finished jobs up every second
    fetch_jobs = sorted(j['name'] for j in history_jobs(started_ms) if 'MRFetch' in j['name'])
    assert len(fetch_jobs) == 2 and not any('layer 0' in n for n in fetch_jobs), fetch_jobs
    same_xml(hdfs_xml(fs, out_uri + '/xml'), read_xml(os.path.join(local_out, 'xml')))
    # Layer 0's files, written from the driver over WebHDFS.
    assert fs.exists(out_uri + '/meta/000/_SUCCESS') and \
        len(hdfs_records(fs, out_uri + '/meta/000')) == 1
    assert [r['kind'] for r in hdfs_records(fs, out_uri + '/robots/000')].count('robots') == 1
    warc = [n for n in fs.listdir(out_uri + '/warc') if n.startswith('mrcrawl-L000')]
    assert warc and all(n.endswith('.warc.gz') for n in warc)
    uris = [rec.rec_headers.get_header('WARC-Target-URI') for n in warc
            for rec in ArchiveIterator(io.BytesIO(fs.read_bytes(out_uri + '/warc/' + n)))
            if rec.rec_type == 'response']
    assert sorted(uris) == sorted([site.url('/robots.txt'), site.url('/')])
    fs.rm(out_uri)


def test_a_yarn_fetch_shows_its_progress_from_its_applicationmaster(tmp_path):
    """A fetch on YARN of some 14 s (12 URLs, each answering after 1 s): the progress line
    comes from the job's counters while it runs (its ApplicationMaster, through the
    ResourceManager), with the application's tracking URL once; status.json on HDFS is
    valid JSON at every reading and follows the fetch."""
    out_uri = 'hdfs:///mrcrawl-it/progress-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    seen, done = [], threading.Event()

    def read_status():
        while not done.wait(0.3):
            try:
                text = fs.read_text(out_uri + '/status.json')
            except OSError:
                continue
            seen.append(json.loads(text))
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(''.join(site.url('/fault/delay?n=1&i=%d' % i) + '\n'
                                 for i in range(12)))
        reader = threading.Thread(target=read_status)
        reader.start()
        try:
            stdout = mrcrawl_crawl(seeds, out_uri, 'hadoop', [
                'hadoop.driver_fetch_max_urls=0', 'warc.enabled=false', 'politeness.delay=0.2',
                'progress.seconds=1', 'progress.log_seconds=2'])
        finally:
            done.set()
            reader.join()
    apps = re.findall(r'^  YARN application (application_\d+_\d+): (http://\S+/proxy/\1/)$',
                      stdout, re.M)
    assert len(apps) == 1, stdout
    lines = re.findall(r'^fetch 000: (\d+) of 12 URLs .*, (\d) hosts in flight, 0 errors, '
                       r'(.+) left$', stdout, re.M)
    done_urls = [int(n) for n, _, _ in lines]
    # The URLs done as they are, not at the task's end: several counts between 1 and 11.
    assert len({n for n in done_urls if 0 < n < 12}) >= 3, stdout
    assert done_urls == sorted(done_urls) and {k for _, k, _ in lines} <= {'0', '1'}
    during = [s['fetch'] for s in seen if s.get('fetch')]
    assert during and max(f['done'] for f in during) >= 6, seen
    assert json.loads(fs.read_text(out_uri + '/status.json'))['state'] == 'finished'
    fs.rm(out_uri)


def test_a_crawl_on_hdfs_is_indexed_into_solr_by_yarn_tasks(tmp_path):
    """mrcrawl index -r hadoop: the posting job runs on YARN (hadoop.local_max_bytes = 0
    keeps it off the driver), its tasks post the crawl's merged pages to the test Solr
    (make test starts it), one document per merged record; OUT/solr.json on HDFS."""
    solr_url = os.environ.get('MRCRAWL_SOLR_URL', 'http://127.0.0.1:8983/solr/mrcrawl')
    out_uri = 'hdfs:///mrcrawl-it/solr-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        mrcrawl_crawl(seeds, out_uri, 'hadoop', ['hadoop.driver_fetch_max_urls=1000',
                                                 'warc.enabled=false'])
    started_ms = int(time.time() * 1000) - 1000
    res = subprocess.run([sys.executable, '-m', 'drivers.cli', 'index', out_uri, '--solr',
                          solr_url, '-r', 'hadoop', '--set', 'hadoop.local_max_bytes=0'],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    merged = hdfs_records(fs, out_uri + '/merged')
    crawl = '"%s"' % out_uri
    with urllib.request.urlopen('%s/select?q=*:*&rows=1000&wt=json&fq=%s' % (
            solr_url, urllib.parse.quote('crawl:' + crawl)), timeout=30) as r:
        docs = json.load(r)['response']['docs']
    assert sorted(d['id'] for d in docs) == sorted(r['url'] for r in merged) and docs
    assert json.loads(fs.read_text(out_uri + '/solr.json'))[solr_url]['base'] == '001'
    time.sleep(3)        # the history server picks finished jobs up every second
    assert any('MRSolrIndex' in j['name'] for j in history_jobs(started_ms))
    fs.rm(out_uri)


def test_wide_steps_get_reducers_from_their_input_and_the_clusters_vcores(tmp_path):
    """hadoop.reducers = 0 (the default): a job too big for uber mode gives its steps
    that see every page one reducer per hadoop.reduce_bytes of input (2,000 bytes here,
    so that a small crawl has several), at most the cluster's vcores; a small job keeps
    one. The crawl (its jobs over 20,000 bytes of input on YARN, hadoop.local_max_bytes)
    writes the same XML as the local runner's."""
    out_uri = 'hdfs:///mrcrawl-it/reducers-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        local_out = str(tmp_path / 'local')
        mrcrawl_crawl(seeds, local_out, 'local', ['warc.enabled=false'])
        started_ms = int(time.time() * 1000) - 1000
        mrcrawl_crawl(seeds, out_uri, 'hadoop', [
            'warc.enabled=false', 'hadoop.driver_fetch_max_urls=1000',
            'hadoop.uber_max_bytes=1', 'hadoop.local_max_bytes=20000',
            'hadoop.reduce_bytes=2000'])
    time.sleep(3)        # the history server picks finished jobs up every second
    from drivers.runtime import hadoop
    vcores = hadoop.cluster_vcores()        # 16: two NodeManagers of 8 (hadoop/up.sh)
    reduces = collections.defaultdict(list)
    for j in history_jobs(started_ms):
        reduces[j['name'].split()[1]].append(j['reducesTotal'])
    wide = reduces['MROptimize'] + reduces['MRMergeJoin'] + reduces['MRIndexRows']
    assert max(wide) > 1 and max(wide) <= vcores, dict(reduces)
    assert max(reduces['MRMergeJoin']) == min(vcores, max(wide)), dict(reduces)
    same_xml(hdfs_xml(fs, out_uri + '/xml'), read_xml(os.path.join(local_out, 'xml')))
    fs.rm(out_uri)


def test_following_inside_a_yarn_fetch_task(tmp_path):
    """fetch.follow_hops on YARN: the fetch task (a YARN container) follows the quick
    host's links while the slow host's list runs, as on the local runner: followed
    records in out/000, every in/ URL one record, nothing requested twice. Also a PDF
    and an image resource with its preview, each handled in a YARN container."""
    out_uri = 'hdfs:///mrcrawl-it/follow-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    from tests.pdfs import make_pdf
    from tests.helpers import png
    poster = png()
    gallery = tmp_path / 'gallery.toml'
    gallery.write_text('[site]\nhosts = ["127.0.0.2"]\n[resources.image]\n'
                       'css = "img.photo"\nattr = "src"\n')
    with FixtureSite('127.0.0.2') as quick, FixtureSite('127.0.0.3') as slow:
        # A PDF among the seeds: parsed by PDFium in its sandbox, inside a YARN container.
        quick.overrides['/report.pdf'] = ('typed', 'application/pdf', make_pdf(
            ['A report read on YARN'], title='YARN report', links=['/a.html']))
        # A page naming an image: stored by digest on HDFS, with its thumbnail.
        quick.overrides['/gallery.html'] = (
            b'<html><body><h1>Gallery</h1><img class="photo" src="/poster.png"></body></html>')
        quick.overrides['/poster.png'] = ('typed', 'image/png', poster)
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(quick.url('/') + '\n' + quick.url('/report.pdf') + '\n' +
                         quick.url('/gallery.html') + '\n' + ''.join(
                             slow.url('/fault/delay?n=0.2&i=%d' % i) + '\n' for i in range(10)))
        mrcrawl_crawl(seeds, out_uri, 'hadoop', ['fetch.follow_hops=1', 'fetch.reducers=1',
                                                 'parse.sites=["%s"]' % gallery,
                                                 'hadoop.driver_fetch_max_urls=0'])
        for s in (quick, slow):
            pages = [p for p in s.paths() if p != '/robots.txt']
            assert len(pages) == len(set(pages)), collections.Counter(pages)
            assert s.paths().count('/robots.txt') == 1      # read once, reused (robots/)
    followed = 0
    for layer in sorted(fs.listdir(out_uri + '/out')):
        urls_in = [r['url'] for r in hdfs_records(fs, '%s/in/%s' % (out_uri, layer))]
        records = hdfs_records(fs, '%s/out/%s' % (out_uri, layer))
        assert sorted(urls_in) == sorted(r['url'] for r in records if not r.get('followed'))
        followed += sum(1 for r in records if r.get('followed'))
        assert all(r['depth'] == int(layer) + 1 for r in records if r.get('followed'))
    steps = json.loads(fs.read_text(out_uri + '/steps/fetch-000.json'))
    # The fetch lists made in the driver, the fetch itself in a YARN container.
    assert steps['runner'] in ('inline+hadoop', 'hadoop') and followed > 0
    assert steps['counters']['fetch']['followed_total'] > 0
    pdf = [r for r in hdfs_records(fs, out_uri + '/out/000') if r['url'].endswith('.pdf')]
    assert [(r['title'], r['text'], r.get('parse_error')) for r in pdf] == [
        ('YARN report', 'A report read on YARN', None)]
    assert pdf[0]['links'] and pdf[0]['links'][0]['url'].endswith('/a.html')
    # The image: fetched in layer 1's YARN task, its bytes and preview on HDFS, named by
    # the gallery page's XML document.
    from jobs.lib import media, records as R
    stored = media.stored_name(R.digest(poster))
    assert fs.read_bytes('%s/%s' % (out_uri, stored)) == poster
    preview = fs.read_bytes('%s/%s%s' % (out_uri, stored, media.PREVIEW_SUFFIX))
    with Image.open(io.BytesIO(preview)) as im:
        assert im.format == 'JPEG' and im.size == (320, 200)
    counters = json.loads(fs.read_text(out_uri + '/steps/fetch-001.json'))
    assert counters['runner'] in ('inline+hadoop', 'hadoop')
    assert counters['counters']['fetch']['previews_made_total'] == 1
    xml = {}
    for name in fs.listdir(out_uri + '/xml'):
        if name.startswith('part-'):
            for line in fs.read_text('%s/xml/%s' % (out_uri, name)).splitlines():
                url, _, doc = line.partition('\t')
                xml[url] = doc
    res = ET.fromstring(xml[quick.url('/gallery.html')]).find('resources/resource')
    assert (res.get('stored'), res.get('preview'), res.get('width')) == (
        stored, stored + media.PREVIEW_SUFFIX, '640')
    fs.rm(out_uri)


def test_sites_drive_a_yarn_crawl(tmp_path):
    """`mrcrawl crawl --sites DIR -r hadoop`, no seeds file: the sites' entry URLs seed
    the crawl; their page cap and hourly quota hold across layers, applied by generate
    in YARN tasks (hadoop.local_max_bytes=0); one site's own delay spaces its requests."""
    out_uri = 'hdfs:///mrcrawl-it/sites-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    sites = tmp_path / 'sites'
    sites.mkdir()
    with FixtureSite('127.0.0.4') as capped, FixtureSite('127.0.0.5') as quota:
        (sites / 'capped.toml').write_text(
            '[site]\nhosts = ["127.0.0.4"]\nentry = ["%s"]\ndelay = 0.4\nmax_pages = 5\n'
            % capped.url('/'))
        (sites / 'quota.toml').write_text(
            '[site]\nhosts = ["127.0.0.5"]\nentry = ["%s", "%s"]\nquota_per_hour = 4\n'
            % (quota.url('/'), quota.url('/a.html')))
        args = [sys.executable, '-m', 'drivers.cli', 'crawl', '--sites', str(sites),
                '--depth', str(DEPTH), '--out', out_uri, '-r', 'hadoop']
        for s in SETTINGS + ['hadoop.local_max_bytes=0']:
            args += ['--set', s]
        res = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500)
        assert res.returncode == 0, res.stderr[-5000:]
        pages = {s: [r for r in s.requests if r['path'] != '/robots.txt']
                 for s in (capped, quota)}
        assert len(pages[capped]) == 5 and len(pages[quota]) == 4
        times = sorted(r['t'] for r in capped.requests)
        assert min(b - a for a, b in zip(times, times[1:])) >= 0.4
    report = json.loads(fs.read_text(out_uri + '/report.json'))
    assert report['seeds']['site_entries'] == 3 and report['seeds']['good'] == 3
    held = collections.Counter()
    for row in report['layers']:
        held.update(row.get('held_back', {}))
    assert held['site_max_pages'] > 0 and held['site_quota_hour'] > 0
    last = [row['site_limits'] for row in report['layers'] if 'site_limits' in row][-1]
    assert (last['capped.pages'], last['quota.hour']) == (5, 4)
    steps = json.loads(fs.read_text(out_uri + '/steps/generate-001.json'))
    assert steps['runner'] == 'hadoop'
    # Each YARN fetch task's own record (report.html's pages a second per task).
    from drivers.reports.harvest import scan_tasks
    tasks = scan_tasks(fs, out_uri)
    for row in report['layers']:
        recs = tasks[row['layer']]
        assert sum(r['urls'] for r in recs) == row['urls_in']
        assert sum(r['fetched'] for r in recs) == row['fetched'] > 0
    fs.rm(out_uri)


def test_the_clusters_vcores_come_from_the_resourcemanager():
    """Fetch lists are sized by the cluster's vcores (CrawlerDriver.lists): the test
    cluster's NodeManagers have 8 each (hadoop/up.sh)."""
    from drivers.runtime import hadoop, hadoop_locate
    url = hadoop_locate.rm_webapp_url(hadoop_locate.conf_dir_of())
    with urllib.request.urlopen(url + '/ws/v1/cluster/nodes', timeout=30) as resp:
        nodes = json.load(resp)['nodes']['node']
    running = [n for n in nodes if n['state'] == 'RUNNING']
    assert running
    assert hadoop.cluster_vcores() == 8 * len(running)
