"""A small layer's crawl database update (OptimizerDriver.update): every map task holds
the URLs the layer's pages name (MROptimize --layer-pages), and the db line of any other
URL leaves the mapper as read; the crawl database is the one a shuffle of all makes."""
import json
import os

import orjson

from jobs.lib import counters as C
from jobs.optimize import MROptimize
from tests.conftest import read_records, test_conf
from tests.test_jobs import run_job

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
