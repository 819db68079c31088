"""A later build merges only the pages its change affects (jobs.lib.affected,
drivers/later/affected.py), and the result is the merge of the whole crawl."""
import pytest
import io
import json
import os

import orjson

from drivers.fixtures.site import html_page, link_list, near_duplicate_page
from drivers.crawl import Crawl
from drivers.later.affected import ROW_SCHEMA, Closure, read_rows
from jobs.lib import affected as A, counters as C, simhash
from tests.helpers import crawl_site, read_records, test_conf
from tests.helpers import run_job
from drivers.runtime.launch import make_runner

pytestmark = pytest.mark.unit

TOTALS = (C.MERGED_PAGES, C.EXACT_DUPLICATES, C.NEAR_DUPLICATES, C.CANONICAL_DUPLICATES)


def _lines(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        if name.startswith('part-'):
            with open(os.path.join(folder, name)) as f:
                out += [json.loads(line) for line in f if line.strip()]
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def _check_equals_a_full_merge(out, conf, tmp_path, tag):
    """merge_map/, the merge's totals and merge_keys/ of *out*'s last build (an
    affected merge) are those of MRMerge over every page of current/."""
    from jobs.merge import MRMerge
    step = json.load(open(os.path.join(out, 'steps', 'merge.json')))['counters']['merge']
    current = read_records(os.path.join(out, 'current'))
    assert 0 < step[C.MERGE_AFFECTED] < len(current)
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(conf, f)
    keys = tmp_path / ('keys-' + tag)
    full, counters = run_job(MRMerge, conf_file, current, '--keys-dir', str(keys))
    assert _lines(os.path.join(out, 'merge_map')) == sorted(
        full, key=lambda r: json.dumps(r, sort_keys=True))
    assert {k: step.get(k, 0) for k in TOTALS} == {
        k: counters['merge'].get(k, 0) for k in TOTALS}
    assert _lines(os.path.join(out, 'merge_keys')) == _lines(str(keys))
    _check_equals_whole_anchors(out, conf_file, current)
    _check_equals_a_full_index(out, conf_file, current, tmp_path / ('index-' + tag))
    return {r['url']: r for r in full}


def _dataset(folder, key):
    import pyarrow.dataset as ds
    rows = ds.dataset(str(folder), format='parquet', partitioning='hive').to_table()
    return sorted(rows.to_pylist(), key=lambda r: tuple(str(r[k]) for k in key))


def _check_equals_a_full_index(out, conf_file, current, tmp):
    """index/ and hosts/ of *out*'s last build (the last index, less the rows MRCurrent
    made anew, with the folds that changed) are what MRIndexRows makes of every URL."""
    from drivers.runtime import fs
    from drivers.later.index import rows_to_parquet
    from jobs.index_rows import MRIndexRows
    step = json.load(open(os.path.join(out, 'steps', 'index.json')))
    n = step['counters']['index']
    assert n[C.INDEX_ROWS_MADE] > 0 and n[C.INDEX_ROWS_KEPT] > 0, n
    assert not os.path.exists(os.path.join(out, 'steps', 'indexrows.json'))
    rows, counters = run_job(MRIndexRows, conf_file, current + read_records(
        os.path.join(out, 'merge_map')))
    os.makedirs(tmp / 'rows')
    with open(tmp / 'rows' / 'part-00000', 'wb') as f:
        f.writelines(orjson.dumps(r) + b'\n' for r in rows)
    rows_to_parquet(fs.LocalFS(), str(tmp / 'rows'), str(tmp / 'index'), str(tmp / 'hosts'))
    assert _dataset(os.path.join(out, 'index'), ['url']) == _dataset(tmp / 'index', ['url'])
    made = _dataset(os.path.join(out, 'hosts'), ['layer', 'host'])
    full = _dataset(tmp / 'hosts', ['layer', 'host'])
    for r in made + full:      # summed in another order
        r['elapsed'] = round(r['elapsed'], 2)
    assert made == full
    for k in (C.INDEX_ROWS, C.INDEX_DUPLICATE_ROWS, C.INDEX_WARC_ROWS, C.INDEX_HOST_LAYERS):
        assert n.get(k, 0) == counters['index'].get(k, 0), k


def _check_equals_whole_anchors(out, conf_file, current):
    """anchors/ of *out*'s last build (made for the affected URLs only) is what
    MRAnchors writes from every page's links and merge_map/."""
    from jobs.anchors import MRAnchors
    step = json.load(open(os.path.join(out, 'steps', 'anchors.json')))['counters']['merge']
    whole, _ = run_job(MRAnchors, conf_file, current + read_records(
        os.path.join(out, 'merge_map')))
    # Made for the affected URLs, the rest kept from the last build.
    assert step[C.ANCHORS_AFFECTED] > 0 and step[C.ANCHORS_KEPT] > 0
    assert _lines(os.path.join(out, 'anchors')) == sorted(
        whole, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.mark.crawl
def test_a_refresh_merges_its_affected_groups_only_and_equals_a_full_merge(site, tmp_path):
    """Three cycles of the fixture site (near duplicates, a copy, a redirect, a
    rel=canonical page): a third near duplicate appears, one leaves, the copy
    changes, the printable page names another canonical; then it all comes back. Each
    later build merges the affected set only, and its merge_map/ equals a full merge."""
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=2)
    first = {r['url']: r for r in read_records(os.path.join(out, 'merge_map'))}
    near1, near1b = site.url('/near1.html'), site.url('/near1b.html')
    assert near1b in first[near1]['near_duplicates']
    o = site.overrides
    # A new link to /c.html, which /redirect (linked from the home page) ends at.
    o['/a.html'] = html_page('Page A (depth 1)', link_list(
        '/a/1.html', '/', '/near1.html', '/near1b.html', '/near1c.html', '/a-print.html',
        '/c.html'))
    o['/near1c.html'] = near_duplicate_page('Wednesday 2 December 2026', '0c19d4e7b2')
    o['/near1b.html'] = html_page('Rewritten', '<p>%s</p>' % ' '.join(
        'word%d' % i for i in range(80)))
    o['/dup.html'] = html_page('No longer a copy', '<p>Another page now.</p>')
    o['/a-print.html'] = html_page('Page A, printable', '<p>Now printable B.</p>',
                               head='<link rel="canonical" href="/b.html">')
    crawl_site(site, tmp_path, conf, depth=2)
    second = _check_equals_a_full_merge(out, conf, tmp_path, '2')
    assert site.url('/near1c.html') in second[near1]['near_duplicates']
    assert near1b in second and site.url('/dup.html') in second
    assert site.url('/a-print.html') in second[site.url('/b.html')]['canonical_duplicates']
    for path in ('/near1b.html', '/dup.html', '/a-print.html'):
        del o[path]
    crawl_site(site, tmp_path, conf, depth=2)
    third = _check_equals_a_full_merge(out, conf, tmp_path, '3')
    assert {near1b, site.url('/near1c.html')} <= set(third[near1]['near_duplicates'])
    assert site.url('/dup.html') not in third
    # Keys made with other merge settings are not used: this build merges every page.
    conf4 = test_conf('politeness.delay=0.02', 'recrawl.interval=0', 'merge.min_words=40')
    o['/near1b.html'] = near_duplicate_page('Thursday 3 December 2026', '77aa01d2c3')
    crawl_site(site, tmp_path, conf4, depth=2)
    step = json.load(open(os.path.join(out, 'steps', 'merge.json')))['counters']['merge']
    assert C.MERGE_AFFECTED not in step and step[C.MERGED_PAGES] == len(
        read_records(os.path.join(out, 'merge_map')))
    # After a full merge the anchors are made in full too.
    step = json.load(open(os.path.join(out, 'steps', 'anchors.json')))['counters']['merge']
    assert C.ANCHORS_AFFECTED not in step and step[C.ANCHOR_TARGETS] > 0
    meta = json.load(open(os.path.join(out, 'merge_keys', '_meta.json')))
    assert meta['settings']['min_words'] == 40
    # Key rows past merge.affected_max_bytes are not read: every page is merged.
    o['/near1b.html'] = near_duplicate_page('Friday 4 December 2026', '18bb7ce0f1')
    lines = []
    crawl = Crawl(out, test_conf('politeness.delay=0.02', 'recrawl.interval=0',
                                 'merge.min_words=40', 'merge.affected_max_bytes=100'),
                  runner='inline', depth=2, progress=lines.append)
    crawl.run(os.path.join(str(tmp_path), 'seeds.txt'))
    step = json.load(open(os.path.join(out, 'steps', 'merge.json')))['counters']['merge']
    assert C.MERGE_AFFECTED not in step
    assert any('over merge.affected_max_bytes (100)' in m for m in lines), lines


def _row(url, fp=None, digest=None, final=None, canonical=None):
    rec = {'kind': 'page', 'url': url, 'status': 'fetched', 'digest': digest or url,
           'final_url': final, 'canonical': canonical}
    return A.row({k: v for k, v in rec.items() if v is not None},
                 fp and simhash.to_hex(fp), 3)


def _table(rows):
    return read_rows(b'\n'.join(orjson.dumps(r) for r in rows))


def test_the_closure_follows_verified_ties_to_a_fixed_point():
    """A chain of near duplicates (each within 3 bits of the next, not of the one after)
    is closed over; a page sharing only a band bucket, a far page and another group are
    not; a digest, a final URL and a rel=canonical tie. A changed URL's old and new rows
    both tie."""
    a, far = 0x0123456789abcdef, 0x0123456789abcdef ^ 0xffff0000ffff0000
    rows = [_row('http://x/a', a), _row('http://x/b', a ^ 0b111),
            _row('http://x/c', a ^ 0b111111),            # 3 bits from b, 6 from a
            _row('http://x/band', a ^ 0xf0f0),          # shares a band with a, 8 bits off
            _row('http://x/far', far), _row('http://x/copy', digest='D'),
            _row('http://x/orig', digest='D'), _row('http://x/r', final='http://x/t'),
            _row('http://x/t'), _row('http://x/print', canonical='http://x/main'),
            _row('http://x/main'), _row('http://x/alone')]
    old = _table(rows)
    new = _table([_row('http://x/copy', digest='E'), _row('http://x/alone', far ^ 1)])

    def close(changed, new_table=None, cap=200):
        return Closure(old, new_table if new_table is not None else _table([]),
                         set(changed), 3, cap)
    assert close(['http://x/a']).urls == {'http://x/a', 'http://x/b', 'http://x/c'}
    assert close(['http://x/copy']).urls == {'http://x/copy', 'http://x/orig'}
    assert close(['http://x/t']).urls == {'http://x/t', 'http://x/r'}
    assert close(['http://x/main']).urls == {'http://x/main', 'http://x/print'}
    # The new rows: copy's new digest ties nothing; alone is now near far.
    both = close(['http://x/copy', 'http://x/alone'], new)
    assert both.urls == {'http://x/copy', 'http://x/orig', 'http://x/alone', 'http://x/far'}
    assert both.overflow is None
    assert sorted(both.url[i] for i in both.live_rows()) == sorted(
        [r['url'] for r in rows if r['url'] not in ('http://x/copy', 'http://x/alone')] +
        ['http://x/copy', 'http://x/alone'])
    # A band bucket of the set holding more pages than merge.max_bucket_pages.
    assert close(['http://x/a'], cap=2).overflow.startswith('b:')
    assert close(['http://x/a'], cap=4).overflow is None


def test_exact_duplicates_count_one_summary_per_final_url():
    recs = [{'kind': 'page', 'url': u, 'status': 'fetched', 'digest': d, 'final_url': f,
             'fetch_time': t}
            for u, d, f, t in (('http://x/1', 'D', None, '1'), ('http://x/2', 'D', None, '1'),
                               ('http://x/3', 'D', 'http://x/1', '2'),
                               ('http://x/4', 'E', None, '1'))]
    assert A.exact_duplicates(recs) == 1
    assert A.exact_duplicates(recs + [{'kind': 'page', 'url': 'http://x/5', 'status':
                                       'fetched', 'digest': 'E', 'resource_of': 'x'}]) == 1
    assert ROW_SCHEMA.names == ['url', 'keys', 'simhash']


@pytest.mark.crawl
def test_an_affected_merge_stopped_before_its_merge_map_resumes_to_the_same(
        site, tmp_path, monkeypatch):
    """The run stops once merge_keys/ is written, before merge_map/: the next run merges
    the affected set again from the kept last build and gets the full merge's map."""
    import pytest
    from drivers.later import affected
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=2)
    site.overrides['/near1c.html'] = near_duplicate_page('Wednesday 2 December 2026', '0c19d4e7b2')
    site.overrides['/a.html'] = html_page('Page A (depth 1)', link_list(
        '/a/1.html', '/', '/near1.html', '/near1b.html', '/near1c.html'))
    write = affected.write_lines

    def stop_at_the_map(c, folder, lines):
        if folder.endswith('merge_map'):
            raise RuntimeError('stopped before merge_map/')
        return write(c, folder, lines)
    monkeypatch.setattr(affected, 'write_lines', stop_at_the_map)
    with pytest.raises(RuntimeError, match='stopped before merge_map'):
        crawl_site(site, tmp_path, conf, depth=2)
    assert os.path.exists(os.path.join(out, 'merge_keys'))
    assert not os.path.exists(os.path.join(out, 'merge_map'))
    monkeypatch.setattr(affected, 'write_lines', write)
    crawl_site(site, tmp_path, conf, depth=2)
    second = _check_equals_a_full_merge(out, conf, tmp_path, 'resumed')
    assert site.url('/near1c.html') in second[site.url('/near1.html')]['near_duplicates']
    assert not any(n.startswith('prev_merge') for n in os.listdir(out))


