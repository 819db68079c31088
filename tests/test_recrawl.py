"""Re-crawl: due pages fetched with conditional requests, intervals adapted, XML of changes."""
import json
import os

from drivers.crawl import Crawl
from drivers.fixture_site import _page
from lxml import etree

from tests.conftest import ROOT, at, crawl_site, read_records, read_xml, test_conf

DAY = 86400.0


def test_recrawl_fetches_due_pages_and_writes_only_differences(site, tmp_path):
    conf = test_conf('politeness.delay=0.05')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    base = site.url('')

    # Nothing is due an hour later (the default interval is 7 days).
    n = len(site.requests)
    first = Crawl(out, conf, runner='inline', progress=lambda m: None).recrawl(at(1 / 24))
    assert first['due'] == 0 and len(site.requests) == n
    assert read_xml(os.path.join(out, 'recrawl', '001', 'xml')) == {}

    # Eight days later: one page changed, one is gone, the rest did not change.
    site.overrides['/a.html'] = _page('Page A, new edition', '<p>changed</p>')
    site.overrides['/dup.html'] = None
    mark = len(site.requests)
    second = Crawl(out, conf, runner='inline', progress=lambda m: None).recrawl(at(8))
    fetched_pages = {'/', '/a.html', '/b.html', '/dup.html', '/redirect', '/~user/',
                     '/latin1.html', '/image.png', '/trap/1/'}
    asked = [r for r in site.requests[mark:] if r['path'] != '/robots.txt']
    # /c.html is asked as the hop of /redirect, not on its own.
    assert {r['path'].replace('%7E', '~') for r in asked} == fetched_pages | {'/c.html'}
    assert second['due'] == len(fetched_pages)
    # Conditional requests: every page that had an ETag was asked with If-None-Match.
    conditional = {r['path'] for r in asked if r.get('headers', {}).get('If-None-Match')}
    assert {'/', '/a.html', '/b.html', '/dup.html'} <= conditional
    assert second['changed'] == 1 and second['deleted'] == 1
    # 304 for the pages with an ETag; the others came back with the same digest.
    assert second['not_modified'] == 3 and second['unchanged'] == 3

    xml = read_xml(os.path.join(out, 'recrawl', '002', 'xml'))
    assert set(xml) == {base + '/a.html', base + '/dup.html'}
    assert 'new edition' in xml[base + '/a.html']
    assert xml[base + '/dup.html'].startswith('<deletion')
    schema = etree.XMLSchema(etree.parse(os.path.join(ROOT, 'conf', 'page.xsd')))
    for doc in xml.values():
        schema.assertValid(etree.fromstring(doc.encode('utf-8')))

    db = {r['url']: r for r in read_records(os.path.join(out, 'recrawl', '002', 'crawldb'))}
    assert db[base + '/a.html']['fetch_interval'] == 7 * DAY / 2     # changed: halved
    assert db[base + '/a.html']['changed'] is True
    assert db[base + '/'] ['fetch_interval'] == 7 * DAY * 2           # unchanged: doubled
    assert db[base + '/']['changed'] is False
    assert db[base + '/dup.html']['status'] == 'gone'
    before = {r['url']: r for r in read_records(os.path.join(out, 'crawldb', '001'))}
    # 304: the stored digest and validators are kept, the fetch time moves on.
    assert db[base + '/b.html']['digest'] == before[base + '/b.html']['digest']
    assert db[base + '/b.html']['etag'] == before[base + '/b.html']['etag']
    assert db[base + '/b.html']['last_fetch'] > before[base + '/b.html']['last_fetch'] or \
        db[base + '/b.html']['last_fetch'] == before[base + '/b.html']['last_fetch']

    # Four days after that only the changed page (3.5-day interval) is due again.
    third = Crawl(out, conf, runner='inline', progress=lambda m: None).recrawl(at(12))
    assert third['due'] == 1
    report = json.load(open(os.path.join(out, 'recrawl', '003', 'report.json')))
    assert report['due'] == 1 and report['changed'] == 0 and report['not_modified'] == 1
