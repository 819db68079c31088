"""A small layer's crawl database update (OptimizerDriver.update): every map task holds
the URLs the layer's pages name (MROptimize --layer-pages), and the db line of any other
URL leaves the mapper as read; the crawl database is the one a shuffle of all makes."""
import pytest
import json
import os

import orjson

from drivers.fixtures.site import html_page, link_list
from jobs.lib import counters as C
from jobs.optimize import MROptimize
from tests.helpers import crawl_site, read_records, test_conf
from tests.helpers import run_job

pytestmark = pytest.mark.job

BASE = 'http://127.0.0.1:1/'


def db(path, status='fetched', **kw):
    rec = {'kind': 'db', 'url': BASE + path, 'status': status, 'depth': 1,
           'first_seen': '2026-12-01T00:00:00Z', 'last_fetch': '2026-12-01T00:00:00Z',
           'http_status': 200, 'digest': 'sha1:' + path, 'reason': None, 'inlinks': 1,
           'layer': 0, 'score': 0.0}
    rec.update(kw)
    return rec


def page(path, links=(), **kw):
    rec = {'kind': 'page', 'url': BASE + path, 'depth': 1, 'layer': 1, 'status': 'fetched',
           'http_status': 200, 'final_url': BASE + path, 'digest': 'sha1:new-' + path,
           'fetch_time': '2026-12-02T00:00:00Z', 'headers': {},
           'links': [{'url': BASE + u, 'text': u, 'rel': ''} for u in links]}
    rec.update(kw)
    return rec


def test_a_small_layer_passes_the_db_lines_its_pages_do_not_name(tmp_path):
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(test_conf(), f)
    # k: linked (its in-links grow); p, r: fetched now (r redirected to t: t becomes
    # known as fetched); u: unfetched, untouched; q: fetched before, untouched; w: an
    # old record without score, which the join writes again with it.
    crawldb = [db('p', 'unfetched', last_fetch=None, layer=None), db('k'), db('q'),
               db('u', 'unfetched', last_fetch=None, layer=None), db('r', 'unfetched'),
               {k: v for k, v in db('w').items() if k != 'score'}]
    pages = [page('p', links=['k', 'n', 'p']),
             page('r', final_url=BASE + 't', links=['n'])]
    page_lines = [orjson.dumps(p) for p in pages]
    lines = [orjson.dumps(r).decode() for r in crawldb] + [p.decode() for p in page_lines]
    full, full_counters = run_job(MROptimize, conf_file, [], '--layer', '1', raw_lines=lines)
    layer_pages = tmp_path / 'pages.jsonl'
    layer_pages.write_bytes(b'\n'.join(page_lines) + b'\n')
    passed = tmp_path / 'pass'
    made, counters = run_job(MROptimize, conf_file, [], '--layer', '1', '--layer-pages',
                             str(layer_pages), '--pass-dir', str(passed), raw_lines=lines)
    kept = read_records(str(passed))
    # q and u pass as they were read; w too is named by nothing, but is written again.
    assert sorted(r['url'][len(BASE):] for r in kept) == ['q', 'u']
    assert [orjson.loads(line) for line in (passed / os.listdir(passed)[0]).read_bytes()
            .splitlines()] == kept

    def view(records):      # first_seen: the clock when a new URL was seen
        return sorted(orjson.dumps({k: v for k, v in r.items() if k != 'first_seen'},
                                   option=orjson.OPT_SORT_KEYS) for r in records)
    assert view(made + kept) == view(full) and len(full) == 8       # + n, t
    assert counters[C.OPTIMIZE].pop(C.DB_UNSHUFFLED) == 2
    assert counters[C.OPTIMIZE] == full_counters[C.OPTIMIZE]
    assert counters[C.OPTIMIZE][C.DB_RECORDS] == 8


def test_the_update_counts_the_unfetched_urls_generate_can_select(tmp_path):
    """--max-depth: unfetched_within_depth_total is every unfetched record written at
    most that deep, those passed unshuffled included (none: OptimizerDriver skips the
    generate)."""
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(test_conf(), f)
    # u: unfetched at depth 1, untouched (passed); d: unfetched at depth 3; n: new,
    # linked from a depth-1 page (depth 2).
    crawldb = [db('p', 'unfetched', last_fetch=None, layer=None), db('q'),
               db('u', 'unfetched', last_fetch=None, layer=None),
               db('d', 'unfetched', depth=3, last_fetch=None, layer=None)]
    pages = [page('p', links=['n'])]
    page_lines = [orjson.dumps(p) for p in pages]
    lines = [orjson.dumps(r).decode() for r in crawldb] + [p.decode() for p in page_lines]
    layer_pages = tmp_path / 'pages.jsonl'
    layer_pages.write_bytes(b'\n'.join(page_lines) + b'\n')
    for depth, within in ((0, []), (1, ['u']), (2, ['n', 'u']), (3, ['d', 'n', 'u'])):
        for passing in (False, True):
            args = ['--layer', '1', '--max-depth', str(depth)]
            if passing:
                passed = tmp_path / ('pass%d' % depth)
                args += ['--layer-pages', str(layer_pages), '--pass-dir', str(passed)]
            made, counters = run_job(MROptimize, conf_file, [], *args, raw_lines=lines)
            if passing:
                assert counters[C.OPTIMIZE][C.DB_UNSHUFFLED] == 3       # q, u and d
                made += read_records(str(passed))
            assert sorted(r['url'][len(BASE):] for r in made if r['status'] == 'unfetched'
                          and r['depth'] <= depth) == within
            assert counters[C.OPTIMIZE].get(C.UNFETCHED_WITHIN_DEPTH, 0) == len(within)


