"""Secondary resources (issue 5): files a site rule names on a page are fetched in the
next layer with a size cap, never kept, and attached to the page as metadata.

Jobs one by one (optimize, generate, fetch, parse), the XML side on a hand-made merged
record, and an end-to-end crawl of the fixture site's /media/ pages."""
import pytest
import base64
import collections
import hashlib
import json
import os
import xml.etree.ElementTree as ET

from lxml import etree

from drivers.fixtures.site import MEDIA
from jobs.fetch import MRFetch
from jobs.generate import MRGenerate
from jobs.lib import sites, xmlpage
from jobs.optimize import MROptimize
from jobs.parse import MRParse
from tests.helpers import ROOT, crawl_site, read_records, read_xml, test_conf
from tests.helpers import page, run_job

pytestmark = pytest.mark.job

MEDIA_TOML = os.path.join(ROOT, 'tests', 'data', 'sites', 'media.toml')
SCHEMA = os.path.join(ROOT, 'conf', 'page.xsd')


def sha1_digest(data):
    return 'sha1:' + base64.b32encode(hashlib.sha1(data).digest()).decode('ascii')


def write_conf(tmp_path, *sets):
    conf = sites.resolve(test_conf('parse.sites=%s' % json.dumps([MEDIA_TOML]), *sets))
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(conf))
    return str(path)


def res(url, name='video', max_bytes=1000):
    return {'name': name, 'url': url, 'max_bytes': max_bytes}


# -- optimize and generate --------------------------------------------------------------

def test_optimize_makes_resources_known_at_the_page_depth(tmp_path):
    conf_file = write_conf(tmp_path)
    db = [{'kind': 'db', 'url': 'http://h/old.mp4', 'status': 'fetched', 'depth': 0,
           'inlinks': 0, 'first_seen': 't0'}]
    pages = [
        page('http://h/p2', [], depth=1, resources=[res('http://h/v.mp4')]),
        page('http://h/p1', ['http://h/next'], depth=1,
             resources=[res('http://h/v.mp4'), res('http://h/s.jpg', 'still', 50),
                        res('http://h/old.mp4')]),
        # a redirect to another host left for the next layer: the target stays a resource
        page('http://h/r.mp4', [], depth=1, status='redirected', final_url='http://cdn/r.mp4',
             resource_of='http://h/p1', resource_name='video', max_bytes=1000),
    ]
    out, counters = run_job(MROptimize, conf_file, db + pages, '--layer', '1')
    by_url = {r['url']: r for r in out}
    v = by_url['http://h/v.mp4']
    # named by two pages: one parent (same depth, smaller URL), no depth added
    assert (v['status'], v['depth'], v['resource_of'], v['resource_name'], v['max_bytes']) == (
        'unfetched', 1, 'http://h/p1', 'video', 1000)
    assert by_url['http://h/s.jpg']['max_bytes'] == 50
    assert by_url['http://cdn/r.mp4']['resource_of'] == 'http://h/p1'
    assert by_url['http://cdn/r.mp4']['depth'] == 1
    assert by_url['http://h/next']['depth'] == 2 and 'resource_of' not in by_url['http://h/next']
    assert 'resource_of' not in by_url['http://h/old.mp4']     # fetched already: stays so
    c = counters['optimize']
    assert c['new_resources_total'] == 3 and c['resources_already_known_total'] == 1


def db_rec(url, depth=1, **kw):
    rec = {'kind': 'db', 'url': url, 'status': 'unfetched', 'depth': depth, 'inlinks': 1,
           'first_seen': 't0'}
    rec.update(kw)
    return rec


