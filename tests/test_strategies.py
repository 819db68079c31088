"""What to fetch next: OPIC accounts, PageRank, the strategies and the top-N cap."""
import json
import os

import pytest

from drivers.crawl import Crawl
from jobs.generate import MRGenerate
from jobs.optimize import MROptimize
from jobs.pagerank import MRPageRank
from tests.helpers import read_records, test_conf
from tests.helpers import page, run_job

pytestmark = pytest.mark.job


def conf_file(tmp_path, *sets):
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(test_conf(*sets)))
    return str(path)


def test_opic_cash_flows_along_out_links(tmp_path):
    cf = conf_file(tmp_path)
    seed = page('http://h/', ['http://h/a', 'http://h/b', 'http://h/c', 'http://h/d'])
    out, _ = run_job(MROptimize, cf, [seed])
    db = {r['url']: r for r in out}
    assert db['http://h/']['score'] == 0.0 and db['http://h/']['opic_history'] == 1.0
    assert all(db['http://h/' + x]['score'] == 0.25 for x in 'abcd')

    # Next layer: /a (cash 0.25, carried by its in/ record) links to /c and /e.
    a = page('http://h/a', ['http://h/c', 'http://h/e'], depth=1, score=0.25)
    out, _ = run_job(MROptimize, cf, list(db.values()) + [a])
    db = {r['url']: r for r in out}
    assert db['http://h/a']['score'] == 0.0 and db['http://h/a']['opic_history'] == 0.25
    assert db['http://h/c']['score'] == 0.25 + 0.125
    assert db['http://h/e']['score'] == 0.125
    # Cash is conserved: spent cash is handed on, so what waits adds up to the seed's 1.0.
    assert sum(r.get('score', 0) for r in db.values()) == 1.0


def reference_pagerank(graph, d, iterations):
    rank = {u: 1.0 for u in graph}
    for _ in range(iterations):
        incoming = {u: 0.0 for u in graph}
        for u, links in graph.items():
            if links:
                for v in links:
                    incoming[v] += rank[u] / len(links)
            else:
                incoming[u] += rank[u]
        rank = {u: (1 - d) + d * incoming[u] for u in graph}
    return rank


def test_pagerank_matches_a_plain_implementation(tmp_path):
    cf = conf_file(tmp_path, 'generate.pagerank_iterations=20')
    graph = {'http://h/a': ['http://h/b', 'http://h/c'], 'http://h/b': ['http://h/c'],
             'http://h/c': ['http://h/a'], 'http://h/d': ['http://h/c'], 'http://h/e': []}
    recs = [{'kind': 'db', 'url': u, 'status': 'fetched', 'depth': 0} for u in graph]
    recs += [page(u, links) for u, links in graph.items()]
    out, counters = run_job(MRPageRank, cf, recs)
    got = {r['url']: r['pagerank'] for r in out}
    want = reference_pagerank(graph, 0.85, 20)
    assert set(got) == set(graph)
    for u in graph:
        assert got[u] == pytest.approx(want[u], abs=1e-5)
    assert got['http://h/c'] > got['http://h/a'] > got['http://h/b'] > got['http://h/d']


def candidates():
    def db(url, **kw):
        return dict({'kind': 'db', 'url': url, 'status': 'unfetched', 'depth': 1,
                     'inlinks': 1, 'score': 0.0}, **kw)
    return [db('http://big.com/1', inlinks=3), db('http://big.com/2', inlinks=3),
            db('http://big.com/3', inlinks=3, depth=2),
            db('http://small.org/many-links', inlinks=7, score=0.1),
            db('http://small.org/rich', inlinks=1, score=0.9),
            db('http://small.org/shallow', depth=0 + 1, inlinks=0)]