def test_the_anchors_closure_takes_every_url_that_ends_at_a_member():
    """drivers/affected_anchors.closure: a changed page P links to C; R redirects to C,
    so the links to R are inverted too; P's new final URL F redirects on to G, which
    becomes a member; a redirect to a URL nothing touches stays out."""
    from drivers.later.affected_anchors import closure, member_of
    rows = [{'url': 'P', 'finals': ['F', 'P'], 'targets': ['C']},
            {'url': 'P', 'final': 'F'}, {'url': 'F', 'final': 'G'},
            {'url': 'R', 'final': 'C'}, {'url': 'S', 'final': 'T'}]
    targets, members = closure(['M'], rows)
    assert members == {'M', 'P', 'F', 'C', 'G'}
    assert targets == {'M', 'P', 'F', 'C', 'G', 'R'}
    assert member_of(orjson.dumps({'kind': 'anchors', 'member': 'a"b', 'url': 'x',
                                   'anchors': []})) == orjson.dumps('a"b')[1:-1]
    assert member_of(b'{"kind":"anchors","url":"x","anchors":[]}') is None


@pytest.mark.crawl
def test_a_delta_join_of_the_affected_urls_equals_a_full_join(site, tmp_path):
    """The same two cycles into two folders, the second build a delta (its join of the
    URLs the change affects only, the other pages' signatures kept) or a full join
    (merge.compact_ratio=0): the same pages, documents and delta."""
    from jobs.lib.deltas import signature
    from tests.helpers import current_merged
    confs = {mode: test_conf('politeness.delay=0.02', 'recrawl.interval=0',
                             'merge.compact_ratio=' + ratio)
             for mode, ratio in (('delta', '0.5'), ('full', '0'))}
    for mode in confs:
        (tmp_path / mode).mkdir()
    outs = {mode: crawl_site(site, tmp_path / mode, conf, depth=2)[0]
            for mode, conf in confs.items()}
    site.overrides['/near1c.html'] = near_duplicate_page('Wednesday 2 December 2026', '0c19d4e7b2')
    site.overrides['/a.html'] = html_page('Page A (depth 1)', link_list(
        '/a/1.html', '/', '/near1.html', '/near1b.html', '/near1c.html'))
    for mode, conf in confs.items():
        crawl_site(site, tmp_path / mode, conf, depth=2)

    def delta(out):
        return {r['url']: signature(r) if r['kind'] == 'merged' else r['reason']
                for r in read_records(os.path.join(out, 'delta', '002', 'records'))}
    views = {mode: {u: signature(r) for u, r in current_merged(out).items()}
             for mode, out in outs.items()}
    assert views['delta'] == views['full'] and delta(outs['delta']) == delta(outs['full'])
    # /near1c.html, new, folds into /near1.html; /a.html links to it.
    assert {site.url('/near1.html'), site.url('/a.html')} <= set(delta(outs['delta']))
    join = json.load(open(os.path.join(outs['delta'], 'steps', 'mergejoin.json')))
    join = join['counters']['merge_join']
    assert join[C.JOIN_AFFECTED] > 0, join
    assert join[C.JOIN_SIGNATURES_KEPT] > 0
    sigs = {r['url'] for r in read_records(os.path.join(outs['delta'], 'signatures'))
            if r['kind'] == 'signature'}
    assert sigs == set(views['delta'])


