"""mrcrawl db stats / db get over a real crawl of the fixture site."""
import pytest
import json

from drivers.cli import db
from tests.helpers import crawl_fixture
from tests.helpers import mrcrawl

pytestmark = pytest.mark.crawl


def records(text):
    """The JSON records `db get` printed one after another."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        rec, i = decoder.raw_decode(text, i)
        out.append(rec)
    return out


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
    res = mrcrawl('db', 'get', out, 'http://not.crawled/')
    assert res.returncode == 1 and res.stdout == ''
    assert res.stderr.splitlines() == ['mrcrawl: not in the crawl database: http://not.crawled/']
    # Some found, some not: the records found, one line naming the others (as given).
    missing = [site.url('/nowhere.html'), 'HTTP://Not.Crawled/x']
    res = mrcrawl('db', 'get', out, site.url('/a.html'), missing[0], site.url('/b.html'),
                  missing[1])
    assert res.returncode == 0, res.stderr
    assert sorted(r['url'] for r in records(res.stdout)) == [site.url('/a.html'),
                                                             site.url('/b.html')]
    assert res.stderr.splitlines() == ['mrcrawl: not in the crawl database: %s' % (
        ' '.join(missing))]
    assert mrcrawl('db', 'stats', str(tmp_path / 'nothing')).returncode == 2
