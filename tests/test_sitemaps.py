"""Sitemaps, sitemap indexes, gzip, text sitemaps and robots.txt Sitemap: lines."""
import base64
import collections
import gzip
import json
import os

import pytest

from jobs.lib import config, sitemaps
from jobs.parse import MRParse
from tests.helpers import crawl_site, test_conf
from tests.helpers import run_job

pytestmark = pytest.mark.unit

URLSET = b'''<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://h.com/a</loc><lastmod>2026-11-01</lastmod><priority>0.8</priority></url>
  <url><loc> http://h.com/b?utm_source=x </loc></url>
  <url><loc>/relative</loc><lastmod>last week</lastmod></url>
  <url><loc>ftp://h.com/file</loc></url>
  <url><priority>1</priority></url>
</urlset>'''

INDEX = b'''<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://h.com/sitemap-1.xml.gz</loc></sitemap>
<sitemap><loc>http://h.com/sitemap-2.xml</loc><lastmod>2026-01-01</lastmod></sitemap>
</sitemapindex>'''

XXE = b'''<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>http://h.com/&xxe;</loc></url></urlset>'''


def test_parse_urlset_index_gzip_and_text():
    kind, entries = sitemaps.parse(URLSET)
    assert kind == 'urlset'
    assert [e['loc'] for e in entries] == ['http://h.com/a', 'http://h.com/b?utm_source=x',
                                          '/relative', 'ftp://h.com/file']
    assert entries[0]['lastmod'] == '2026-11-01' and entries[0]['priority'] == '0.8'
    kind, entries = sitemaps.parse(gzip.compress(INDEX))
    assert kind == 'sitemapindex' and len(entries) == 2
    kind, entries = sitemaps.parse(b'http://h.com/1\n\nnot a url\nhttps://h.com/2\n')
    assert kind == 'text' and [e['loc'] for e in entries] == ['http://h.com/1',
                                                              'https://h.com/2']
    assert len(sitemaps.parse(URLSET, max_urls=2)[1]) == 2


def test_lastmod_w3c_datetimes_become_utc_seconds():
    lastmod = sitemaps.lastmod
    assert lastmod('2026-11-01') == '2026-11-01T00:00:00Z'
    assert lastmod(' 2026-11 ') == '2026-11-01T00:00:00Z' and lastmod('2026') == \
        '2026-01-01T00:00:00Z'
    assert lastmod('2026-11-01T10:20+02:00') == '2026-11-01T08:20:00Z'
    assert lastmod('2026-12-31T23:30:15.25-01:00') == '2027-01-01T00:30:15Z'
    assert lastmod('2026-11-01T10:20:30Z') == '2026-11-01T10:20:30Z'
    assert lastmod('2026-11-01T10:20:30') == '2026-11-01T10:20:30Z'   # no zone: UTC
    assert lastmod('0999-03-04') == '0999-03-04T00:00:00Z'           # sorts as a time
    for bad in ('last week', '2026-13-01', '2026-02-30', '2026-11-01T25:00Z',
                '2026-11-01T10:20+24:00', '2026-11-01 10:20', '26-11-01', '2026-1-1',
                '0001-01-01T00:00+01:00', '', None):
        assert lastmod(bad) is None, bad


def test_no_external_entities_and_no_zip_bomb():
    kind, entries = sitemaps.parse(XXE)
    assert 'root:' not in json.dumps(entries)
    bomb = gzip.compress(b'<urlset>' + b' ' * 2_000_000 + b'</urlset>')
    with pytest.raises(sitemaps.SitemapError, match='inflates'):
        sitemaps.parse(bomb, max_bytes=1_000_000)
    with pytest.raises(sitemaps.SitemapError, match='root element <rss>'):
        sitemaps.parse(b'<rss><channel/></rss>')


def test_robots_sitemap_lines():
    text = 'User-agent: *\nDisallow: /x\nSitemap: http://h.com/s1.xml\nsitemap:/s2.xml\n'
    assert sitemaps.robots_sitemaps(text) == ['http://h.com/s1.xml', '/s2.xml']


