"""The hadoop runner's parts (drivers/runtime/hadoop.py, drivers/runtime/hdfs.py
MrjobWebHDFS, the jobs' per-job Hadoop settings). The tests marked ``hadoop`` use the
real test cluster (``make test`` starts it); the others need none."""
import json
import os
import time
import uuid
import zipfile

import pytest

from drivers.runtime import hadoop
from jobs.lib import config
from tests.helpers import TEST_SETTINGS
from tests.helpers import history_jobs

pytestmark = pytest.mark.unit


def conf_file(tmp_path, *extra):
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(config.load(overrides=TEST_SETTINGS + list(extra))))
    return str(path)


def test_jobs_zip_has_the_same_bytes_for_the_same_code(tmp_path):
    """The zip's hash names it on HDFS: the same code must give the same hash, or YARN
    would localise it again for every crawl."""
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    first = hadoop.jobs_zip(str(tmp_path / 'a'))
    os.utime(os.path.join(hadoop.JOBS_DIR, 'base.py'))       # a touched file, same bytes
    second = hadoop.jobs_zip(str(tmp_path / 'b'))
    assert hadoop.file_hash(first) == hadoop.file_hash(second)
    names = zipfile.ZipFile(first).namelist()
    assert 'jobs/base.py' in names and 'jobs/lib/fetcher.py' in names
    assert not [n for n in names if '__pycache__' in n]


def test_the_deps_archive_holds_only_what_the_crawl_imports(tmp_path):
    """trafilatura (and dateparser, babel, pytz, tzdata with it) is shipped only to a crawl
    that extracts main text with it; numpy's tests and build tools never are."""
    default = hadoop.task_distributions(config.load())
    assert 'trafilatura' not in default and 'numpy' in default
    chosen = hadoop.task_distributions(
        config.load(overrides=['parse.main_text_extractor="trafilatura"']))
    assert chosen == default + ('trafilatura',)
    kept = ['numpy/__init__.py', 'numpy/_core/multiarray.py', 'numpy/linalg/linalg.py',
            'requests/tests.py', 'mrjob/tests_helper/x.py']
    gone = ['numpy/tests/test_a.py', 'numpy/_core/tests/data/x.csv', 'numpy/f2py/f.py',
            'numpy/distutils/d.py', 'numpy/_core/include/numpy/x.h',
            'numpy/random/tests/test_r.py']
    for rel in kept + gone:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('')
    hadoop.prune(str(tmp_path))
    assert [rel for rel in kept + gone if (tmp_path / rel).exists()] == kept


def test_the_tasks_decode_every_content_coding_a_crawl_offers():
    """urllib3 offers (Accept-Encoding) the codings it can decode where it runs: br with
    brotli, zstd with backports.zstd (setup.cfg). The tasks on the nodes get both, so a
    YARN fetch offers and decodes what a local one does."""
    from urllib3.util.request import ACCEPT_ENCODING
    assert ACCEPT_ENCODING.split(',') == ['gzip', 'deflate', 'br', 'zstd']
    assert {'brotli', 'backports.zstd'} <= set(hadoop.TASK_DISTRIBUTIONS)


