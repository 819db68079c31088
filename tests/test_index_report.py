"""The Parquet index (OUT/index, OUT/hosts) and the HTML report (OUT/report.html)."""
import base64
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

import orjson
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from drivers.runtime import beside, fs as fslib
from drivers.fixtures.site import FixtureSite
from drivers.later.index import INDEX_SCHEMA, rows_to_parquet
from drivers.reports.html import chart_drawer, collect, main_report
from drivers.reports.charts import charts
from jobs.index_rows import MRIndexRows
from jobs.lib import records as R
from tests.helpers import ROOT, crawl_site, read_records, test_conf
from tests.helpers import run_job

pytestmark = pytest.mark.unit

DELAY = 0.2     # conftest.TEST_SETTINGS


@pytest.fixture(scope='module')
def crawled(tmp_path_factory):
    """The fixture site crawled to depth 1 with the inline runner: (site base URL, OUT)."""
    tmp = tmp_path_factory.mktemp('indexcrawl')
    with FixtureSite() as site:
        out, _ = crawl_site(site, tmp, test_conf(), depth=1)
        yield site.url(''), out


def index_table(out):
    return ds.dataset(os.path.join(out, 'index'), format='parquet',
                      partitioning='hive').to_table()


def test_index_has_one_row_per_url_and_layer_with_duplicates_joined(crawled):
    base, out = crawled
    table = index_table(out)
    assert table.schema.remove(table.schema.get_field_index('layer')) == INDEX_SCHEMA
    rows = table.to_pylist()
    # Every page record (one per in/ URL) of every layer, exactly once.
    docs = [(d['url'], d['layer'], d['status'])
            for layer in ('000', '001') for d in read_records(os.path.join(out, 'out', layer))]
    assert sorted((r['url'], r['layer'], r['status']) for r in rows) == sorted(docs)
    # Counts by status match the per-layer summary.
    report = json.load(open(os.path.join(out, 'report.json')))
    by_status = collections.Counter((r['layer'], r['status']) for r in rows)
    for row in report['layers']:
        for status in R.FETCH_STATUSES:
            assert by_status[(row['layer'], status)] == row[status], status
    assert report['index']['rows'] == len(rows)
    by_url = {r['url'][len(base):]: r for r in rows}
    # /b.html and /dup.html: same content; one is folded into the other.
    pair = {by_url['/b.html']['duplicate_of'], by_url['/dup.html']['duplicate_of']}
    assert pair in ({None, base + '/b.html'}, {None, base + '/dup.html'})
    assert by_url['/redirect']['duplicate_of'] == base + '/c.html'
    assert by_url['/missing']['status'] == R.FETCH_HTTP_ERROR
    assert by_url['/missing']['http_status'] == 404 and by_url['/missing']['duplicate_of'] is None
    home = by_url['/']
    assert home['title'] == 'Fixture home' and home['language'] == 'en'
    assert home['registered_domain'] == '127.0.0.1' and home['host'] == base[len('http://'):]
    assert home['fetch_time'].tzinfo is not None and home['depth'] == 0
    assert home['digest'].startswith('sha1:') and home['length'] > 0
    # WARC is on by default: a row points at a record exactly when its fetch got a
    # response (tests/test_warc.py reads the records at these offsets).
    for r in rows:
        archived = r['status'] in (R.FETCH_FETCHED, R.FETCH_HTTP_ERROR)
        assert (r['warc_filename'] is not None) == archived, r
        assert (r['warc_record_length'] or 0) > 0 or not archived
    # The intermediate JSON rows are gone; the per-host totals add up.
    assert not os.path.exists(os.path.join(out, 'index_rows'))
    hosts = ds.dataset(os.path.join(out, 'hosts'), format='parquet',
                       partitioning='hive').to_table().to_pylist()
    assert sorted((h['layer'], h['urls']) for h in hosts) == [(0, 1), (1, 9)]