def test_enabling_sitemaps_alone_keeps_their_bodies():
    from jobs.lib.fetcher import HostFetcher as Fetcher
    from jobs.lib.filters import LinkFilter
    off, on = config.load(), config.load(overrides=['sitemaps.enabled=true'])
    assert on['fetch']['keep_types'] == off['fetch']['keep_types'] == []
    assert set(sitemaps.SITEMAP_TYPES) <= set(Fetcher(on).keep_types)
    # Off: none of them but text/plain, which a content parser reads (parse.parsers).
    assert set(sitemaps.SITEMAP_TYPES) & set(Fetcher(off).keep_types) <= {'text/plain'}
    # A type listed in fetch.keep_types too is kept once.
    both = config.load(overrides=['sitemaps.enabled=true',
                                  'fetch.keep_types=["text/xml", "application/pdf"]'])
    assert sorted(sitemaps.kept_types(both)) == sorted(
        set(sitemaps.SITEMAP_TYPES) | {'application/pdf'})
    # Their links pass the extension filter as a kept type's do.
    deny = 'filter.deny_extensions=["xml", "txt"]'
    assert LinkFilter.for_conf(config.load(overrides=[deny])).reason(
        'http://h.com/sitemap.xml') == 'extension'
    assert LinkFilter.for_conf(config.load(overrides=[deny, 'sitemaps.enabled=true'])).reason(
        'http://h.com/sitemap.xml') is None


def _conf_file(tmp_path, *sets):
    conf = test_conf(*sets)
    conf['sitemaps']['enabled'] = True
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(conf))
    return str(path)


def raw_doc(url, data, ctype, depth=1):
    return {'kind': 'doc', 'url': url, 'final_url': url, 'status': 'fetched', 'depth': depth,
            'content_type': ctype, 'digest': 'sha1:x', 'body': None,
            'raw_body': base64.b64encode(data).decode('ascii'), 'headers': {}}


@pytest.mark.job
def test_parse_job_reads_url_sources(tmp_path):
    conf_file = _conf_file(tmp_path)
    docs = [
        raw_doc('http://h.com/robots.txt', b'User-agent: *\nSitemap: /sitemap_index.xml\n',
                'text/plain'),
        raw_doc('http://h.com/sitemap_index.xml', INDEX, 'application/xml'),
        raw_doc('http://h.com/sitemap-1.xml.gz', gzip.compress(URLSET), 'application/gzip'),
        raw_doc('http://h.com/urls.txt', b'http://h.com/t1\nhttp://h.com/t2\n', 'text/plain'),
        raw_doc('http://h.com/readme', b'Just  some\ntext.', 'text/plain'),
        raw_doc('http://h.com/feed', b'<rss/>', 'application/xml'),
        {'kind': 'doc', 'url': 'http://h.com/', 'final_url': 'http://h.com/', 'depth': 0,
         'status': 'fetched', 'body': '<a href="/x">x</a>', 'headers': {}},
    ]
    out, counters = run_job(MRParse, conf_file, docs)
    by_url = {r['url']: r for r in out}
    robots = by_url['http://h.com/robots.txt']
    assert [l['url'] for l in robots['links']] == ['http://h.com/sitemap_index.xml']
    assert robots['sitemap'] == 'robots' and robots['noindex'] and robots['link_depth_step'] == 0
    index = by_url['http://h.com/sitemap_index.xml']
    assert [l['url'] for l in index['links']] == ['http://h.com/sitemap-1.xml.gz',
                                                 'http://h.com/sitemap-2.xml']
    urlset = by_url['http://h.com/sitemap-1.xml.gz']
    assert urlset['links'] == [
        {'url': 'http://h.com/a', 'text': '', 'rel': 'urlset',
         'lastmod': '2026-11-01T00:00:00Z'},
        {'url': 'http://h.com/b', 'text': '', 'rel': 'urlset'},      # utm_ stripped
        {'url': 'http://h.com/relative', 'text': '', 'rel': 'urlset'}]   # "last week"
    assert [l['url'] for l in by_url['http://h.com/urls.txt']['links']] == [
        'http://h.com/t1', 'http://h.com/t2']
    readme = by_url['http://h.com/readme']
    assert readme['text'] == 'Just some text.' and readme['links'] == []
    assert 'root element <rss>' in by_url['http://h.com/feed']['parse_error']
    home = by_url['http://h.com/']
    assert [l['url'] for l in home['links']] == ['http://h.com/x', 'http://h.com/robots.txt']
    c = counters['parse']
    assert c['sitemap_robots_total'] == 1 and c['sitemap_sitemapindex_total'] == 1
    assert c['sitemap_urlset_total'] == 1 and c['sitemap_text_total'] == 1
    assert c['text_pages_total'] == 1 and c['sitemap_error_total'] == 1
    assert c['robots_txt_linked_total'] == 1 and c['sitemap_lastmod_bad_total'] == 1
    assert c['link_rejected_scheme_total'] == 1          # the ftp: loc
    assert c['links_found_total'] == c['links_kept_total'] + sum(
        v for k, v in c.items() if k.startswith('link_rejected_'))