def test_generate_keeps_resources_outside_the_host_cap(tmp_path):
    resource = {'resource_of': 'http://h/p', 'resource_name': 'video', 'max_bytes': 10}
    db = [db_rec('http://h/a'), db_rec('http://h/b'), db_rec('http://h/c'),
          db_rec('http://h/v1.mp4', **resource), db_rec('http://h/v2.mp4', **resource),
          db_rec('http://h/deep.mp4', depth=3, **resource)]
    for sets, over in ((['filter.max_urls_per_host=1', 'fetch.follow_hops=0'], 'over_host_cap_total'),
                       (['generate.top_n=2', 'fetch.follow_hops=0'], 'over_top_n_total')):
        conf_file = write_conf(tmp_path, *sets)
        out, counters = run_job(MRGenerate, conf_file, db, '--max-depth', '2')
        by_url = {r['url']: r for r in out}
        pages = [u for u in by_url if not u.endswith('.mp4')]
        # the cap costs pages only; resources all pass, with their fields
        assert len(pages) == (1 if 'host' in over else 2), (sets, by_url)
        assert sorted(u for u in by_url if u.endswith('.mp4')) == [
            'http://h/v1.mp4', 'http://h/v2.mp4']         # deep.mp4: beyond the depth
        assert {k: by_url['http://h/v1.mp4'][k] for k in resource} == resource
        c = counters['generate']
        assert c['generated_resources_total'] == 2 and c['generated_total'] == len(by_url)
        assert c[over] == 3 - len(pages) and c['beyond_depth_total'] == 1


# -- fetch and parse --------------------------------------------------------------------

def test_fetch_caps_a_resource_and_keeps_no_body(site, tmp_path):
    # fetch.parse=false: the fetch's own doc records (with the fused default, the same
    # fields reach out/ through the parser: test_crawl_fetches_resources_once_with_a_cap).
    conf_file = write_conf(tmp_path, 'politeness.delay=0', 'fetch.parse=false',
                           'fetch.follow_hops=0')
    clip, ctype = MEDIA['/media/clip.mp4']
    parent = site.url('/media/film1.html')
    recs = [{'kind': 'url', 'url': site.url('/media/clip.mp4'), 'depth': 1,
             'resource_of': parent, 'resource_name': 'video', 'max_bytes': 1000},
            {'kind': 'url', 'url': site.url('/media/film1.html'), 'depth': 1,
             'resource_of': parent, 'resource_name': 'html', 'max_bytes': 50},
            {'kind': 'url', 'url': site.url('/media/still.jpg'), 'depth': 1,
             'resource_of': parent, 'resource_name': 'still', 'max_bytes': 100000},
            {'kind': 'url', 'url': site.url('/private/trailer.mp4'), 'depth': 1,
             'resource_of': parent, 'resource_name': 'video', 'max_bytes': 1000}]
    docs, counters = run_job(MRFetch, conf_file, recs, '--layer', '2')
    by_path = {d['url'][len(site.url('')):]: d for d in docs}
    d = by_path['/media/clip.mp4']
    assert (d['status'], d['content_type'], d['length'], d['truncated']) == (
        'fetched', ctype, 1000, True)
    assert d['digest'] == sha1_digest(clip[:1000]) and d['declared_length'] == len(clip)
    assert d['body'] is None and 'raw_body' not in d
    assert (d['resource_of'], d['resource_name']) == (parent, 'video')
    h = by_path['/media/film1.html']      # HTML as a resource: capped, not kept, not decoded
    assert h['body'] is None and h['length'] == 50 and h['encoding'] is None
    still, _ = MEDIA['/media/still.jpg']
    s = by_path['/media/still.jpg']
    assert (s['length'], s['truncated'], s['digest']) == (len(still), False, sha1_digest(still))
    assert by_path['/private/trailer.mp4']['status'] == 'robots_denied'   # robots still apply
    assert '/private/trailer.mp4' not in site.paths()
    c = counters['fetch']
    assert c['resources_fetched_total'] == 3 and c['resources_truncated_total'] == 2

    out, pcounters = run_job(MRParse, conf_file, docs)
    pages = {p['url'][len(site.url('')):]: p for p in out}
    html_res = pages['/media/film1.html']    # never parsed, even as text/html
    assert html_res['noindex'] and html_res['links'] == [] and html_res['title'] is None
    assert html_res['fields'] is None and html_res['resource_of'] == parent
    assert pages['/media/clip.mp4']['digest'] == d['digest']
    assert pcounters['parse']['resource_docs_total'] == 4
    assert 'pages_parsed_total' not in pcounters['parse']


def test_parse_caps_resources_per_page(tmp_path):
    conf_file = write_conf(tmp_path, 'parse.max_resources_per_page=2')
    body = ''.join('<video><source src="/v%d.mp4"></video>' % i for i in range(5))
    out, counters = run_job(MRParse, conf_file, [
        {'kind': 'doc', 'url': 'http://127.0.0.1/media/film1.html', 'status': 'fetched',
         'final_url': 'http://127.0.0.1/media/film1.html', 'body': body, 'headers': {}}])
    assert [r['url'] for r in out[0]['resources']] == ['http://127.0.0.1/v0.mp4',
                                                       'http://127.0.0.1/v1.mp4']
    c = counters['parse']
    assert c['resources_found_total'] == 2 and c['resources_over_cap_total'] == 3