@pytest.mark.crawl
def test_anchors_of_an_earlier_version_are_inverted_again_in_full(site, tmp_path):
    """anchors/ records without a member (an earlier version's) cannot be spliced: the
    next build says so and inverts every link."""
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=2)
    folder = os.path.join(out, 'anchors')
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        recs = [json.loads(line) for line in open(path) if line.strip()]
        with open(path, 'w') as f:
            f.writelines(json.dumps({k: v for k, v in r.items() if k != 'member'}) + '\n'
                         for r in recs)
    site.overrides['/near1c.html'] = near_duplicate_page('Wednesday 2 December 2026', '0c19d4e7b2')
    lines = []
    Crawl(out, conf, runner='inline', depth=2, progress=lines.append).run(
        os.path.join(str(tmp_path), 'seeds.txt'))
    assert any('a record of an earlier version' in m for m in lines), lines
    step = json.load(open(os.path.join(out, 'steps', 'anchors.json')))['counters']['merge']
    assert C.ANCHORS_AFFECTED not in step and step[C.ANCHOR_TARGETS] > 0
    assert all('member' in r for r in read_records(folder))
    assert not os.path.exists(os.path.join(out, 'prev_anchors'))


@pytest.mark.crawl
def test_a_page_whose_group_changes_without_it_gets_its_new_fold_in_the_index(
        site, tmp_path):
    """/near1b.html, folded into /near1.html, is not fetched anew with another text:
    /near1.html is. Its index row, kept from the last build, loses its duplicate_of,
    as in an index made of every URL."""
    import pyarrow.dataset as ds
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=2)
    near1, near1b = site.url('/near1.html'), site.url('/near1b.html')

    def fold(url):
        rows = ds.dataset(os.path.join(out, 'index'), format='parquet',
                          partitioning='hive').to_table().to_pylist()
        return [r['duplicate_of'] for r in rows if r['url'] == url]
    assert fold(near1b) == [near1]
    site.overrides['/near1.html'] = html_page('Rewritten', '<p>%s</p>' % ' '.join(
        'other%d' % i for i in range(80)))
    crawl_site(site, tmp_path, conf, depth=2)
    _check_equals_a_full_merge(out, conf, tmp_path, '2')
    assert fold(near1b) == [None]