def test_every_module_the_jobs_import_is_in_the_deps_archive():
    """Each third-party module imported anywhere in jobs/ (lazy imports too) belongs to
    a distribution the archive installs: TASK_DISTRIBUTIONS and what they require, or
    an optional one (shipped when its setting asks for it). lxml once came only through
    trafilatura, and the XML job failed on YARN when trafilatura went optional."""
    import ast
    import glob
    import re
    import sys
    from importlib import metadata
    from tests.helpers import ROOT

    def requires(dist):
        try:
            reqs = metadata.requires(dist) or ()
        except metadata.PackageNotFoundError:    # its marker excludes this Python
            return
        for req in reqs:
            if 'extra ==' not in req:
                yield re.split(r'[\s;<>=!~\[(]', req, 1)[0]

    def norm(name):
        return re.sub(r'[-_.]+', '-', name).lower()

    shipped, todo = set(), list(hadoop.TASK_DISTRIBUTIONS)
    while todo:
        dist = norm(todo.pop())
        if dist not in shipped:
            shipped.add(dist)
            todo.extend(requires(dist))
    optional = {norm(d) for dists in hadoop.OPTIONAL_DISTRIBUTIONS.values() for d in dists}
    optional |= {norm(d) for d in hadoop.RENDER_DISTRIBUTIONS}
    providers = metadata.packages_distributions()
    missing = set()
    for path in glob.glob(os.path.join(ROOT, 'jobs', '**', '*.py'), recursive=True):
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split('.')[0]
                if top in sys.stdlib_module_names or top in ('jobs', 'drivers', 'tests'):
                    continue
                dists = {norm(d) for d in providers.get(top, [top])}
                if not dists & (shipped | optional):
                    missing.add('%s (%s)' % (top, os.path.relpath(path, ROOT)))
    assert not missing, sorted(missing)


def _lists(runner, *settings, cores=None, vcores=None, monkeypatch=None):
    """CrawlerDriver.lists of a crawl on *runner* with *settings* (delay 0 unless set)."""
    import types
    from drivers.crawler_driver import CrawlerDriver
    lines = []
    conf = config.load(overrides=TEST_SETTINGS + ['politeness.delay=0'] + list(settings))
    crawl = types.SimpleNamespace(conf=conf, runner=runner, progress=lines.append,
                                  yarn_vcores=lambda: hadoop.cluster_vcores())
    if monkeypatch is not None:
        monkeypatch.setattr(hadoop, 'cluster_vcores', lambda: vcores)
    driver = CrawlerDriver(crawl)
    driver._cores = cores
    return driver.lists, lines


def test_fetch_lists_follow_the_cores_and_the_work(monkeypatch):
    local, _ = _lists('local', cores=4)
    assert local(10000, 1000) == 4         # one per core
    assert local(150, 100) == 2            # 150 x 0.02 s: two task starts' worth
    assert local(50, 20) == 1              # less CPU than a second task's start
    assert local(100000, 3) == 3           # never more lists than keys
    yarn, lines = _lists('hadoop', vcores=16, monkeypatch=monkeypatch)
    assert yarn(10000, 1000) == 16 and lines == []      # the cluster's vcores
    assert yarn(550, 100) == 2             # 550 x 0.02 s = two containers' start
    assert yarn(274, 100) == 1
    polite, _ = _lists('hadoop', 'politeness.delay=1', cores=16)
    assert polite(5000, 50) == 1           # 50 x 0.02 s <= 1 s: one core keeps up
    assert polite(5000, 51) == 16
    few, _ = _lists('local', 'fetch.keys_memory_mb=1', cores=2)   # 32 keys in flight
    assert few(10, 100) == 4               # every key in flight at once
    fixed, _ = _lists('local', 'fetch.reducers=5', cores=2)
    assert fixed(10, 1) == 5
    blind, lines = _lists('hadoop', vcores=None, monkeypatch=monkeypatch)
    assert blind(10000, 1000) == (os.cpu_count() or 1)
    assert lines == ["YARN did not tell its vcores: fetch lists sized by this machine's cores"]


