"""XML enrichment: main text and language without the network, in-link anchors, schema v2."""
import socket

import pytest
from lxml import etree

from jobs.anchors import MRAnchors
from jobs.merge import MRMerge
from jobs.lib import html, maintext, xmlpage
from drivers.fixtures.site import PAGES
from tests.helpers import ROOT
from tests.helpers import page, run_job

pytestmark = pytest.mark.unit


@pytest.mark.parametrize('extractor', maintext.EXTRACTORS)
def test_main_text_and_language_never_touch_the_network(monkeypatch, extractor):
    def refuse(*args, **kwargs):
        raise AssertionError('network access attempted')
    monkeypatch.setattr(socket.socket, 'connect', refuse)
    monkeypatch.setattr(socket, 'create_connection', refuse)
    monkeypatch.setattr(socket, 'getaddrinfo', refuse)
    body = PAGES['/near1.html'].decode()
    main = maintext.main_text(body, 'http://example.invalid/near1.html', extractor)
    assert 'Session' not in main and 'Printed on' not in main
    assert main.startswith('Our old neighbour collects') or main.startswith('A long article')
    lines = main.split('\n')
    assert len(lines) >= 10 and all(line.strip() == line and line for line in lines)
    assert maintext.language(main) == 'en'
    assert maintext.language('Le chat dort sur le canap\u00e9 pendant que la pluie '
                             'tombe sur la ville.') == 'fr'
    assert maintext.language('too short') is None


def test_resiliparse_main_text_skips_page_landmarks_not_the_article_header():
    para = '<p>%s</p>' % ('The quick brown fox jumps over the lazy dog by the river. ' * 8)
    body = ('<html><body><div><header><p>Banner tagline</p></header>'
            '<div role="navigation"><p>Role nav entry</p></div>'
            '<article><header><h1>The article title</h1></header>%s</article>'
            '<aside><p>Related aside entry</p></aside><footer>Copyright line</footer>'
            '</div></body></html>' % (para * 4))
    main = maintext.main_text(body, extractor='resiliparse')
    assert main.split('\n')[0] == 'The article title'
    assert main.count('The quick brown fox') == 32
    for boiler in ('Banner', 'Role nav', 'Related aside', 'Copyright'):
        assert boiler not in main
    assert maintext.main_text('', extractor='resiliparse') == ''
    assert maintext.main_text('<html><body></body></html>') == ''
    with pytest.raises(ValueError, match='boilerpipe'):
        maintext.main_text(body, extractor='boilerpipe')


def test_page_parser_uses_the_configured_extractor(monkeypatch):
    from jobs.lib import config, parsepage
    seen = []
    real = maintext.main_text

    def spy(html_text, url=None, extractor='resiliparse'):
        seen.append(extractor)
        return real(html_text, url, extractor)
    monkeypatch.setattr(maintext, 'main_text', spy)
    body = PAGES['/near1.html'].decode()
    for name in maintext.EXTRACTORS:
        conf = config.load(overrides=['parse.main_text_extractor=' + name])
        page = parsepage.PageParser(conf, lambda *a: None).parse(
            {'kind': 'doc', 'url': 'http://h/near1.html', 'status': 'fetched',
             'final_url': 'http://h/near1.html', 'body': body, 'headers': {}})
        assert seen[-1] == name and 'Printed on' not in page['main_text']
        assert page['language'] == 'en'


def test_description_and_headings():
    parsed = html.parse('<head><meta name="description" content=" Two  words "></head>'
                        '<h2>Sub <em>title</em></h2><h1>Main</h1><h3></h3>', 'http://h/')
    assert parsed['description'] == 'Two words'
    assert parsed['headings'] == [{'level': 2, 'text': 'Sub title'},
                                  {'level': 1, 'text': 'Main'}]


def anchors_by_url(conf_file, pages):
    """MRMerge, then MRAnchors over its merge_map: ({leader: its anchors}, MRAnchors'
    counters)."""
    maps, _ = run_job(MRMerge, conf_file, pages)
    out, counters = run_job(MRAnchors, conf_file, pages + maps)
    by_url = {}
    for rec in out:
        by_url.setdefault(rec['url'], []).extend(rec['anchors'])
    return {url: sorted(a, key=lambda a: (a['from'], a['text']))
            for url, a in by_url.items()}, counters


