"""Whole-job tests in-process, the way mrjob's own tests run jobs (inline runner)."""
import io
import time
import json

import pytest

from jobs.lib import counters as C
from jobs.merge import MRMerge
from jobs.merge_join import MRMergeJoin
from jobs.optimize import MROptimize
from jobs.parse import MRParse
from jobs.generate import MRGenerate
from drivers.runtime.launch import make_runner
from tests.helpers import ROOT, page, run_job, run_merge, test_conf

pytestmark = pytest.mark.job


@pytest.fixture
def conf_file(tmp_path):
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(test_conf()))
    return str(path)


def test_optimize_is_an_exact_anti_join(conf_file):
    db = [{'kind': 'db', 'url': 'http://h/known', 'status': 'fetched', 'depth': 0,
           'inlinks': 0, 'first_seen': 't0'}]
    pages = [page('http://h/p1', ['http://h/known', 'http://h/new', 'http://h/p2'], depth=1),
             page('http://h/p2', ['http://h/new'], depth=1),
             page('http://h/r', [], depth=1, final_url='http://h/target')]
    out, counters = run_job(MROptimize, conf_file, db + pages,
                            raw_lines=['{not json', '[1,2]'])
    by_url = {r['url']: r for r in out}
    assert len(out) == len(by_url) == 6
    assert by_url['http://h/new']['status'] == 'unfetched'
    assert by_url['http://h/new']['depth'] == 2 and by_url['http://h/new']['inlinks'] == 2
    assert by_url['http://h/known']['inlinks'] == 1
    assert by_url['http://h/p2']['status'] == 'fetched' and by_url['http://h/p2']['depth'] == 1
    assert by_url['http://h/r']['status'] == 'redirected'
    assert by_url['http://h/target']['status'] == 'fetched'
    assert counters['optimize']['new_urls_total'] == 1
    assert counters['optimize']['malformed_record_total'] == 2


def test_optimize_passes_db_lines_nothing_joins_as_they_are(conf_file):
    """A db line as MROptimize writes it (orjson's layout) that no fetch, link or
    resource of the layer joins leaves the job byte for byte; the same records in
    another layout are decoded. Both give the same crawl database."""
    import orjson
    db = [{'kind': 'db', 'url': 'http://h/a', 'status': 'fetched', 'depth': 0,
           'inlinks': 2, 'score': 0.5, 'title': 'tab\there "q"'},
          {'kind': 'db', 'url': 'http://h/b', 'status': 'unfetched', 'depth': 1,
           'inlinks': 1, 'score': 0.25},
          {'kind': 'db', 'url': 'http://h/c', 'status': 'gone', 'depth': 1},   # no score
          {'kind': 'db', 'url': 'http://h/q"x', 'status': 'unfetched', 'depth': 2,
           'inlinks': 0, 'score': 0.0}]
    pages = [page('http://h/p', ['http://h/b', 'http://h/new'], depth=1)]
    fast, fast_counters = run_job(MROptimize, conf_file, pages,
                                  raw_lines=[orjson.dumps(r).decode() for r in db])
    slow, slow_counters = run_job(MROptimize, conf_file, pages, raw_lines=[
        json.dumps(r, sort_keys=True) for r in db])

    def norm(out):
        return sorted(json.dumps(dict(r, first_seen=None), sort_keys=True) for r in out)
    assert norm(fast) == norm(slow) and len(fast) == 6
    assert fast_counters == slow_counters
    by_url = {r['url']: r for r in fast}
    assert by_url['http://h/a'] == db[0]             # passed on as it came
    assert by_url['http://h/b']['inlinks'] == 2      # joined with a link
    assert by_url['http://h/c']['score'] == 0.0      # decoded: it had no score


def test_generate_selects_unfetched_within_depth(conf_file):
    db = [{'kind': 'db', 'url': 'http://h/%d' % d, 'status': s, 'depth': d}
          for d, s in [(1, 'unfetched'), (2, 'unfetched'), (3, 'unfetched'), (1, 'fetched')]]
    out, counters = run_job(MRGenerate, conf_file, db, '--max-depth', '2')
    assert sorted(r['url'] for r in out) == ['http://h/1', 'http://h/2']
    assert counters['generate'] == {'generated_total': 2, 'beyond_depth_total': 1,
                                    'generated_hosts_total': 1}


