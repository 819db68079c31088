"""Re-crawl cycles: due pages fetched with conditional requests, intervals adapted."""
import pytest
import os

from drivers.crawl import Crawl
from drivers.fixtures.site import html_page

from tests.helpers import at, crawl_site, current_xml, read_records, read_xml, test_conf

pytestmark = pytest.mark.crawl

DAY = 86400.0


def _cycle(out, conf, when):
    """`mrcrawl recrawl --out OUT --at WHEN`: the next cycle, no seeds, same depth."""
    return Crawl(out, conf, runner='inline', depth=None, progress=lambda m: None).run(
        None, when)


def _newest_db(out):
    names = sorted(n for n in os.listdir(os.path.join(out, 'crawldb')) if n.isdigit())
    return {r['url']: r for r in read_records(os.path.join(out, 'crawldb', names[-1]))}


def test_recrawl_fetches_due_pages_and_adapts_intervals(site, tmp_path):
    conf = test_conf('politeness.delay=0.05')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    base = site.url('')
    before = _newest_db(out)

    # Nothing is due an hour later (the default interval is 7 days): nothing is asked,
    # the outputs stay, the delta is empty.
    n = len(site.requests)
    _cycle(out, conf, at(1 / 24))
    assert len(site.requests) == n
    assert read_xml(os.path.join(out, 'delta', '002', 'xml')) == {}
    assert read_xml(os.path.join(out, 'xml'))

    # Eight days later: one page changed, one is gone, the rest did not change.
    site.overrides['/a.html'] = html_page('Page A, new edition', '<p>changed</p>')
    site.overrides['/dup.html'] = None
    mark = len(site.requests)
    _cycle(out, conf, at(8))
    fetched_pages = {'/', '/a.html', '/b.html', '/dup.html', '/redirect', '/~user/',
                     '/latin1.html', '/trap/1/'}
    asked = [r for r in site.requests[mark:] if r['path'] != '/robots.txt']
    # A new cycle reads robots.txt afresh, once (politeness.robots_cache_hours), and
    # drops the answers an earlier cycle kept.
    assert len(site.requests) - mark - len(asked) == 1
    # (cycle 1 fetched layers 0-1, the empty cycle 2 none, this one layer 2).
    assert os.listdir(os.path.join(out, 'robots')) == ['002']
    # /c.html is asked as the hop of /redirect, not on its own; /missing (404 before)
    # and the pages a failed fetch left are asked again too.
    paths = {r['path'].replace('%7E', '~') for r in asked}
    assert fetched_pages | {'/c.html'} <= paths
    # Conditional requests: every page that had an ETag was asked with If-None-Match.
    conditional = {r['path'] for r in asked if r.get('headers', {}).get('If-None-Match')}
    assert {'/', '/a.html', '/b.html', '/dup.html'} <= conditional

    delta = read_xml(os.path.join(out, 'delta', '003', 'xml'))
    assert 'new edition' in delta[base + '/a.html']
    # /dup.html was folded into /b.html: b's duplicate group changed, and no page of
    # its own is deleted.
    assert base + '/b.html' in delta and base + '/dup.html' not in delta
    assert 'new edition' in current_xml(out)[base + '/a.html']

    db = _newest_db(out)
    assert db[base + '/a.html']['fetch_interval'] == 7 * DAY / 2     # changed: halved
    assert db[base + '/a.html']['changed'] is True
    assert db[base + '/']['fetch_interval'] == 7 * DAY * 2           # unchanged: doubled
    assert db[base + '/']['changed'] is False
    assert db[base + '/dup.html']['status'] == 'gone'
    # 304: the stored digest and validators are kept, the fetch time moves on.
    assert db[base + '/b.html']['digest'] == before[base + '/b.html']['digest']
    assert db[base + '/b.html']['etag'] == before[base + '/b.html']['etag']
    assert db[base + '/b.html']['last_fetch'] >= before[base + '/b.html']['last_fetch']

    # Four days after that only the changed page (3.5-day interval) is due again; gone
    # pages wait recrawl.max_interval, as in Nutch.
    mark = len(site.requests)
    _cycle(out, conf, at(12))
    asked = {r['path'] for r in site.requests[mark:] if r['path'] != '/robots.txt'}
    assert asked == {'/a.html'}