@pytest.mark.job
def test_invertlinks_gathers_anchors_per_target_and_follows_redirects(conf_file):
    """MRAnchors inverts the links (Nutch's invertlinks): anchors per target, a
    redirect's source moved to its final URL, links without text skipped."""
    pages = [page('http://h/a', links=['http://h/t', 'http://h/old', 'http://other/x']),
             page('http://h/b', links=['http://h/t']),
             page('http://h/t'), page('http://other/x'),
             page('http://h/old', final_url='http://h/new')]
    for p in pages[:2]:
        for link in p['links']:
            link['text'] = 'to ' + link['url'].rsplit('/', 1)[1]
    pages[1]['links'].append({'url': 'http://h/empty', 'text': '  ', 'rel': ''})
    anchors, counters = anchors_by_url(conf_file, pages)
    assert anchors == {
        'http://h/t': [{'from': 'http://h/a', 'text': 'to t'},
                       {'from': 'http://h/b', 'text': 'to t'}],
        'http://h/new': [{'from': 'http://h/a', 'text': 'to old'}],
        'http://other/x': [{'from': 'http://h/a', 'text': 'to x'}]}
    c = counters['merge']
    assert c['inlinks_total'] == 4 and c['inlinks_empty_text_skipped_total'] == 1
    assert c['inlinks_redirected_total'] == 1 and c['anchor_targets_total'] == 3


@pytest.mark.job
def test_a_urls_anchors_record_is_sorted_and_distinct_across_its_redirects(conf_file):
    """A page's own anchors and those of a URL that redirected to it meet in one
    ``anchors`` record, sorted and without the pair both routes brought
    (jobs.lib.merging.keep_anchors relies on it)."""
    pages = [page('http://h/a', links=['http://h/old', 'http://h/new']),
             page('http://h/b', links=['http://h/new']),
             page('http://h/old', final_url='http://h/new'), page('http://h/new')]
    for p, texts in zip(pages, (['same', 'same'], ['b to new'])):
        for link, text in zip(p['links'], texts):
            link['text'] = text
    maps, _ = run_job(MRMerge, conf_file, pages)
    out, _ = run_job(MRAnchors, conf_file, pages + maps)
    assert [r['anchors'] for r in out if r['url'] == 'http://h/new'] == [
        [{'from': 'http://h/a', 'text': 'same'}, {'from': 'http://h/b', 'text': 'b to new'}]]


@pytest.mark.job
def test_invertlinks_can_drop_internal_anchors(conf_file, tmp_path):
    import json
    conf = json.load(open(conf_file))
    conf['merge']['internal_anchors'] = False
    path = tmp_path / 'c.json'
    path.write_text(json.dumps(conf))
    p = page('http://h/a', links=['http://h/t', 'http://other/x'])
    for link in p['links']:
        link['text'] = 'x'
    anchors, counters = anchors_by_url(str(path),
                                       [p, page('http://h/t'), page('http://other/x')])
    assert anchors == {'http://other/x': [{'from': 'http://h/a', 'text': 'x'}]}
    assert counters['merge']['inlinks_internal_skipped_total'] == 1


def test_schema_v2_document_validates():
    schema = etree.XMLSchema(etree.parse(ROOT + '/conf/page.xsd'))
    doc = xmlpage.page_xml({
        'url': 'http://h/p', 'status': 'fetched', 'fetch_time': '2026-11-30T00:00:00Z',
        'simhash': '00ff00ff00ff00ff', 'language': 'en', 'title': 'T',
        'description': 'D', 'headings': [{'level': 1, 'text': 'H'}], 'text': 'all',
        'main_text': 'main\nline', 'links': [{'url': 'http://h/q', 'text': 'q'}],
        'anchors': [{'from': 'http://h/z', 'text': 'about p'}],
        'duplicates': ['http://h/n', 'http://h/c', 'http://h/e'],
        'near_duplicates': ['http://h/n'], 'canonical_duplicates': ['http://h/c']})
    root = etree.fromstring(doc.encode())
    schema.assertValid(root)
    assert root.get('version') == xmlpage.SCHEMA_VERSION == '7'
    assert '\n' not in doc and root.findtext('main_text') == 'main\nline'
    assert [u.get('kind') for u in root.find('duplicates')] == ['near', 'canonical', None]
    with pytest.raises(etree.DocumentInvalid):
        bad = etree.fromstring(doc.replace('level="1"', 'level="7"').encode())
        schema.assertValid(bad)