@pytest.mark.crawl
def test_a_layer_with_nothing_left_to_select_is_not_generated(site, tmp_path):
    """A site two links deep crawled at depth 4: the update of layer 1 counts no
    unfetched URL within the depth, so in/002 is made empty without a generate job and
    the crawl stops there. With a host cap of one URL a layer, the URLs held back are
    counted and generated in turn; the generate after the last of them is skipped."""
    site.overrides['/'] = html_page('Home', link_list('/t/a.html', '/t/b.html'))
    for name in ('a', 'b'):
        site.overrides['/t/%s.html' % name] = html_page(name, link_list('/'))
    for cap, generated in ((0, ['001']), (1, ['001', '002'])):
        (tmp_path / ('cap%d' % cap)).mkdir()
        out, report = crawl_site(site, tmp_path / ('cap%d' % cap),
                                 test_conf('filter.max_urls_per_host=%d' % cap, 'fetch.follow_hops=0'), 4)
        steps = os.path.join(out, 'steps')
        made = {}
        for name in sorted(os.listdir(steps)):
            if name.startswith('generate-'):
                with open(os.path.join(steps, name)) as f:
                    made[name[9:12]] = json.load(f)
        assert [n for n, s in made.items() if 'runner' in s] == generated
        last = '%03d' % (len(generated) + 1)
        assert sorted(made) == generated + [last]
        assert made[last] == {'counters': {'generate': {}}, 'seconds': 0.0,
                              'made_by': 'optimize'}
        assert os.listdir(os.path.join(out, 'in', last)) == []
        with open(os.path.join(steps, 'optimize-%03d' % len(generated) + '.json')) as f:
            optimize = json.load(f)
        assert optimize['max_depth'] == 4
        assert C.UNFETCHED_WITHIN_DEPTH not in optimize['counters'][C.OPTIMIZE]
        assert len(report['layers']) == len(generated) + 1
        db = read_records(os.path.join(out, 'crawldb', '%03d' % len(generated)))
        assert sorted((r['url'][len(site.url('/')):], r['status']) for r in db) == [
            ('', 'fetched'), ('t/a.html', 'fetched'), ('t/b.html', 'fetched')]


@pytest.mark.crawl
def test_pagerank_is_made_when_the_layer_that_would_have_made_it_skipped_its_generate(
        site, tmp_path):
    """generate.strategy = pagerank, every 2 layers: cycle 1 ends at layer 2 with its
    generate skipped, so pagerank/002 is never made; cycle 2's layer 3 finds a new page
    and its generate makes pagerank/003 instead of reading the missing 002."""
    site.overrides['/'] = html_page('Home', link_list('/t/a.html'))
    site.overrides['/t/a.html'] = html_page('a', link_list('/t/c.html'))
    site.overrides['/t/c.html'] = html_page('c', link_list('/'))
    conf = test_conf('generate.strategy=pagerank', 'generate.pagerank_every=2',
                     'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, 4)
    with open(os.path.join(out, 'steps', 'generate-003.json')) as f:
        assert json.load(f)['made_by'] == 'optimize'
    assert sorted(os.listdir(os.path.join(out, 'pagerank'))) == ['000']
    site.overrides['/t/c.html'] = html_page('c', link_list('/', '/t/d.html'))
    site.overrides['/t/d.html'] = html_page('d', link_list('/'))
    out, report = crawl_site(site, tmp_path, conf, 4)
    assert sorted(os.listdir(os.path.join(out, 'pagerank'))) == ['000', '003']
    with open(os.path.join(out, 'steps', 'generate-004.json')) as f:
        assert json.load(f)['counters']['generate']['generated_total'] == 1
    assert site.url('/t/d.html') in {r['url'] for r in read_records(
        os.path.join(out, 'crawldb', '004')) if r['status'] == 'fetched'}