def test_jobs_set_their_hadoop_settings(tmp_path):
    from jobs.fetch import MRFetch
    from jobs.optimize import MROptimize
    path = conf_file(tmp_path)
    jc = MROptimize(['-r', 'hadoop', '--crawl-conf', path]).jobconf()
    assert jc['mapreduce.map.speculative'] == jc['mapreduce.reduce.speculative'] == 'false'
    assert jc['mapreduce.job.ubertask.enable'] == 'true'
    assert jc['mapreduce.job.ubertask.maxbytes'] == str(config.load()['hadoop']['uber_max_bytes'])
    assert jc['mapreduce.input.fileinputformat.split.maxsize'] == \
        str(config.load()['hadoop']['split_max_bytes'])
    off = MROptimize(['-r', 'hadoop', '--crawl-conf', conf_file(
        tmp_path, 'hadoop.uber_max_bytes=0', 'hadoop.split_max_bytes=0')]).jobconf()
    assert off['mapreduce.job.ubertask.enable'] == 'false'
    assert 'mapreduce.input.fileinputformat.split.maxsize' not in off
    # The command line's --jobconf still wins.
    mine = MROptimize(['-r', 'hadoop', '--crawl-conf', path, '--jobconf',
                       'mapreduce.reduce.speculative=true'])._runner_kwargs()['jobconf']
    assert mine['mapreduce.reduce.speculative'] == 'true'
    assert mine['mapreduce.map.speculative'] == 'false'
    # The fetch of one list may run in uber mode too (HadoopRunner re-runs it in
    # containers if it fails there); of several lists not: the ApplicationMaster would
    # fetch them one after another. Each list is read whole, by one map task.
    from jobs.base import KEY_PARTITIONS, whole_files
    lists, fetch = MRFetch(['-r', 'hadoop', '--crawl-conf', path, '--bins', '1']).steps()
    assert KEY_PARTITIONS in lists.description(0)['jobconf']
    assert whole_files(fetch.description(1)['jobconf'])
    assert 'mapreduce.job.ubertask.enable' not in fetch.description(1)['jobconf']
    fetch = MRFetch(['-r', 'hadoop', '--crawl-conf', path, '--bins', '2']).steps()[1]
    assert fetch.description(1)['jobconf']['mapreduce.job.ubertask.enable'] == 'false'
    assert 'reducer' not in fetch.description(1)


def test_steps_over_every_page_get_hadoop_reducers_when_too_big_for_uber(tmp_path):
    """The steps whose reducers see every page get the driver's --reducers
    (hadoop.reducers, or sized from the job's input and the cluster's vcores) only for a
    YARN job whose input is over uber_max_bytes, and never a map-only step (Hadoop
    would add an identity reduce to it)."""
    from drivers.crawl import Crawl
    from jobs.anchors import MRAnchors
    from jobs.generate import MRGenerate
    from jobs.html_to_xml import MRHtmlToXml
    from jobs.merge import MRMerge
    from jobs.merge_join import MRMergeJoin
    conf = config.load(overrides=TEST_SETTINGS + ['hadoop.reducers=3',
                                                  'hadoop.uber_max_bytes=1000'])
    crawl = Crawl(str(tmp_path / 'crawl'), conf, runner='local', progress=lambda m: None)
    small, big = tmp_path / 'small', tmp_path / 'big'
    small.write_bytes(b'x' * 1000)
    big.write_bytes(b'x' * 1001)
    assert crawl.reduce_args('hadoop', [str(small)]) == []
    assert crawl.reduce_args('hadoop', [str(small), str(big)]) == ['--reducers', '3']
    assert crawl.reduce_args('local', [str(big)]) == []
    path = conf_file(tmp_path)
    # 0 (the default): one per reduce_bytes of input, at most the cluster's vcores.
    auto = Crawl(str(tmp_path / 'crawl2'), config.load(overrides=TEST_SETTINGS + [
        'hadoop.reduce_bytes=400', 'hadoop.uber_max_bytes=1000']), runner='local',
        progress=lambda m: None)
    auto._vcores = 8                            # as the ResourceManager would say
    assert auto.reduce_args('hadoop', [str(small)]) == []
    assert auto.reduce_args('hadoop', [str(big)]) == ['--reducers', '3']   # 1001 / 400
    assert auto.reduce_args('hadoop', [str(big)] * 4) == ['--reducers', '8']
    auto._vcores = 2
    assert auto.reduce_args('hadoop', [str(big)]) == ['--reducers', '2']
    for job, extra, wide in ((MRMergeJoin, [], [True]), (MRMerge, [], [True] * 7),
                             (MRGenerate, [], [True]), (MRGenerate, ['--inject'], [True] * 2),
                             (MRAnchors, [], [True, True]), (MRHtmlToXml, [], [False])):
        steps = job(['--crawl-conf', path, '--reducers', '3'] + extra).steps()
        assert [s.description(i).get('jobconf', {}).get('mapreduce.job.reduces') == 3
                for i, s in enumerate(steps)] == wide
        assert all('jobconf' not in s.description(i) or 'mapreduce.job.reduces' not in
                   s.description(i)['jobconf']
                   for i, s in enumerate(job(['--crawl-conf', path] + extra).steps()))