# -- end to end: robots.txt -> gzipped index -> sitemaps -> pages no page links ---------

@pytest.mark.crawl
def test_crawl_reads_sitemaps_from_robots_txt(site, tmp_path):
    from drivers.fixtures.site import HIDDEN, ROBOTS, SITEMAP_INDEX
    from tests.helpers import read_records, read_xml

    site.robots = ROBOTS + b'Sitemap: ' + site.url(SITEMAP_INDEX).encode() + b'\n'
    # Seed: a page without links. robots.txt (layer 1) -> index (2) -> sitemaps (3) ->
    # pages (4): sitemap links add no depth, so the pages are depth 1, but each file is
    # one more layer.
    out, _ = crawl_site(site, tmp_path,
                        test_conf('sitemaps.enabled=true', 'politeness.delay=0.05'),
                        depth=4, start='/~user/')

    base = site.url('')
    pages = {}
    for layer in sorted(os.listdir(os.path.join(out, 'out'))):
        for r in read_records(os.path.join(out, 'out', layer)):
            pages[r['url'][len(base):]] = dict(r, layer=int(layer))
    paths = site.paths()
    for p in HIDDEN:                       # listed only in the sitemaps: fetched, once
        assert pages[p]['status'] == 'fetched' and pages[p]['layer'] == 4, pages[p]
        assert pages[p]['depth'] == 1 and paths.count(p) == 1
    sources = {p: r['sitemap'] for p, r in pages.items() if r.get('sitemap')}
    assert sources == {'/robots.txt': 'robots', SITEMAP_INDEX: 'sitemapindex',
                       '/sitemaps/pages.xml': 'urlset', '/sitemaps/more.xml.gz': 'urlset',
                       '/sitemaps/evil.xml': 'urlset'}
    assert [l for l in pages['/sitemaps/pages.xml']['links'] if l.get('lastmod')] == [
        {'url': base + HIDDEN[0], 'text': '', 'rel': 'urlset',
         'lastmod': '2026-11-01T00:00:00Z'}]

    # The hostile sitemap: no entity expanded or fetched, nothing read from disk.
    assert '/xxe-probe' not in paths
    evil = json.dumps(pages['/sitemaps/evil.xml'])
    assert 'root:' not in evil and 'aaaaaaaaaa' not in evil
    assert [l['url'] for l in pages['/sitemaps/evil.xml']['links']] == [
        base + '/hidden/evil?x=']          # the loc's text, entity references left out

    # Sitemaps and robots.txt are URL sources, not pages: noindex, not in xml/.
    xml = read_xml(os.path.join(out, 'xml'))
    assert all(pages[p]['noindex'] for p in sources)
    assert not any(u[len(base):] in sources for u in xml)
    assert {base + p for p in HIDDEN} <= set(xml)

    counters = collections.Counter()
    for layer in range(5):
        # The fetch parses (fetch.parse): its step carries the parse counters.
        with open(os.path.join(out, 'steps', 'fetch-%03d.json' % layer)) as f:
            counters.update(json.load(f)['counters']['parse'])
    assert counters['sitemap_urls_total'] == 1 + 3 + 2 + 1 + 1   # robots, index, 3 urlsets
    assert counters['sitemap_robots_total'] == 1 and counters['sitemap_sitemapindex_total'] == 1
    assert counters['sitemap_urlset_total'] == 3 and counters['robots_txt_linked_total'] == 1