def test_parse_keeps_every_record_and_filters_links(conf_file):
    html = ('<title>T</title><a href="/x">X</a><a href="mailto:a@b">m</a>'
            '<a href="/y" rel="nofollow">y</a><a href="/x#again">X2</a>')
    docs = [{'kind': 'doc', 'url': 'http://h/', 'status': 'fetched', 'final_url': 'http://h/',
             'body': html, 'headers': {}},
            {'kind': 'doc', 'url': 'http://h/gone', 'status': 'http_error', 'body': None},
            {'kind': 'doc', 'url': 'http://h/nf', 'status': 'fetched', 'final_url': 'http://h/nf',
             'body': '<a href="/z">z</a>', 'headers': {'x-robots-tag': 'nofollow'}}]
    out, counters = run_job(MRParse, conf_file, docs)
    by_url = {r['url']: r for r in out}
    assert len(out) == 3 and all('body' not in r for r in out)
    assert by_url['http://h/']['links'] == [{'url': 'http://h/x', 'text': 'X', 'rel': ''}]
    assert by_url['http://h/nf']['links'] == [] and by_url['http://h/nf']['nofollow']
    assert counters['parse']['link_rejected_scheme_total'] == 1
    assert counters['parse']['link_rejected_nofollow_total'] == 1


def test_merge_folds_exact_duplicates_and_redirects(conf_file):
    pages = [page('http://h/a', digest='D1'), page('https://h/copy', digest='D1'),
             page('http://h/longer-url', digest='D1'),
             page('http://h/r', final_url='http://h/t', digest='D2'),
             page('http://h/t', digest='D2', fetch_time='2026-11-30T00:00:01Z'),
             page('http://h/gone', status='http_error', digest=None),
             page('http://h/hidden', digest='D3', noindex=True)]
    out, counters = run_merge(conf_file, pages)
    by_url = {r['url']: r for r in out}
    assert set(by_url) == {'https://h/copy', 'http://h/t'}   # https first
    assert by_url['https://h/copy']['duplicates'] == ['http://h/a', 'http://h/longer-url']
    assert by_url['http://h/t']['duplicates'] == ['http://h/r']
    assert counters['merge']['exact_duplicates_total'] == 2


def test_the_join_takes_the_fetch_the_merge_chose(conf_file):
    """From a crawl's second cycle on, MRMerge ranks each URL's current fetch
    (current/) while MRMergeJoin reads out/* of every cycle, which also holds fetches
    they replaced: the join takes the page fields of the fetch its map record names,
    not merely the latest page under that final URL."""
    t = '2026-11-30T00:00:0%dZ'
    chosen = page('http://h/t', digest='NOW', fetch_time=t % 1)
    replaced = page('http://h/old', final_url='http://h/t', digest='BEFORE',
                    fetch_time=t % 2)       # /old redirects elsewhere now: not current
    maps, _ = run_job(MRMerge, conf_file, [chosen])
    assert maps[0]['fetch'] == [t % 1, 0, 'http://h/t']
    out, counters = run_job(MRMergeJoin, conf_file, maps + [chosen, replaced])
    assert [r['digest'] for r in out] == ['NOW']
    assert counters['merge_join']['fetches_not_kept_total'] == 1
    # A map record of an earlier version names no fetch: the latest is taken.
    del maps[0]['fetch']
    out, _ = run_job(MRMergeJoin, conf_file, maps + [chosen, replaced])
    assert [r['digest'] for r in out] == ['BEFORE']
    # A fetch out/* does not hold: counted, and the latest is taken.
    maps[0]['fetch'] = [t % 3, 0, 'http://h/t']
    out, counters = run_job(MRMergeJoin, conf_file, maps + [chosen, replaced])
    assert [r['digest'] for r in out] == ['BEFORE']
    assert counters['merge_join']['map_fetch_not_found_total'] == 1


