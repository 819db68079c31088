"""mrcrawl db stats / db get over a real crawl of the fixture site."""
import json

from drivers import db
from tests.test_crawl_e2e import crawl_fixture
from tests.test_cli import mrcrawl


def test_db_stats_and_get(site, tmp_path):
    out, report = crawl_fixture(site, tmp_path, 'inline', depth=1)
    stats = db.stats(out)
    assert stats['crawldb'].endswith('crawldb/001')
    # layer 0 fetched 1, layer 1: 9 URLs (7 fetched incl. the redirect source, the
    # redirect target c.html, a 404, a robots denial), plus links found at depth 2.
    assert stats['status']['fetched'] == 1 + 6 + 1
    assert stats['status'] == {'fetched': 8, 'redirected': 1, 'gone': 1, 'denied': 1,
                               'unfetched': stats['urls'] - 11}
    assert stats['depth']['0'] == 1
    assert stats['host'] == {site.url('')[len('http://'):]: stats['urls']}

    res = mrcrawl('db', 'get', out, site.url('/./x/../a.html#frag').replace('http:', 'HTTP:'))
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec['url'] == site.url('/a.html') and rec['status'] == 'fetched'
    assert rec['depth'] == 1 and rec['http_status'] == 200

    res = mrcrawl('db', 'stats', out, '--json')
    assert json.loads(res.stdout)['urls'] == stats['urls']
    assert mrcrawl('db', 'get', out, 'http://not.crawled/').returncode == 1
    assert mrcrawl('db', 'stats', str(tmp_path / 'nothing')).returncode == 2