def test_an_index_row_made_anew_keeps_the_fold_of_its_url_s_earlier_rows(tmp_path):
    """The first cycle's index has a row per fetch: /u was deferred in layer 0, then
    fetched in layer 1 and folded into /x. MRCurrent makes its row anew (it had two
    fetches), outside the affected merge's folds: the row keeps /x. /v's fold changed
    (the folds name it), /w is new and folded into /x."""
    import pyarrow.dataset as ds
    from types import SimpleNamespace
    from drivers.later import affected_index
    from drivers.runtime import fs
    from drivers.later.index import rows_to_parquet
    from jobs.index_rows import index_row
    base = 'http://127.0.0.1:1/'
    x, u, v, w = (base + p for p in ('x', 'u', 'v', 'w'))

    def row(url, layer, status='fetched', dup=None):
        return dict(index_row({'url': url, 'layer': layer, 'status': status, 'length': 10,
                               'elapsed': 0.5, 'reason': None if status == 'fetched'
                               else 'time_budget'}), duplicate_of=dup)

    def write(folder, rows):
        os.makedirs(folder)
        with open(os.path.join(folder, 'part-00000'), 'wb') as f:
            f.writelines(orjson.dumps(r) + b'\n' for r in rows)
    root = str(tmp_path)
    write(os.path.join(root, 'old_rows'), [row(u, 0, 'deferred'), row(u, 1, dup=x),
                                           row(x, 0), row(v, 0, dup=x)])
    rows_to_parquet(fs.LocalFS(), os.path.join(root, 'old_rows'),
                    os.path.join(root, 'prev_index'), os.path.join(root, 'prev_hosts'))
    write(os.path.join(root, 'tmp', 'index_rows_side'), [row(u, 1), row(w, 2)])
    write(os.path.join(root, 'tmp', 'index_folds'), [
        {'url': v, 'duplicate_of': None}, {'url': w, 'duplicate_of': x}])
    said = []
    current = {'counters': {'current': {C.CURRENT_PAGES: 4}}}
    c = SimpleNamespace(fs=fs.LocalFS(), path=lambda *p: os.path.join(root, *p),
                        conf={'merge': {'affected_max_bytes': 1 << 20}},
                        progress=said.append,
                        report=SimpleNamespace(load_step=lambda name: current))
    # An index that does not match MRCurrent's URLs is made in full instead.
    current['counters']['current'][C.CURRENT_PAGES] = 5
    assert affected_index.build(c, c.path('index'), c.path('hosts')) is None
    assert said == ['index: 4 row(s) for the 5 URL(s) of current/: indexing every URL']
    assert not os.path.exists(c.path('prev_index'))
    rows_to_parquet(fs.LocalFS(), os.path.join(root, 'old_rows'),
                    os.path.join(root, 'prev_index'), os.path.join(root, 'prev_hosts'))
    write(os.path.join(root, 'tmp', 'index_rows_side'), [row(u, 1), row(w, 2)])
    write(os.path.join(root, 'tmp', 'index_folds'), [
        {'url': v, 'duplicate_of': None}, {'url': w, 'duplicate_of': x}])
    current['counters']['current'][C.CURRENT_PAGES] = 4
    counts = affected_index.build(c, c.path('index'), c.path('hosts'))
    rows = ds.dataset(c.path('index'), format='parquet', partitioning='hive').to_table()
    assert sorted((r['url'], r['layer'], r['duplicate_of']) for r in rows.to_pylist()) == [
        (u, 1, x), (v, 0, None), (w, 2, x), (x, 0, None)]
    assert counts['counters'][C.INDEX_ROWS_MADE] == 2
    assert counts['counters'][C.INDEX_DUPLICATE_ROWS] == 2
    hosts = ds.dataset(c.path('hosts'), format='parquet', partitioning='hive').to_table()
    assert sorted((h['layer'], h['urls'], h['fetched'], h['deferred'], h['bytes'])
                  for h in hosts.to_pylist()) == [(0, 2, 2, 0, 20), (1, 1, 1, 0, 10),
                                                  (2, 1, 1, 0, 10)]
    assert not os.path.exists(c.path('prev_index'))