def test_a_job_cut_into_step_ranges_gives_the_same_records(conf_file):
    """--step-range (a Hadoop crawl cuts a multi-step job after its first step): MRMerge
    as steps 0:1 then 1:, the first range's key/value lines the second's input, gives
    the records and counters of the whole job."""
    from tests.helpers import article, flip_words
    text = article(3)
    pages = [page('http://h/a', digest='D1', links=['http://h/b']),
             page('https://h/copy', digest='D1'),
             page('http://h/r', final_url='http://h/t', digest='D2'),
             page('http://h/t', digest='D2', fetch_time='2026-11-30T00:00:01Z'),
             page('http://h/n1', digest='N1', text=text),
             page('http://h/n2', digest='N2', text=flip_words(text, 1))]
    whole, counters = run_job(MRMerge, conf_file, pages)

    def run(args, stdin):
        job = MRMerge(['-r', 'inline', '--crawl-conf', conf_file] + args)
        job.sandbox(stdin=io.BytesIO(stdin))
        with make_runner(job) as runner:
            runner.run()
            return b''.join(runner.cat_output()), runner.counters(), job
    lines = ''.join(json.dumps(p) + '\n' for p in pages).encode()
    first, c1, _ = run(['--step-range', '0:1'], lines)
    assert first and all(b'\t' in line for line in first.splitlines())   # key<TAB>value
    rest, c2, job = run(['--step-range', '1:'], first)
    assert len(job.steps()) == 7 and len(job._steps_desc()) == 6
    cut = [v for _, v in job.parse_output([rest])]
    assert sorted(cut, key=json.dumps) == sorted(whole, key=json.dumps)
    assert C.merge_steps(c1 + c2) == counters
    assert any(m.get('near_duplicates') or m.get('duplicates') for m in whole)


def test_optimize_counts_retries_until_a_success(conf_file):
    db = [{'kind': 'db', 'url': 'http://h/x', 'status': 'unfetched', 'depth': 1}]
    for expected, status in ((1, 'network_error'), (2, 'deferred'), (0, 'fetched')):
        out, _ = run_job(MROptimize, conf_file, db + [page('http://h/x', status=status,
                                                            depth=1)])
        assert out[0]['retries'] == expected, status
        db = out
    assert db[0]['status'] == 'fetched'


def test_inline_runner_reads_input_files_in_place_with_the_local_runners_result(
        conf_file, tmp_path):
    """drivers.runtime.runners.InlineRunner gives each uncompressed input file to one map task as it
    is (no copy): the same records as the local runner, empty files and a gzipped file
    (split by mrjob as before) included, and the inputs untouched."""
    import gzip
    import os
    from jobs.index_rows import MRIndexRows
    from tests.helpers import read_records
    pages = [page('http://h%d/p%d' % (i % 3, i), links=['http://h%d/p%d' % (i % 2, i + 1)])
             for i in range(40)]
    for p in pages:
        p['links'][0]['text'] = 'to ' + p['links'][0]['url']
    plain, mixed = tmp_path / 'plain', tmp_path / 'mixed'
    for folder in (plain, mixed):
        folder.mkdir()
        (folder / 'part-00000').write_text(''.join(json.dumps(p) + '\n' for p in pages[:20]))
        (folder / 'part-00001').write_text('')
        (folder / 'part-00002').write_text(''.join(json.dumps(p) + '\n' for p in pages[20:]))
    with gzip.open(str(mixed / 'part-00002.gz'), 'wt') as f:     # mrjob's own splits
        f.write((mixed / 'part-00002').read_text())
    (mixed / 'part-00002').write_text('')
    for folder in (plain, mixed):
        before = {n: (folder / n).read_bytes() for n in os.listdir(folder)}
        results = {}
        for runner in ('inline', 'local'):
            out = tmp_path / (folder.name + runner)
            job = MRIndexRows(['-r', runner, '--crawl-conf', conf_file, '--output-dir',
                               str(out), str(folder)])
            with make_runner(job) as r:
                r.run()
            results[runner] = sorted(json.dumps(x, sort_keys=True)
                                     for x in read_records(str(out)))
        assert results['inline'] == results['local'] and len(results['inline']) >= 20
        assert {n: (folder / n).read_bytes() for n in os.listdir(folder)} == before