def test_index_runs_between_the_merge_jobs(crawled):
    """The index reads every layer's pages (meta/, else out/) right after MRMerge did:
    when it runs in the driver's process, in a child beside MRMergeJoin (which writes
    merged/ and xml/), else before it (on a crawl larger than the page cache, after the
    join it read out/ from disk again). Each step's counters are saved as it ends."""
    _, out = crawled
    ended = {name: os.stat(os.path.join(out, 'steps', name + '.json')).st_mtime_ns
             for name in ('merge', 'indexrows', 'index', 'anchors', 'mergejoin', 'xml')}
    assert min(ended, key=ended.get) == 'merge'
    assert ended['indexrows'] < ended['index']
    assert ended['anchors'] <= ended['mergejoin'] <= ended['xml']
    with open(os.path.join(out, 'steps', 'anchors.json')) as f:
        anchors_seconds = json.load(f)['seconds']
    # Beside: the index was still being built when the merge's next job (MRAnchors,
    # then MRMergeJoin) started. Built here, it would have ended before MRAnchors began.
    # (Not "before MRMergeJoin began": on a loaded machine the index can end while
    # MRAnchors runs.)
    assert ended['index'] > ended['anchors'] - anchors_seconds * 1e9


def index_rows_from(out, folds, tmp_path):
    """MRIndexRows over OUT's out/* and the fold records of OUT/*folds* (merge_map or
    merged): its index_row records, sorted by (layer, url)."""
    conf = tmp_path / ('conf-%s.json' % folds)
    conf.write_text(open(os.path.join(out, 'conf.json')).read())
    records = [r for layer in sorted(os.listdir(os.path.join(out, 'out')))
               for r in read_records(os.path.join(out, 'out', layer))]
    records += read_records(os.path.join(out, folds))
    rows, counters = run_job(MRIndexRows, str(conf), records)
    assert 'index_duplicate_conflict_total' not in counters.get('index', {})
    return sorted((r for r in rows if r['kind'] == 'index_row'),
                  key=lambda r: (r['layer'], r['url']))


@pytest.mark.crawl
def test_duplicate_of_from_merge_map_is_what_merged_gives(crawled, tmp_path):
    """build_index joins duplicate_of from merge_map/ (slim) instead of merged/ (whole
    pages): the same rows, for an exact duplicate and a redirect (the module's crawl),
    near duplicates and a rel=canonical fold (a crawl from /a.html)."""
    base, out = crawled
    slim = index_rows_from(out, 'merge_map', tmp_path)
    assert slim == index_rows_from(out, 'merged', tmp_path)
    folded = {r['url'][len(base):]: r['duplicate_of'] for r in slim if r['duplicate_of']}
    assert folded['/redirect'] == base + '/c.html'
    assert len({'/b.html', '/dup.html'} & set(folded)) == 1
    (tmp_path / 'near').mkdir()
    with FixtureSite() as site:
        out2, _ = crawl_site(site, tmp_path / 'near', test_conf(), depth=1, start='/a.html')
        base2 = site.url('')
    slim = index_rows_from(out2, 'merge_map', tmp_path)
    assert slim == index_rows_from(out2, 'merged', tmp_path)
    # What build_index wrote (from merge_map/) is the same again.
    written = sorted(index_table(out2).to_pylist(), key=lambda r: (r['layer'], r['url']))
    assert [(r['url'], r['duplicate_of']) for r in written] == \
        [(r['url'], r['duplicate_of']) for r in slim]
    folded = {r['url'][len(base2):]: r['duplicate_of'] for r in slim if r['duplicate_of']}
    assert folded['/a-print.html'] == base2 + '/a.html'           # rel=canonical
    near = {'/near1.html', '/near1b.html'}
    assert len(near & set(folded)) == 1                            # one folds into the other
    assert folded[(near & set(folded)).pop()] == base2 + (near - set(folded)).pop()


@pytest.mark.job
def test_index_of_a_crawl_without_merge_map_joins_merged(crawled, tmp_path):
    """A crawl whose merge left merged/ but no merge_map/ (a one-job merge): build_index
    reads merged/ for duplicate_of and writes the same index."""
    from drivers.crawl import Crawl
    from drivers.later.affected_index import build_index
    _, src = crawled
    out = str(tmp_path / 'crawl')
    shutil.copytree(src, out)
    for path in ('index', 'hosts', 'merge_map', 'steps/index.json', 'steps/indexrows.json'):
        fslib.LocalFS().rm(os.path.join(out, path))
    crawl = Crawl(out, json.load(open(os.path.join(out, 'conf.json'))), runner='inline',
                  progress=lambda m: None)
    crawl.prepare()
    build_index(crawl, [os.path.join(out, 'out', layer) for layer in ('000', '001')])
    key = lambda r: (r['layer'], r['url'])   # noqa: E731
    rows = sorted(index_table(out).to_pylist(), key=key)
    assert rows == sorted(index_table(src).to_pylist(), key=key)
    assert sum(1 for r in rows if r['duplicate_of']) == 2      # dup + redirect