@pytest.mark.job
def test_mrcurrent_names_the_urls_whose_index_row_is_made_anew(tmp_path):
    """--rows-dir: the index row of each URL whose current fetch is newer than --since,
    or that had several fetches up to it; not of one that answered 304 since."""
    from jobs.current import MRCurrent
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(test_conf(), f)
    base = 'http://127.0.0.1:1/'

    def page(path, layer, status='fetched', t='2026-12-01T00:00:0%dZ'):
        return {'kind': 'page', 'url': base + path, 'layer': layer, 'status': status,
                'fetch_time': t % layer, 'digest': 'sha1:' + path, 'links': []}
    records = [page('u', 0, 'deferred'), page('u', 1), page('u', 2, 'not_modified'),
               page('v', 0), page('v', 2, 'not_modified'), page('w', 2)]
    rows_dir = tmp_path / 'rows'
    current, counters = run_job(MRCurrent, conf_file, records, '--since', '1',
                                '--rows-dir', str(rows_dir))
    assert len(current) == 3 and counters['current'][C.CURRENT_NEW] == 1
    made = {(r['url'][len(base):], r['layer'], r['status']) for r in _lines(str(rows_dir))}
    assert made == {('u', 1, 'fetched'), ('w', 2, 'fetched')}


def test_line_keys_reads_a_joins_keys_from_the_line_or_says_to_parse_it():
    from jobs.lib.records import line_keys
    base = 'http://127.0.0.1:1/'
    page = {'kind': 'page', 'url': base + 'a', 'status': 'fetched', 'final_url': base + 'b',
            'title': 'say "final_url": no', 'redirects': [{'url': base + 'a'}]}
    assert line_keys(orjson.dumps(page)) == {base + 'a', base + 'b'}
    assert line_keys(orjson.dumps(dict(page, final_url=None))) == {base + 'a'}
    assert line_keys(orjson.dumps(dict(page, final_url=''))) == {base + 'a'}
    assert line_keys(orjson.dumps(dict(page, url=base + 'q"x'))) is None     # an escape
    assert line_keys(orjson.dumps(dict(page, final_url=base + 'caf\u00e9'))) == {
        base + 'a', base + 'caf\u00e9'}
    nested = dict(page, resources=[{'url': base + 'r', 'final_url': base + 's'}])
    assert line_keys(orjson.dumps(nested)) is None          # two final_url keys
    del page['final_url']
    assert line_keys(orjson.dumps(page)) is None
    anchors = {'kind': 'anchors', 'member': base + 'm', 'url': base + 'l', 'anchors': []}
    assert line_keys(orjson.dumps(anchors)) == {base + 'l'}
    # An escaped member cannot hide the url's key; an escape in the url is parsed.
    assert line_keys(orjson.dumps(dict(anchors, member=base + '","url":"x\\'))) == {
        base + 'l'}
    assert line_keys(orjson.dumps(dict(anchors, url=base + '\\'))) is None
    for kind in ('signature', 'stored'):
        assert line_keys(orjson.dumps({'kind': kind, 'url': base + 'a', 'build': '001'})) \
            == {base + 'a'}
        assert line_keys(orjson.dumps({'kind': kind, 'url': base + 'a\\'})) is None
    assert line_keys(orjson.dumps({'kind': 'merged', 'url': base + 'a'})) is None
    assert line_keys(b'{"kind":"page","url":"' + base.encode()) is None      # cut short