@pytest.mark.unit
def test_line_ranges_cut_at_line_ends_and_keep_keys_together(tmp_path):
    """drivers.runtime.runners.line_ranges, as LocalRunner splits mapper and reducer input:
    the ranges tile the file, every range but the last ends with a newline, the copies
    put the bytes back together, and with a key no key's lines span two ranges
    (random sorted inputs, with and without a final newline, many split sizes)."""
    import itertools
    import random
    from drivers.runtime.runners import _reducer_key, copy_range, line_ranges
    rnd = random.Random(5)
    path, piece = tmp_path / 'f', tmp_path / 'piece'
    for _ in range(150):
        lines = sorted((b'k%03d\t%s\n' % (rnd.randrange(15), b'x' * rnd.randrange(50))
                        for _ in range(rnd.randrange(40))), key=_reducer_key)
        data = b''.join(lines)
        if data and rnd.random() < 0.3:
            data = data[:-1]
        path.write_bytes(data)
        for split_size, key_of in itertools.product((1, 7, 50, 300, 10 ** 6),
                                                    (None, _reducer_key)):
            ranges = line_ranges(str(path), len(data), split_size, key_of)
            assert [a for a, _ in ranges[:1]] == ([0] if data else [])
            assert all(b == c and a < b for (a, b), (c, _) in zip(ranges, ranges[1:]))
            parts = []
            for a, b in ranges:
                copy_range(str(path), str(piece), a, b)
                parts.append(piece.read_bytes())
            assert b''.join(parts) == data
            assert all(p.endswith(b'\n') for p in parts[:-1])
            if key_of:
                keys = [{key_of(line + b'\n') for line in p.splitlines()} for p in parts]
                assert all(not (x & y) for x, y in itertools.combinations(keys, 2))
            elif split_size == 1:
                assert len(parts) == len(data.splitlines())     # a line per range
    # Two keys (the fetch's two bins), whatever their sizes: two ranges for two cores.
    for _ in range(50):
        sizes = rnd.randrange(1, 200), rnd.randrange(1, 200)
        data = b''.join(b'"b%d"\t["h", %d]\n' % (k, i) for k in (0, 1) for i in range(sizes[k]))
        path.write_bytes(data)
        ranges = line_ranges(str(path), len(data), len(data) // 2, _reducer_key)
        assert len(ranges) == 2, (sizes, ranges)
    # Hadoop's split slop: a file up to 1.1 split sizes is one range (no sliver split,
    # no copy of the rest), a longer one is cut.
    data = b''.join(b'line %04d\n' % i for i in range(1000))       # 10,000 bytes
    path.write_bytes(data)
    assert line_ranges(str(path), len(data), 9200) == [(0, 10000)]
    assert line_ranges(str(path), len(data), 9000) == [(0, 9000), (9000, 10000)]


def test_local_runner_splits_give_mrjobs_result(conf_file, tmp_path):
    """drivers.runtime.runners.LocalRunner (byte-range splits, one per core) and mrjob's own
    local runner give the same records and counters, on one big file and on several
    files, with more cores than files (so files are cut and reducer input is split)."""
    from mrjob.local import LocalMRJobRunner
    from jobs.index_rows import MRIndexRows
    from drivers.runtime.runners import LocalRunner
    from tests.helpers import read_records

    pages = [page('http://h%d/p%d' % (i % 7, i),
                  links=['http://h%d/p%d' % (j % 5, (i * j) % 97) for j in range(6)])
             for i in range(300)]
    for p in pages:
        for link in p['links']:
            link['text'] = 'to ' + link['url']
    one, many = tmp_path / 'one', tmp_path / 'many'
    one.mkdir()
    many.mkdir()
    (one / 'part-00000').write_text(''.join(json.dumps(p) + '\n' for p in pages))
    for n in range(4):
        (many / ('part-%05d' % n)).write_text(
            ''.join(json.dumps(p) + '\n' for p in pages[n::4]))
    for folder in (one, many):
        results = {}
        for stock in (False, True):
            out = tmp_path / (folder.name + str(stock))
            job = MRIndexRows(['-r', 'local', '--num-cores', '3', '--crawl-conf', conf_file,
                               '--output-dir', str(out), str(folder)])
            runner = LocalMRJobRunner(**job._runner_kwargs()) if stock else make_runner(job)
            with runner as r:
                assert isinstance(r, LocalRunner) != stock
                r.run()
                counters = r.counters()
            results[stock] = (sorted(json.dumps(x, sort_keys=True)
                                     for x in read_records(str(out))), counters)
        assert results[False] == results[True]
        assert len(results[False][0]) > 50


@pytest.mark.unit
def test_counters_are_summed_in_the_task_and_reported_at_its_end(conf_file, monkeypatch):
    """CrawlJob.count sums in memory: a mapper that counts per record writes one counter
    line per counter name when the task ends (not one per increment), with the right
    totals; with a zero report interval every increment is reported at once."""
    # MRMerge (imported above): its first mapper counts per link
    pages = [page('http://h/p%d' % i, links=['http://h/p%d' % (i + 1), 'http://h/x'])
             for i in range(30)]
    for p in pages:
        for link in p['links']:
            link['text'] = 'anchor'
    data = ''.join(json.dumps(p) + '\n' for p in pages).encode()

    def run_mapper(interval):
        monkeypatch.setattr(MRMerge, 'COUNTER_REPORT_SECONDS', interval)
        job = MRMerge(['--mapper', '--crawl-conf', conf_file])
        stdout, stderr = io.BytesIO(), io.BytesIO()
        job.sandbox(stdin=io.BytesIO(data), stdout=stdout, stderr=stderr)
        job.execute()
        return [line for line in stderr.getvalue().decode().splitlines()
                if line.startswith('reporter:counter:')]

    summed = run_mapper(10.0)
    assert len(summed) == len(set(summed)) and summed       # one line per counter
    each = run_mapper(0.0)
    assert len(each) > 2 * len(summed)                    # a line per increment
    totals = {}
    for line in each:
        name, n = line.rsplit(',', 1)
        totals[name] = totals.get(name, 0) + int(n)
    assert totals == {name: int(n) for name, n in (x.rsplit(',', 1) for x in summed)}


class MRTaskProbe(MRParse):
    """Each map task says which process ran it (for the forked-task test below)."""

    def steps(self):
        from mrjob.step import MRStep
        return [MRStep(mapper=self.mapper_probe, reducer=self.reducer_probe)]

    def mapper_probe(self, _, line):
        import os
        import setproctitle
        from tests.helpers import ROOT  # noqa: F401  (the test package imports here)
        for rec in self.records(line, 'page'):
            if rec['url'].endswith('/die'):
                os.kill(os.getpid(), 9)
            if rec['url'].endswith('/raise'):
                raise ValueError('probe failure')
            yield rec['url'], {'pid': os.getpid(), 'ppid': os.getppid(),
                               'title': setproctitle.getproctitle()}

    def reducer_probe(self, url, values):
        import os
        for v in values:
            yield None, dict(v, url=url, reducer_pid=os.getpid())


def _probe(conf_file, tmp_path, urls):
    from tests.helpers import read_records
    src = tmp_path / 'in'
    src.mkdir(exist_ok=True)
    (src / 'part-00000').write_text(''.join(json.dumps(page(u)) + '\n' for u in urls))
    out = tmp_path / 'out'
    job = MRTaskProbe(['-r', 'local', '--num-cores', '2', '--crawl-conf', conf_file,
                       '--output-dir', str(out), str(src)])
    with make_runner(job) as r:
        r.run()
    return list(read_records(str(out)))


def test_local_runner_forks_each_task_from_the_fork_server(conf_file, tmp_path):
    """Tasks run in children of the fork server (not subprocesses of the driver, not the
    driver itself), one child per task, each titled with its script and role."""
    import os
    recs = _probe(conf_file, tmp_path, ['http://h/%d' % i for i in range(200)])
    assert len(recs) == 200
    mapper_pids = {r['pid'] for r in recs}
    reducer_pids = {r['reducer_pid'] for r in recs}
    assert len(mapper_pids) == 2 and len(reducer_pids) == 2     # one per split
    assert not (mapper_pids & reducer_pids) and os.getpid() not in mapper_pids
    assert {r['ppid'] for r in recs} != {os.getpid()}            # the fork server's
    for r in recs:
        assert r['title'].startswith('mrcrawl-task test_jobs.py --step-num=0 --mapper')


def test_a_finished_jobs_temporary_folder_is_removed_beside_the_driver(conf_file, tmp_path,
                                                                       monkeypatch):
    """A job's temporary folder (its tasks' files and the sorted shuffle) goes to a
    background thread as the job ends (drivers.runtime.tmp_removal), so the driver starts its
    next step at once; wait() returns once it is gone, and a folder that cannot be
    removed (logged) does not stop the ones after it."""
    import os
    import threading
    from drivers.runtime import tmp_removal
    src = tmp_path / 'in'
    src.mkdir()
    (src / 'part-00000').write_text(''.join(json.dumps(page('http://h/%d' % i)) + '\n'
                                            for i in range(20)))
    job = MRTaskProbe(['-r', 'local', '--num-cores', '2', '--crawl-conf', conf_file,
                       '--output-dir', str(tmp_path / 'out'), str(src)])
    gate, remove = threading.Event(), tmp_removal._remove
    monkeypatch.setattr(tmp_removal, '_remove', lambda p: (gate.wait(30), remove(p)))
    tmp_removal.remove_later(str(tmp_path / 'never-made'))
    with make_runner(job) as r:
        r.run()
        tmp = r._get_local_tmp_dir()
    assert os.listdir(tmp)                # the job is done; its folder waits its turn
    gate.set()
    tmp_removal.wait()
    assert not os.path.exists(tmp)
    assert sorted(os.listdir(tmp_path / 'out'))[-1].startswith('part-')


_HELD_FORK_SERVER = """
import time
from drivers.runtime import beside, runners
ctx = runners.task_context()
p = ctx.Process(target=time.sleep, args=(0,))      # starts the fork server
p.start(); p.join()
beside.start(lambda: time.sleep(600), 'held')      # a forked child that never answers
print('exiting', flush=True)
"""


def test_an_exit_does_not_wait_on_a_fork_server_a_forked_child_holds():
    """A child forked from the driver after the fork server started holds a copy of the
    server's "alive" pipe, so the server never sees the driver go: the exit hook that
    waits for the server must end such children first (a CI run once hung there after
    every test had passed)."""
    import subprocess
    import sys
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, '-c', _HELD_FORK_SERVER], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == 'exiting\n'
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize('how, reason', [('raise', 'ValueError: probe failure'),
                                         ('die', 'killed by signal 9')])