def test_index_is_queryable_with_duckdb(crawled):
    duckdb = pytest.importorskip('duckdb')
    _, out = crawled
    glob = os.path.join(out, 'index', '*', '*.parquet')
    got = duckdb.sql("SELECT layer, status, count(*) FROM read_parquet('%s', "
                     "hive_partitioning = true, hive_types = {'layer': INTEGER}) "
                     "GROUP BY ALL ORDER BY ALL" % glob).fetchall()
    assert (1, R.FETCH_ROBOTS_DENIED, 1) in got and (0, R.FETCH_FETCHED, 1) in got


def test_report_html_is_written_with_charts_and_bounds(crawled):
    base, out = crawled
    page = open(os.path.join(out, 'report.html'), encoding='utf-8').read()
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) >= 5
    for section in ('Per layer', 'Slowest hosts', 'Error classes', 'robots.txt denials'):
        assert section in page
    assert base + '/missing' in page and base + '/private/secret.html' in page
    data = collect(out, fslib.LocalFS())
    assert [r['largest_host_urls'] for r in data['rows']] == [1, 9]
    # n URLs of one host: n - 1 delays between them (robots.txt is read in layer 0 only).
    assert [r['bound_seconds'] for r in data['rows']] == pytest.approx([0, 8 * DELAY])
    assert data['rows'][1]['duplicate_rate'] == pytest.approx(2 / 7)   # dup + redirect
    assert data['rows'][1]['fetch_seconds'] >= data['rows'][1]['bound_seconds'] * 0.95
    assert {k for k, _ in data['errors']} == {(R.FETCH_HTTP_ERROR, 'http_404')}
    assert [v['examples'] for _, v in data['robots']] == [[base + '/private/secret.html']]


def test_charts_drawn_beside_the_merge_are_those_drawn_in_the_driver(crawled):
    _, out = crawled
    with open(os.path.join(out, 'report.json')) as f:
        report = json.load(f)
    with open(os.path.join(out, 'conf.json')) as f:
        conf = json.load(f)
    drawn = charts(collect(out, fslib.LocalFS(), report, conf))
    assert set(drawn) >= {'status', 'volume', 'time', 'hosts', 'errors'}
    child = beside.Beside(chart_drawer(out, conf, report['layers']), 'test-charts')
    assert child.result(timeout=60) == drawn
    # The crawl's own page embeds them (it drew them in a child beside the join).
    page = open(os.path.join(out, 'report.html'), encoding='utf-8').read()
    for name in ('status', 'volume', 'time', 'hosts', 'errors'):
        assert base64.b64encode(drawn[name]).decode() in page
    # A child that fails says why; the driver then draws them itself.
    with pytest.raises(beside.Failed, match='AttributeError'):
        beside.Beside(chart_drawer(out, conf, 'not layer rows'), 'test-charts').result(60)


@pytest.mark.crawl
def test_a_lost_child_costs_the_crawl_nothing(tmp_path, monkeypatch):
    """The index and charts child's answer lost (killed, out of memory): the driver
    builds the index and draws the charts itself, and the outputs are the same."""
    def lost(self, timeout=None):
        self._proc.kill()
        raise beside.Failed('killed by the test')
    monkeypatch.setattr(beside.Beside, 'result', lost)
    with FixtureSite() as site:
        out, report = crawl_site(site, tmp_path, test_conf(), depth=1)
    pages = sum(len(read_records(os.path.join(out, 'out', layer)))
                for layer in os.listdir(os.path.join(out, 'out')))
    assert report['index']['rows'] == len(index_table(out)) == pages > 0
    page = open(os.path.join(out, 'report.html'), encoding='utf-8').read()
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) >= 5