@pytest.mark.job
def test_mrcurrent_passes_each_current_record_on_as_it_was_read(tmp_path):
    """A record without a body leaves MRCurrent as the bytes it came in as; one with a
    body is written again without it; a page line cut short is counted, not fatal."""
    from jobs.current import MRCurrent
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(test_conf(), f)
    base = 'http://127.0.0.1:1/'
    meta = {'kind': 'page', 'url': base + 'a', 'layer': 1, 'status': 'fetched',
            'fetch_time': '2026-12-01T00:00:01Z', 'title': 'caf\u00e9 \t "x"', 'links': []}
    older = dict(meta, layer=0, fetch_time='2026-12-01T00:00:00Z')
    bodied = dict(meta, url=base + 'b', body='<p>x</p>', raw_body='PHA+')
    job = MRCurrent(['-r', 'inline', '--crawl-conf', conf_file])
    lines = [orjson.dumps(r) for r in (older, meta, bodied)] + [
        b'{"kind":"page","url":"' + base.encode() + b'c","status":']
    job.sandbox(stdin=io.BytesIO(b'\n'.join(lines) + b'\n'))
    with make_runner(job) as runner:
        runner.run()
        raw = b"".join(runner.cat_output())
        out = sorted(raw.splitlines())
        counters = C.merge_steps(runner.counters())
    assert out == sorted([orjson.dumps(meta), orjson.dumps(
        {k: v for k, v in bodied.items() if k not in ('body', 'raw_body')})])
    assert counters['current'][C.MALFORMED_RECORD] == 1
    assert counters['current'][C.CURRENT_PAGES] == 2