def test_a_failed_or_killed_forked_task_fails_the_step(conf_file, tmp_path, how, reason):
    from mrjob.step import StepFailedException
    with pytest.raises(StepFailedException, match=reason):
        _probe(conf_file, tmp_path, ['http://h/%d' % i for i in range(50)] +
               ['http://h/' + how])


@pytest.mark.unit
def test_runners_override_only_what_mrjob_0_7_4_has():
    """mrcrawl's runners (drivers/runtime/runners.py, drivers/runtime/hadoop.py) override
    private members of mrjob's runners. If mrjob renamed one, the override would silently
    never run: every private method they define is either one of mrjob's (found in its
    classes) or one of their own helpers, listed here. mrjob is pinned (setup.cfg) for the same reason."""
    import mrjob
    from drivers.runtime import hadoop
    from drivers.runtime import runners
    own_helpers = {'_fork_tasks', '_mapper_split_size', '_place_split', '_split_dest',
                   '_key_partitions',
                   '_small_job', '_within_uber_limit', '_combined', '_ran_uber'}
    assert mrjob.__version__ == '0.7.4'
    for cls in (runners.LocalRunner, runners.InlineRunner, hadoop.HadoopRunner,
                hadoop.StagedInlineRunner):
        bases = [k for k in cls.__mro__ if k.__module__.startswith('mrjob')]
        ours = {n for k in cls.__mro__ if not k.__module__.startswith('mrjob')
                for n in vars(k) if n.startswith('_') and not n.startswith('__')}
        overrides = ours - own_helpers
        assert overrides, cls
        assert [n for n in sorted(overrides)
                if not any(n in vars(b) for b in bases)] == [], cls


@pytest.mark.unit
def test_instances_of_a_job_share_its_parser_and_parse_their_own_args(conf_file):
    """CrawlJob builds a class's argument parser once: later instances (one per inline
    task) reuse it and still read their own arguments, passthrough and file ones too."""
    from jobs.fetch import MRFetch
    base = ['--crawl-conf', conf_file, '--step-num=1', '--mapper']
    first = MRFetch(base + ['--layer', '2', '--bins', '3'])
    again = MRFetch(base + ['--layer', '4'])
    assert again.arg_parser is first.arg_parser
    assert (first.options.layer, first.options.bins) == (2, 3)
    assert (again.options.layer, again.options.bins) == (4, 0)
    assert again._passthru_arg_dests == first._passthru_arg_dests >= {'layer', 'bins'}
    assert again._file_arg_dests == first._file_arg_dests == {'crawl_conf', 'plan'}
    assert 'configure_args' not in vars(again)      # the class's own method again
    other = MRMerge(base)
    assert other.arg_parser is not first.arg_parser and 'bins' not in vars(other.options)
    with pytest.raises(ValueError):
        MRFetch(base + ['--no-such-option'])