def test_a_child_is_forked_only_once_the_driver_s_imports_are_done(tmp_path):
    """A thread of the driver importing a module (the report's libraries) holds its
    import lock; a child forked then would wait on it for ever. beside.preload's
    threads are waited for first, so the child imports the module at once."""
    import importlib
    (tmp_path / 'slow_to_import.py').write_text('import time\ntime.sleep(1.0)\nVALUE = 7\n')
    sys.path.insert(0, str(tmp_path))
    try:
        beside.preload(lambda: importlib.import_module('slow_to_import'))
        time.sleep(0.2)         # the thread is inside the import now
        child = beside.Beside(lambda: importlib.import_module('slow_to_import').VALUE,
                              'test-child')
        assert child.result(timeout=20) == 7
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop('slow_to_import', None)


@pytest.mark.job
def test_the_child_dies_with_a_killed_driver(tmp_path):
    """PR_SET_PDEATHSIG: a crawl killed in its merge leaves no child writing into OUT."""
    script = tmp_path / 'driver.py'
    script.write_text(
        'import sys, time\nsys.path.insert(0, %r)\nfrom drivers.runtime import beside\n'
        'b = beside.Beside(lambda: time.sleep(60), "test-child")\n'
        'print(b._proc.pid, flush=True)\ntime.sleep(60)\n' % ROOT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        os.kill(child, 0)                        # alive while the driver is
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail('the child outlived its killed driver')
    finally:
        proc.kill()


def test_report_survives_missing_files_and_an_empty_layer(crawled, tmp_path, capsys):
    _, src = crawled
    out = str(tmp_path / 'crawl')
    shutil.copytree(src, out)
    for path in ('index', 'hosts', 'report.json', 'steps/optimize-001.json'):
        fslib.LocalFS().rm(os.path.join(out, path))
    # A layer that fetched nothing: its step files hold no counters.
    for step in ('fetch-002', 'optimize-002'):
        with open(os.path.join(out, 'steps', step + '.json'), 'w') as f:
            json.dump({'counters': {}, 'seconds': 0.0}, f)
    target = str(tmp_path / 'r.html')
    assert main_report([out, '--output', target, '--png-dir', str(tmp_path / 'png')]) == 0
    page = open(target, encoding='utf-8').read()
    assert 'no index/' in page and '<td>002</td>' in page
    assert os.path.exists(tmp_path / 'png' / 'status.png')
    assert main_report([str(tmp_path / 'nothing-here')]) == 2
    assert 'no crawl output folder' in capsys.readouterr().err


def test_report_of_an_empty_folder(tmp_path):
    (tmp_path / 'c').mkdir()
    assert main_report([str(tmp_path / 'c')]) == 0
    assert 'No layer has finished yet' in (tmp_path / 'c' / 'report.html').read_text()


def test_rows_to_parquet_buffers_a_bounded_number_of_rows(tmp_path):
    rows_dir = tmp_path / 'rows'
    rows_dir.mkdir()
    recs = [{'kind': 'index_row', 'url': 'http://h%d.example/' % i, 'layer': i % 3,
             'status': 'fetched', 'fetch_time': '2026-11-30T08:00:00Z', 'depth': i % 3,
             'length': i, 'http_status': '200'} for i in range(25)]
    recs.append({'kind': 'host_layer', 'layer': 0, 'host': 'h0.example', 'urls': 9,
                 'elapsed': 1.5, 'bytes': 10, 'statuses': {'fetched': 8, 'deferred': 1},
                 'reasons': {'time_budget': 1}})
    lines = [orjson.dumps(r) for r in recs] + [b'not json', b'{"kind": "other"}']
    (rows_dir / 'part-00000').write_bytes(b'\n'.join(lines) + b'\n')
    counts = rows_to_parquet(fslib.LocalFS(), str(rows_dir), str(tmp_path / 'index'),
                             str(tmp_path / 'hosts'), max_buffered=4)
    assert counts['rows'] == 25 and counts['hosts'] == 1 and counts['bad_lines'] == 2
    assert counts['fast_rows'] == 0     # "200" is no int32 for Arrow: line by line
    assert counts['row_groups'] >= 25 // 4
    f = pq.ParquetFile(str(tmp_path / 'index' / 'layer=001' / 'part-00000.parquet'))
    assert f.metadata.num_row_groups > 1 and f.metadata.num_rows == 8
    t = index_table(str(tmp_path)).to_pylist()
    assert sorted(r['length'] for r in t) == list(range(25))
    assert {r['http_status'] for r in t} == {200}
    hosts = pq.read_table(str(tmp_path / 'hosts' / 'layer=000' / 'part-00000.parquet'))
    assert hosts.to_pylist()[0]['reasons'] == [('time_budget', 1)]
    assert hosts.to_pylist()[0]['deferred'] == 1


def test_rows_parsed_by_arrow_equal_rows_converted_one_by_one(tmp_path):
    recs = [{'kind': 'index_row', 'url': 'http://h%d.example/p\u00e9' % i, 'layer': i % 3,
             'status': 'fetched' if i % 4 else 'failed', 'reason': None if i % 4 else '503',
             'http_status': 200 + i, 'depth': i % 3, 'length': 10 ** 10 + i,
             'elapsed': i / 7, 'attempts': 1, 'title': 'T "%d" \\ <x>' % i,
             'fetch_time': ['2026-11-30T08:00:00Z', '2026-11-30T08:00:00',
                            '2026-11-30T10:00:00.123456+02:00', None][i % 4]}
            for i in range(30)]
    recs[5].pop('layer')          # no layer: layer 0, as the per-line way reads it
    recs[6]['duplicate_of'] = 'http://h0.example/p'
    tables = {}
    for name, dump in (('arrow', orjson.dumps),
                       ('lines', lambda r: json.dumps(r).encode())):   # "kind": spaced
        rows_dir = tmp_path / name / 'rows'
        rows_dir.mkdir(parents=True)
        (rows_dir / 'part-00000').write_bytes(b'\n'.join(dump(r) for r in recs) + b'\n')
        counts = rows_to_parquet(fslib.LocalFS(), str(rows_dir), str(tmp_path / name / 'index'),
                                 str(tmp_path / name / 'hosts'), max_buffered=7)
        assert counts['rows'] == 30 and counts['bad_lines'] == 0
        assert counts['fast_rows'] == (30 if name == 'arrow' else 0)
        tables[name] = index_table(str(tmp_path / name))
    assert tables['arrow'].sort_by('url').equals(tables['lines'].sort_by('url'))
    rows = {r['url']: r for r in tables['arrow'].to_pylist()}
    assert rows['http://h2.example/p\u00e9']['fetch_time'].hour == 8    # +02:00 -> UTC
    assert rows['http://h5.example/p\u00e9']['layer'] == 0


class FakeHdfsClient:
    """The few ``hdfs.InsecureClient`` calls drivers/runtime/hdfs.py streams through."""

    def __init__(self, files):
        self.files = files

    def status(self, path, strict=True):
        return {'length': len(self.files[path])} if path in self.files else None

    def read(self, path, offset=0, length=None, chunk_size=0):
        import contextlib
        import io
        data = self.files[path][offset:None if length is None else offset + length]

        @contextlib.contextmanager
        def cm():
            if chunk_size:
                yield (data[i:i + chunk_size] for i in range(0, len(data), chunk_size))
            else:
                yield io.BytesIO(data)
        return cm()

    def write(self, path, data=None, overwrite=False):
        self.files[path] = data.read()


def test_webhdfs_streams_lines_and_parquet_through_ranged_reads(tmp_path):
    from drivers.runtime.hdfs import WebHDFS
    fs = WebHDFS.__new__(WebHDFS)
    fs.client = FakeHdfsClient({'/rows': b'a\nbb\n' * 400_000 + b'tail'})
    lines = list(fs.iter_lines('hdfs:///rows'))
    assert len(lines) == 800_001 and lines[:2] == [b'a\n', b'bb\n'] and lines[-1] == b'tail'
    import pyarrow as pa
    with fs.open_write_binary('/t.parquet') as f:
        pq.write_table(pa.table({'x': list(range(1000))}), f, row_group_size=100)
    with fs.open_read_binary('/t.parquet') as f:
        got = pq.ParquetFile(f).read(columns=['x'])
    assert got.column('x').to_pylist() == list(range(1000))