# -- the XML side (independent of how merge attaches them) ------------------------------

@pytest.mark.unit
def test_resources_in_xml_are_metadata_and_validate():
    merged = {
        'kind': 'merged', 'url': 'http://h/film', 'status': 'fetched', 'http_status': 200,
        'fetch_time': '2026-11-30T00:00:00Z', 'depth': 1, 'layer': 1, 'title': 'Film',
        'text': 'x', 'links': [], 'duplicates': [],
        'resources': [
            {'name': 'video', 'url': 'http://h/clip.mp4', 'status': 'fetched',
             'content_type': 'video/mp4', 'length': 100000, 'digest': 'sha1:ABC',
             'http_status': 200, 'reason': None, 'truncated': True},
            {'name': 'still', 'url': 'http://h/private/s.jpg', 'status': 'robots_denied',
             'content_type': None, 'length': 0, 'digest': None, 'http_status': None,
             'reason': 'robots_txt'}]}
    doc = xmlpage.page_xml(merged)
    schema = etree.XMLSchema(etree.parse(SCHEMA))
    root = etree.fromstring(doc.encode())
    schema.assertValid(root)
    assert root.get('version') == '7'
    got = [dict(r.attrib) for r in root.find('resources')]
    assert got == [
        {'name': 'video', 'url': 'http://h/clip.mp4', 'status': 'fetched',
         'content-type': 'video/mp4', 'length': '100000', 'digest': 'sha1:ABC',
         'truncated': 'true', 'http-status': '200'},
        {'name': 'still', 'url': 'http://h/private/s.jpg', 'status': 'robots_denied',
         'length': '0', 'reason': 'robots_txt'}]
    assert all(len(r) == 0 and not r.text for r in root.find('resources'))   # no content
    merged.pop('resources')
    assert etree.fromstring(xmlpage.page_xml(merged).encode()).find('resources') is None
    bad = doc.replace('length="100000"', 'length="-1"')
    assert not schema.validate(etree.fromstring(bad.encode()))


# -- end to end ---------------------------------------------------------------------------