def test_a_failed_step_is_run_again_without_uber_mode_only_if_it_ran_uber():
    """HadoopRunner._ran_uber: asked for, one reducer at most, input within the limit."""
    class Sizes:                                # input sizes, as HDFS's du gives them
        du = {'hdfs:///a': 100, 'hdfs:///b': 50}.get
    runner = hadoop.HadoopRunner.__new__(hadoop.HadoopRunner)
    runner._fs = Sizes()

    def args(*pairs, inputs=('hdfs:///a', 'hdfs:///b')):
        out = []
        for p in pairs:
            out += ['-D', p]
        for i in inputs:
            out += ['-input', i]
        return out + ['-output', 'hdfs:///out']
    on = ('mapreduce.job.ubertask.enable=true', 'mapreduce.job.ubertask.maxbytes=150')
    assert runner._ran_uber(args(*on))
    assert runner._ran_uber(args(*on, 'mapreduce.job.reduces=1'))
    assert not runner._ran_uber(args(*on, 'mapreduce.job.reduces=2'))
    assert not runner._ran_uber(args('mapreduce.job.ubertask.enable=true',
                                     'mapreduce.job.ubertask.maxbytes=149'))
    assert not runner._ran_uber(args('mapreduce.job.ubertask.enable=false',
                                     'mapreduce.job.ubertask.maxbytes=150'))


@pytest.mark.hadoop
def test_mrjob_webhdfs_filesystem_and_ship(tmp_path):
    """MrjobWebHDFS does what mrjob asks of a filesystem, on the real HDFS; ship()
    uploads a file once per content and names it by its hash."""
    from drivers.runtime.hdfs import MrjobWebHDFS
    fs = MrjobWebHDFS()
    base = 'hdfs:///mrcrawl-it/fs-%s' % uuid.uuid4().hex[:8]
    local = tmp_path / 'part-00000'
    local.write_bytes(b'one\ntwo\n')
    try:
        fs.mkdir(base + '/a')
        fs.put(str(local), base + '/a/part-00000')
        fs.put(str(local), base + '/a/part-00001')
        fs.touchz(base + '/a/_SUCCESS')
        assert fs.exists(base + '/a') and not fs.exists(base + '/nothing')
        assert sorted(fs.ls(base)) == [base + '/a/' + n for n in
                                       ('_SUCCESS', 'part-00000', 'part-00001')]
        assert sorted(fs.ls(base + '/a/part-*')) == [base + '/a/part-00000',
                                                     base + '/a/part-00001']
        assert fs.exists(base + '/*/part-0000?') and not fs.exists(base + '/*/x-*')
        assert fs.du(base + '/a') == 16 and fs.du(base + '/a/part-00000') == 8
        assert b''.join(fs.cat(base + '/a/part-00000')) == b'one\ntwo\n'
        with pytest.raises(OSError):
            fs.touchz(base + '/a/part-00000')       # non-empty: refused, as hadoop fs does
        fs.rm(base + '/a/part-*')
        assert list(fs.ls(base)) == [base + '/a/_SUCCESS']

        first = hadoop.ship(str(local), base + '/ship', 'thing')
        assert first == '%s/ship/thing-%s' % (base, hadoop.file_hash(str(local)))
        status = fs.fs.client.status(fs._split(first)[1])
        again = hadoop.ship(str(local), base + '/ship', 'thing')
        assert again == first
        assert fs.fs.client.status(fs._split(first)[1])['modificationTime'] == \
            status['modificationTime']                   # not uploaded twice
        assert [n for n in fs.fs.client.list(fs._split(base)[1] + '/ship')] == [
            os.path.basename(first)]                     # no temporary file left
    finally:
        fs.rm(base)