# -- a sitemap's lastmod after a page's last fetch makes it due in the next cycle -------

@pytest.mark.crawl
def test_next_cycle_fetches_the_page_a_sitemap_dates_after_its_fetch(site, tmp_path):
    from datetime import datetime, timedelta, timezone

    from drivers.crawl import Crawl
    from drivers.fixtures.site import ROBOTS, html_page
    from tests.helpers import at, read_records

    # A lastmod an hour from now, written in another zone: after cycle 1's fetch of the
    # page, before cycle 2's time (two hours from now).
    soon = datetime.now(timezone(timedelta(hours=2))) + timedelta(hours=1)
    entries = {'/lm/changed.html': soon.strftime('%Y-%m-%dT%H:%M:%S+02:00'),
               '/lm/old.html': '2020-01-01', '/lm/undated.html': None,
               '/lm/bad.html': 'soon'}
    urlset = ''.join('<url><loc>%s</loc>%s</url>' % (
        site.url(p), '<lastmod>%s</lastmod>' % m if m else '') for p, m in entries.items())
    site.overrides['/lm/sitemap.xml'] = ('typed', 'application/xml', (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</urlset>'
        % urlset).encode())
    for p in entries:
        site.overrides[p] = html_page('Listed ' + p, '<p>In the sitemap.</p>')
    site.robots = ROBOTS + b'Sitemap: ' + site.url('/lm/sitemap.xml').encode() + b'\n'

    # sitemaps.enabled alone (no fetch.keep_types); a month between re-fetches.
    conf = test_conf('sitemaps.enabled=true', 'politeness.delay=0.05',
                     'recrawl.interval=2592000')
    # Cycle 1: the seed (no links) -> robots.txt -> the sitemap -> its pages.
    out, _ = crawl_site(site, tmp_path, conf, depth=3, start='/~user/')
    assert sorted(r['path'] for r in site.requests if r['path'].startswith('/lm/')) == \
        sorted(['/lm/sitemap.xml'] + list(entries))

    def newest_db():
        names = sorted(n for n in os.listdir(os.path.join(out, 'crawldb')) if n.isdigit())
        return {r['url']: r for r in read_records(os.path.join(out, 'crawldb', names[-1]))}

    db = newest_db()
    changed = db[site.url('/lm/changed.html')]
    assert changed['sitemap_lastmod'] == soon.astimezone(timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')
    assert changed['last_fetch'] < changed['sitemap_lastmod']
    assert db[site.url('/lm/old.html')]['sitemap_lastmod'] == '2020-01-01T00:00:00Z'
    assert 'sitemap_lastmod' not in db[site.url('/lm/undated.html')]
    assert 'sitemap_lastmod' not in db[site.url('/lm/bad.html')]       # counted, ignored
    fetched = [r['url'] for r in db.values() if r['status'] == 'fetched']
    assert set(map(site.url, entries)) <= set(fetched)

    # Cycle 2, two hours on: no interval has passed; only the page the sitemap dates
    # after its fetch is asked for (robots.txt is read afresh in every cycle).
    mark = len(site.requests)
    Crawl(out, conf, runner='inline', depth=None, progress=lambda m: None).run(
        None, at(2 / 24))
    asked = [r['path'] for r in site.requests[mark:] if r['path'] != '/robots.txt']
    assert asked == ['/lm/changed.html']
    db2 = newest_db()
    assert db2[site.url('/lm/changed.html')]['last_fetch'] >= changed['last_fetch']
    assert db2[site.url('/lm/old.html')]['last_fetch'] == \
        db[site.url('/lm/old.html')]['last_fetch']

    counters = collections.Counter()
    for name in os.listdir(os.path.join(out, 'steps')):
        if name.startswith(('generate-', 'fetch-')):
            with open(os.path.join(out, 'steps', name)) as f:
                for group in json.load(f)['counters'].values():
                    counters.update(group)
    assert counters['due_sitemap_lastmod_total'] == 1
    assert counters['sitemap_lastmod_bad_total'] == 1