@pytest.mark.parametrize('strategy,expected', [
    ('backlinks', ['http://small.org/many-links', 'http://big.com/1']),
    ('opic', ['http://small.org/rich', 'http://small.org/many-links']),
    ('major_site', ['http://big.com/1', 'http://big.com/2']),   # 9 in-links vs 8
    # all at depth 1 but one: ties broken by in-links, then URL
    ('bfs', ['http://small.org/many-links', 'http://big.com/1']),
])
def test_strategies_and_top_n(tmp_path, strategy, expected):
    cf = conf_file(tmp_path, 'generate.strategy="%s"' % strategy, 'generate.top_n=2',
                   'fetch.follow_hops=0')
    out, counters = run_job(MRGenerate, cf, candidates(), '--max-depth', '3')
    assert [r['url'] for r in sorted(out, key=lambda r: expected.index(r['url'])
                                     if r['url'] in expected else 99)] == expected
    assert counters['generate']['generated_total'] == 2
    assert counters['generate']['over_top_n_total'] == 4
    assert counters['generate']['generated_hosts_total'] == len({
        r['url'].split('/')[2] for r in out})
    # Without top_n, the host count comes from the per-host reducers.
    out, counters = run_job(MRGenerate, conf_file(tmp_path, 'generate.strategy="%s"' % strategy),
                            candidates(), '--max-depth', '3')
    assert counters['generate']['generated_total'] == 6
    assert counters['generate']['generated_hosts_total'] == 2
    # Each url record carries the value its host's URLs are fetched in order of, the
    # strategy's own (bfs: the in-link count, its tie-break within a layer).
    by_url = {r['url']: r['priority'] for r in out}
    ranked = sorted(by_url, key=lambda u: (-by_url[u], u))
    assert ranked[:2] == expected
    if strategy == 'opic':
        assert by_url == {c['url']: c['score'] for c in candidates()}
    if strategy in ('bfs', 'backlinks'):
        assert by_url == {c['url']: float(c['inlinks']) for c in candidates()}


@pytest.mark.crawl
def test_pagerank_strategy_crawl_with_top_n(site, tmp_path):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text(site.url('/') + '\n')
    out = str(tmp_path / 'crawl')
    conf = test_conf('politeness.delay=0.05', 'generate.strategy="pagerank"',
                     'generate.top_n=4', 'fetch.follow_hops=0', 'generate.pagerank_every=1',
                     'generate.pagerank_iterations=3')
    report = Crawl(out, conf, runner='inline', depth=2, progress=lambda m: None).run(str(seeds))
    assert [row['urls_in'] for row in report['layers']] == [1, 4, 4]
    assert all(row['accounted'] == row['urls_in'] for row in report['layers'])
    assert os.path.isdir(os.path.join(out, 'pagerank', '000'))
    assert os.path.isdir(os.path.join(out, 'pagerank', '001'))
    # Over-the-cap URLs wait in crawldb as unfetched.
    db = read_records(os.path.join(out, 'crawldb', '002'))
    assert sum(1 for r in db if r['status'] == 'unfetched') >= 6


def test_opic_cash_of_a_page_followed_in_the_fetch_is_counted_once(tmp_path):
    """A followed page (fetch.follow_hops) spent its parent's share when it was fetched,
    in the parent's layer; the parent's link hands the same share on in that layer's
    update: it is counted once, so cash stays conserved."""
    cf = conf_file(tmp_path)
    seed = page('http://h/', ['http://h/a', 'http://h/b'])
    followed = page('http://h/a', ['http://h/c'], depth=1, score=0.5)
    followed['followed'] = 1
    out, _ = run_job(MROptimize, cf, [seed, followed])
    db = {r['url']: r for r in out}
    assert db['http://h/a']['score'] == 0.0 and db['http://h/a']['opic_history'] == 0.5
    assert 'followed' not in db['http://h/a']
    assert db['http://h/b']['score'] == 0.5 and db['http://h/c']['score'] == 0.5
    assert sum(r.get('score', 0) for r in db.values()) == 1.0