@pytest.mark.hadoop
def test_a_multi_step_job_runs_its_small_steps_in_the_driver(tmp_path, site):
    """drivers/runtime/hadoop.py run_cut: the merge of a Hadoop crawl whose pages are over
    hadoop.local_max_bytes runs its first step on YARN and, that step having handed on
    less than the limit, its six others in the driver: the same merge_map records as
    the local runner's merge of the same pages. Its input files are combined into
    splits of hadoop.split_max_bytes (HadoopRunner.COMBINE_FORMAT): with uber mode off
    and a split as large as all of them, one map task reads every file."""
    from drivers.crawl import Crawl
    from drivers.runtime.hdfs import WebHDFS
    from jobs.merge import MRMerge
    from tests.helpers import crawl_site, read_records, test_conf
    local_out, _ = crawl_site(site, tmp_path, test_conf(), depth=1)
    names = sorted(os.listdir(os.path.join(local_out, 'out')))
    sizes = 0
    base = 'hdfs:///mrcrawl-it/cut-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(base)
    try:
        for n in names:
            folder = os.path.join(local_out, 'out', n)
            for part in os.listdir(folder):
                if not part.startswith(('_', '.')):
                    fs.client.upload(fs._p('%s/in/%s/%s' % (base, n, part)),
                                     os.path.join(folder, part))
                    sizes += os.path.getsize(os.path.join(folder, part))
        conf = test_conf('hadoop.local_max_bytes=%d' % (sizes - 1), 'hadoop.uber_max_bytes=0',
                         'hadoop.split_max_bytes=%d' % sizes)
        started = int(time.time() * 1000)
        crawl = Crawl(base + '/crawl', conf, runner='hadoop', progress=lambda m: None)
        crawl.prepare()
        step = crawl.run_step('merge', MRMerge, ['%s/in/%s' % (base, n) for n in names],
                              crawl.path('merge_map'))
        assert step['runner'] == 'hadoop+inline'
        files = sum(1 for n in names for p in os.listdir(os.path.join(local_out, 'out', n))
                    if not p.startswith(('_', '.')))
        jobs = [j for j in history_jobs(started) if 'MRMerge' in j['name']]
        assert files > 1 and [(j['mapsTotal'], j['uberized']) for j in jobs] == [(1, False)]
        got = [json.loads(l) for p in fs.listdir(crawl.path('merge_map'))
               if not p.startswith(('_', '.'))
               for l in fs.read_text(crawl.path('merge_map', p)).splitlines() if l.strip()]
        want = read_records(os.path.join(local_out, 'merge_map'))
        assert got and sorted(got, key=json.dumps) == sorted(want, key=json.dumps)
        assert not fs.exists(crawl.path('tmp', 'merge.first'))
        local_counters = json.load(open(os.path.join(local_out, 'steps', 'merge.json')))
        assert step['counters']['merge'] == local_counters['counters']['merge']
    finally:
        fs.rm(base)