@pytest.mark.job
def test_mrcurrent_drops_a_304_over_a_page_as_it_reads_it(tmp_path):
    """A refresh's 304s are most of its fetches: one answered over a page the crawl
    holds (the crawl database's prev: fetched) leaves MRCurrent's mapper unshuffled,
    counted as read and superseded; the current fetches and counters are those of a
    run that shuffles it. A 304 over anything else is shuffled and judged as before."""
    from jobs.current import MRCurrent
    from jobs.lib.records import not_modified_over_page
    from tests.helpers import FETCHED_BASE as base, fetched
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(test_conf(), f)
    page_a = fetched('a', 1, 'fetched', http_status=200, digest='sha1:a')
    over_a = fetched('a', 2, 'not_modified', 'fetched', reason='http_304', http_status=304)
    # b's crawl database record was a failure: its 304 is judged against its fetches.
    failed_b = fetched('b', 1, 'network_error', reason='timeout')
    over_b = fetched('b', 2, 'not_modified', 'failed', reason='http_304', http_status=304)
    # c's 304 in another key order: not recognised, shuffled, superseded as before.
    page_c = fetched('c', 1, 'fetched', http_status=200, digest='sha1:c')
    over_c = dict(reversed(list(fetched('c', 2, 'not_modified', 'fetched',
                                        reason='http_304', http_status=304).items())))
    lines = [orjson.dumps(r) for r in (page_a, over_a, failed_b, over_b, page_c, over_c)]
    assert [not_modified_over_page(line) for line in lines] == [
        False, True, False, False, False, False]
    mapper = MRCurrent(['--crawl-conf', conf_file])
    assert [len(list(mapper.mapper_by_url(None, line))) for line in lines] == [
        1, 0, 1, 1, 1, 1]
    current, counters = run_job(MRCurrent, conf_file, [],
                                raw_lines=[line.decode() for line in lines])
    by_url = {r['url'][len(base):]: r for r in map(orjson.loads, current)}
    assert by_url == {'a': page_a, 'b': over_b, 'c': page_c}
    n = counters['current']
    assert (n[C.CURRENT_PAGES], n[C.CURRENT_READ], n[C.SUPERSEDED]) == (3, 6, 3)