@pytest.mark.crawl
def test_crawl_fetches_resources_once_with_a_cap(site, tmp_path):
    conf = sites.resolve(test_conf(
        'parse.sites=%s' % json.dumps([MEDIA_TOML]), 'politeness.delay=0.05',
        'filter.deny_extensions=["mp4", "jpg"]'))
    out, _ = crawl_site(site, tmp_path, conf, depth=2, start='/media/')

    base = site.url('')
    film1, film2 = base + '/media/film1.html', base + '/media/film2.html'
    layer1 = {r['url']: r for r in read_records(os.path.join(out, 'out', '001'))}
    assert [r['url'] for r in layer1[film2]['resources']] == [
        base + '/media/clip.mp4', base + '/private/trailer.mp4']
    # the same file as an <a href> link is dropped by the extension deny list
    assert [l['url'] for l in layer1[film2]['links']] == [base + '/media/']

    res2 = {r['url'][len(base):]: r for r in read_records(os.path.join(out, 'out', '002'))}
    assert set(res2) == {'/media/clip.mp4', '/media/still.jpg', '/private/trailer.mp4'}
    clip, ctype = MEDIA['/media/clip.mp4']
    c = res2['/media/clip.mp4']
    assert (c['status'], c['content_type'], c['length'], c['truncated']) == (
        'fetched', ctype, 100000, True)
    assert c['digest'] == sha1_digest(clip[:100000]) and c['declared_length'] == len(clip)
    assert (c['resource_of'], c['resource_name'], c['depth']) == (film1, 'video', 1)
    still, _ = MEDIA['/media/still.jpg']
    s = res2['/media/still.jpg']
    assert (s['length'], s['truncated'], s['digest']) == (len(still), False, sha1_digest(still))
    assert s['resource_of'] == film1 and s['resource_name'] == 'still'
    assert res2['/private/trailer.mp4']['status'] == 'robots_denied'
    assert all(r['noindex'] and 'body' not in r and 'raw_body' not in r
               for r in res2.values())

    # The server's log: each file fetched once (named twice, linked once), none denied.
    hits = collections.Counter(site.paths())
    assert hits['/media/clip.mp4'] == 1 and hits['/media/still.jpg'] == 1
    assert '/private/trailer.mp4' not in hits
    assert all(n == 1 for p, n in hits.items() if p != '/robots.txt'), hits

    with open(os.path.join(out, 'steps', 'generate-002.json')) as f:
        gen = json.load(f)['counters']['generate']
    assert gen['generated_resources_total'] == 3
    with open(os.path.join(out, 'steps', 'fetch-002.json')) as f:
        fetch = json.load(f)['counters']['fetch']
    assert fetch['resources_fetched_total'] == 2 and fetch['resources_truncated_total'] == 1
    # Resources are not pages: no XML document of their own.
    xml = read_xml(os.path.join(out, 'xml'))
    assert film1 in xml and not any(u.endswith(('.mp4', '.jpg')) for u in xml)
    schema = etree.XMLSchema(etree.parse(SCHEMA))
    for doc in xml.values():
        schema.assertValid(etree.fromstring(doc.encode()))
        assert ET.fromstring(doc).get('version') == '7'
    # Compound documents: each page's merged record and XML list what it names, with
    # the outcome of the one fetch (clip.mp4 is named by both films, fetched once).
    merged = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}

    def listed(url):
        return [(r['name'], r['url'][len(base):], r['status'], r['length'], r['truncated'],
                 r['digest']) for r in merged[url]['resources']]
    clip_entry = ('video', '/media/clip.mp4', 'fetched', 100000, True, c['digest'])
    assert listed(film1) == [
        ('still', '/media/still.jpg', 'fetched', len(still), False, s['digest']), clip_entry]
    assert listed(film2) == [clip_entry,
                             ('video', '/private/trailer.mp4', 'robots_denied', 0, False, None)]
    with open(os.path.join(out, 'steps', 'merge.json')) as f:
        mc = json.load(f)['counters']['merge']
    assert mc['resources_shared_total'] == 1
    page = ET.fromstring(xml[film2])
    assert [(e.get('url')[len(base):], e.get('status'), e.get('digest'), e.get('truncated'))
            for e in page.find('resources')] == [
        ('/media/clip.mp4', 'fetched', c['digest'], 'true'),
        ('/private/trailer.mp4', 'robots_denied', None, 'false')]


@pytest.mark.crawl
def test_resources_the_last_layers_pages_name_are_fetched_in_the_same_cycle(site, tmp_path):
    """Depth 1 from /media/: the films are the last layer's pages. One more layer
    fetches what they name, and nothing else; a crawl whose last layer names no
    resource runs no such layer (no job on a cluster)."""
    conf = sites.resolve(test_conf(
        'parse.sites=%s' % json.dumps([MEDIA_TOML]), 'politeness.delay=0.05'))
    out, report = crawl_site(site, tmp_path, conf, depth=1, start='/media/')
    base = site.url('')
    last = read_records(os.path.join(out, 'out', '002'))
    assert sorted(r['url'][len(base):] for r in last) == [
        '/media/clip.mp4', '/media/still.jpg', '/private/trailer.mp4']
    assert all(r.get('resource_of') for r in last)
    with open(os.path.join(out, 'steps', 'generate-002.json')) as f:
        gen = json.load(f)['counters']['generate']
    assert gen['generated_total'] == gen['generated_resources_total'] == 3
    assert [row['layer'] for row in report['layers']] == [0, 1, 2]
    merged = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    assert [(r['url'][len(base):], r['status']) for r in
            merged[base + '/media/film1.html']['resources']] == [
        ('/media/still.jpg', 'fetched'), ('/media/clip.mp4', 'fetched')]
    # No page of the site names a resource: no extra layer, no extra generate.
    (tmp_path / 'plain').mkdir()
    plain, report = crawl_site(site, tmp_path / 'plain', test_conf('politeness.delay=0.05'),
                               depth=1)
    assert [row['layer'] for row in report['layers']] == [0, 1]
    assert not os.path.exists(os.path.join(plain, 'steps', 'generate-002.json'))