@pytest.mark.hadoop
def test_fetch_lists_in_the_driver_and_the_fetch_on_yarn(tmp_path, site):
    """run_cut for MRFetch (YARN_STEPS = 'last'): a small layer of a Hadoop crawl gets its
    fetch lists in the driver, with a fetch plan on HDFS (StagedInlineRunner downloads
    it), and only the map-only fetch goes to YARN: one map task per list, no reducer,
    not uber (two lists)."""
    import zlib
    from drivers.crawl import Crawl
    from drivers.fixtures.site import FixtureSite
    from drivers.runtime.hdfs import WebHDFS
    from jobs.fetch import MRFetch
    from jobs.lib import plan
    from tests.helpers import test_conf
    base = 'hdfs:///mrcrawl-it/lists-%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(base)
    with FixtureSite('127.0.0.2') as other:
        urls = [s.url(p) for s in (site, other) for p in ('/', '/a.html', '/b.html')]
        key, other_key = site.url('').split('/')[2], other.url('').split('/')[2]
        # The plan puts the first host in the list the second one does not hash to.
        part = 1 - zlib.crc32(other_key.encode()) % 2
        try:
            fs.write_text(base + '/in/part-00000', ''.join(
                json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n' for u in urls))
            fs.write_text(base + '/plan/part-00000', json.dumps(
                {'key': key, 'partition': part, 'label': plan.label_for(part, 2),
                 'urls': 3}) + '\n')
            started = int(time.time() * 1000)
            crawl = Crawl(base + '/crawl', test_conf('fetch.reducers=2'), runner='hadoop',
                          progress=lambda m: None)
            crawl.prepare()
            step = crawl.run_step('fetch-000', MRFetch, [base + '/in'], crawl.path('out', '000'),
                                  ['--layer', '0', '--plan', base + '/plan/part-00000'])
            assert step['runner'] == 'inline+hadoop'
            assert step['counters']['fetch']['planned_urls_total'] == 3
            pages = [json.loads(l) for p in fs.listdir(crawl.path('out', '000'))
                     if not p.startswith(('_', '.'))
                     for l in fs.read_text(crawl.path('out', '000', p)).splitlines()]
            assert sorted(p['url'] for p in pages) == sorted(urls)
            assert {p['status'] for p in pages} == {'fetched'}
            jobs = [j for j in history_jobs(started) if 'MRFetch' in j['name']]
            assert [(j['mapsTotal'], j['reducesTotal'], j['uberized']) for j in jobs] == \
                [(2, 0, False)]
        finally:
            fs.rm(base)


def test_the_uber_rerun_never_removes_an_output_that_was_there(monkeypatch):
    """HadoopRunner._run_hadoop runs a failed step again only if Hadoop took the job
    (a job id) into an output folder that did not exist before: a folder that existed
    (Hadoop refuses it) is never removed. (Hadoop's part is a recorded stand-in here;
    tests/test_hadoop.py runs the real re-runs on the cluster.)"""
    from mrjob.hadoop import HadoopJobRunner
    calls, removed = [], []

    class FS:
        def __init__(self, present):
            self.present = present

        def exists(self, path):
            return path in self.present

        def du(self, path):
            return 10

        def rm(self, path):
            removed.append(path)

    def hadoop_jar(self, args, env, record_callback):
        calls.append(list(args))
        self._fs.present.add('hdfs:///out')          # the failed attempt made the folder
        return (1 if len(calls) == 1 else 0), ({'job_id': 'job_1'} if self.submitted else {})
    monkeypatch.setattr(HadoopJobRunner, '_run_hadoop', hadoop_jar)
    args = ['-D', hadoop.HadoopRunner.UBER_ON, '-D', 'mapreduce.job.ubertask.maxbytes=100',
            '-input', 'hdfs:///in', '-output', 'hdfs:///out']

    def run(present, submitted=True):
        calls.clear()
        removed.clear()
        runner = hadoop.HadoopRunner.__new__(hadoop.HadoopRunner)
        runner._fs, runner.submitted = FS(set(present)), submitted
        return runner._run_hadoop(args, {}, None)[0]
    assert run([]) == 0 and len(calls) == 2 and removed == ['hdfs:///out']
    assert hadoop.HadoopRunner.UBER_OFF in calls[1] and hadoop.HadoopRunner.UBER_ON not in calls[1]
    assert run(['hdfs:///out']) == 1 and len(calls) == 1 and not removed
    assert run([], submitted=False) == 1 and len(calls) == 1 and not removed


def test_step_range_is_checked(tmp_path):
    from jobs.merge import MRMerge
    path = conf_file(tmp_path)
    assert MRMerge(['--crawl-conf', path, '--step-range', '1:'])._step_range() == (1, 7)
    assert len(MRMerge(['--crawl-conf', path, '--step-range', '0:1'])._steps_desc()) == 1
    for bad in ('1', '3:2', '0:8', 'a:', '-1:'):
        with pytest.raises(ValueError, match='step-range'):
            MRMerge(['--crawl-conf', path, '--step-range', bad])._step_range()
