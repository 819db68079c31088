"""URL normalisation options, link filters and trap guards, the per-host cap."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from jobs.generate import MRGenerate
from jobs.lib import config, filters, urls
from jobs.parse import MRParse
from tests.helpers import test_conf
from tests.helpers import run_job

pytestmark = pytest.mark.unit

STRIP = ('utm_*', 'gclid', 'JSESSIONID', 'phpsessid')


@pytest.mark.parametrize('url,expected', [
    # percent-encoding made consistent: unreserved unescaped, the rest upper-case hex
    ('http://a.com/%7euser/%2f%41', 'http://a.com/~user/%2FA'),
    ('http://a.com/p?q=%7e%2b', 'http://a.com/p?q=~%2B'),
    ('http://a.com/?', 'http://a.com/'),
    # no sorting, no stripping by default
    ('http://a.com/p?b=2&a=1&utm_source=x', 'http://a.com/p?b=2&a=1&utm_source=x'),
])
def test_normalize_default_escapes(url, expected):
    assert urls.normalize(url) == expected


@pytest.mark.parametrize('url,expected', [
    ('http://a.com/p?b=2&a=1', 'http://a.com/p?a=1&b=2'),
    ('http://a.com/p?utm_source=x&utm_Medium=y&id=3&gclid=z', 'http://a.com/p?id=3'),
    ('http://a.com/p?utm_source=x', 'http://a.com/p'),
    ('http://a.com/p;jsessionid=ABC?x=1', 'http://a.com/p?x=1'),
    ('http://a.com/p;jsessionid=ABC;v=2/q', 'http://a.com/p;v=2/q'),
    ('http://a.com/p?PHPSESSID=1&b=&a&&c=3', 'http://a.com/p?a&b=&c=3'),
    ('http://a.com/p?a=2&a=1&B=0', 'http://a.com/p?B=0&a=1&a=2'),
    ('http://a.com/p?q=a+b&q2=%20', 'http://a.com/p?q=a+b&q2=%20'),
])
def test_normalize_sort_and_strip(url, expected):
    assert urls.normalize(url, sort_query=True, strip_params=STRIP) == expected


def test_normalizer_from_configuration():
    conf = config.load(overrides=['parse.sort_query=true'])
    norm = urls.normalizer(conf)
    assert norm('http://A.com/p?z=1&utm_campaign=c&fbclid=f&a=2#x') == 'http://a.com/p?a=2&z=1'
    conf = config.load(overrides=['parse.strip_params=[]'])
    assert urls.normalizer(conf)('http://a.com/?utm_x=1') == 'http://a.com/?utm_x=1'


def test_normalizer_remembers_results_within_its_bound(monkeypatch):
    """The per-task memory gives normalize()'s answers, None included, asks normalize
    once per URL, and forgets the least recently used when full instead of growing."""
    calls = []
    real = urls.normalize

    def counting(url, **kw):
        calls.append(url)
        return real(url, **kw)
    monkeypatch.setattr(urls, 'normalize', counting)
    monkeypatch.setattr(urls, 'NORMALIZER_CACHE_SIZE', 3)
    norm = urls.normalizer(config.load(overrides=['parse.sort_query=true']))
    inputs = ['http://A.com/p?b=1&a=2', 'mailto:x@y', 'http://a.com/p?b=1&a=2',
              'http://A.com/p?b=1&a=2', 'mailto:x@y']
    assert [norm(u) for u in inputs] == [real(u, sort_query=True, strip_params=STRIP)
                                         for u in inputs]
    assert calls == inputs[:3]
    norm('http://d.com/'), norm('http://e.com/')    # push the first URL out
    norm('http://A.com/p?b=1&a=2')
    assert calls[-1] == 'http://A.com/p?b=1&a=2' and len(calls) == 6


_url_chars = st.text(alphabet='abcAB%7eE2f0/.;=&?#~+ -_', max_size=30)


@settings(max_examples=300, deadline=None)
@given(path=_url_chars, sort=st.booleans())
def test_normalize_is_idempotent(path, sort):
    once = urls.normalize('http://Ex.com/' + path, sort_query=sort, strip_params=STRIP)
    if once is not None:
        assert urls.normalize(once, sort_query=sort, strip_params=STRIP) == once
        assert urls.normalize(once) == once     # what fetch does to in/ URLs


def make_filter(**kw):
    conf = dict(config.load()['filter'])
    conf.update(kw)
    return filters.LinkFilter(conf)


PAGE = 'http://www.example.co.uk/dir/page.html'


@pytest.mark.parametrize('kw,url,reason', [
    ({}, 'http://www.example.co.uk/a', None),
    ({'max_url_length': 30}, 'http://www.example.co.uk/' + 'x' * 10, 'url_too_long'),
    ({'exclude': [r'/login\b', r'\?.*sort=']}, 'http://www.example.co.uk/login', 'exclude'),
    ({'exclude': [r'\?.*sort=']}, 'http://www.example.co.uk/l?a=1&sort=d', 'exclude'),
    ({'include': [r'/docs/']}, 'http://www.example.co.uk/blog/1', 'include'),
    ({'include': [r'/docs/']}, 'http://www.example.co.uk/docs/1', None),
    ({'scope': 'host'}, 'http://shop.example.co.uk/', 'scope'),
    ({'scope': 'host'}, 'http://www.example.co.uk:8080/', None),
    ({'scope': 'domain'}, 'http://shop.example.co.uk/', None),
    ({'scope': 'domain'}, 'http://other.co.uk/', 'scope'),
    ({'scope': 'domain'}, 'http://co.uk/', 'scope'),
    ({'deny_extensions': ['png', '.ZIP']}, 'http://www.example.co.uk/i/x.PNG', 'extension'),
    ({'deny_extensions': ['zip']}, 'http://www.example.co.uk/f.zip?dl=1', 'extension'),
    ({'deny_extensions': ['zip']}, 'http://www.example.co.uk/zip/', None),
    ({'max_path_depth': 3}, 'http://www.example.co.uk/a/b/c/', None),
    ({'max_path_depth': 3}, 'http://www.example.co.uk/a/b/c/d', 'path_depth'),
    ({}, 'http://www.example.co.uk/a/b/a/b/a/b', 'repeated_segments'),
    ({}, 'http://www.example.co.uk/cal/2026/cal/2026/x', None),
    ({'max_segment_repeats': 0}, 'http://www.example.co.uk/a/a/a/a', None),
])
def test_link_filter_reasons(kw, url, reason):
    assert make_filter(**kw).reason(url, PAGE) == reason


def test_scope_with_ip_literals_and_ipv6():
    f = make_filter(scope='domain')
    assert f.reason('http://127.0.0.1:81/x', 'http://127.0.0.1:80/') is None
    assert f.reason('http://127.0.0.2/x', 'http://127.0.0.1/') == 'scope'
    assert f.reason('http://[::1]:8/x', 'http://[::1]/') is None


def test_bad_filter_settings_are_config_errors():
    with pytest.raises(config.ConfigError, match='filter.exclude'):
        config.load(overrides=['filter.exclude=["(unclosed"]'])
    with pytest.raises(config.ConfigError, match='filter.scope'):
        config.load(overrides=['filter.scope=galaxy'])
    with pytest.raises(config.ConfigError, match='filter.max_urls_per_host'):
        config.load(overrides=['filter.max_urls_per_host=-1'])


def _conf_file(tmp_path, *sets):
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(test_conf(*sets)))
    return str(path)


@pytest.mark.job
def test_parse_counts_every_rejected_link_by_reason(tmp_path):
    conf_file = _conf_file(tmp_path, 'filter.scope=domain', 'filter.deny_extensions=["png"]',
                           'filter.exclude=["/logout"]', 'parse.sort_query=true',
                           'parse.max_links_per_page=3')
    body = ''.join('<a href="%s">%s</a>' % (h, i) for i, h in enumerate([
        '/ok?b=1&a=2', '/ok?a=2&b=1&utm_source=news',   # same URL once normalised
        'http://elsewhere.org/', '/logo.png', '/logout', '/a/b/a/b/a/b',
        'mailto:x@y', '/two', '/three', '/four']))
    docs = [{'kind': 'doc', 'url': 'http://www.h.com/', 'status': 'fetched',
             'final_url': 'http://www.h.com/', 'body': body, 'headers': {}}]
    out, counters = run_job(MRParse, conf_file, docs)
    assert [l['url'] for l in out[0]['links']] == [
        'http://www.h.com/ok?a=2&b=1', 'http://www.h.com/two', 'http://www.h.com/three']
    c = counters['parse']
    assert c['links_found_total'] == 10 and c['links_kept_total'] == 3
    assert {k: v for k, v in c.items() if k.startswith('link_rejected_')} == {
        'link_rejected_duplicate_total': 1, 'link_rejected_scope_total': 1,
        'link_rejected_extension_total': 1, 'link_rejected_exclude_total': 1,
        'link_rejected_repeated_segments_total': 1, 'link_rejected_scheme_total': 1,
        'link_rejected_over_cap_total': 1}
    # every link is either kept or counted under one reason
    assert c['links_found_total'] == c['links_kept_total'] + sum(
        v for k, v in c.items() if k.startswith('link_rejected_'))


def _db(url, depth=1, status='unfetched', **kw):
    return dict({'kind': 'db', 'url': url, 'status': status, 'depth': depth}, **kw)


@pytest.mark.job
def test_generate_caps_urls_per_host_and_leaves_the_rest_unfetched(tmp_path):
    conf_file = _conf_file(tmp_path, 'filter.max_urls_per_host=2', 'fetch.follow_hops=0',
                           'generate.strategy="bfs"',
                           'generate.topic_weight=10')
    db = ([_db('http://a.com/%d' % i, depth=1 + i % 2) for i in range(5)] +
          [_db('http://a.com/hot', depth=2, inlinks=9),
           _db('http://a.com/topic', depth=3, inlinks=1, topic_inlinks=1),
           _db('http://b.com/1'), _db('http://b.com/2'), _db('http://b.com/done',
                                                            status='fetched')])
    out, counters = run_job(MRGenerate, conf_file, db, '--max-depth', '3')
    got = sorted(r['url'] for r in out)
    # on-topic first (topic_weight: 1/4 x 11 beats 1/2), then shallower (depth 1: /0 /2
    # /4), ties by URL
    assert got == ['http://a.com/0', 'http://a.com/topic', 'http://b.com/1', 'http://b.com/2']
    assert counters['generate']['generated_total'] == 4
    assert counters['generate']['over_host_cap_total'] == 5

    # The URLs over the cap are still unfetched in crawldb: once the generated ones are
    # fetched, the next layer gets the next best of the host.
    for rec in db:
        if rec['url'] in got:
            rec['status'] = 'fetched'
    out, counters = run_job(MRGenerate, conf_file, db, '--max-depth', '3')
    assert sorted(r['url'] for r in out) == ['http://a.com/2', 'http://a.com/4']
    assert counters['generate']['over_host_cap_total'] == 3


@pytest.mark.job
def test_generate_without_cap_generates_every_candidate(tmp_path):
    conf_file = _conf_file(tmp_path)
    db = [_db('http://a.com/%d' % i) for i in range(50)]
    out, counters = run_job(MRGenerate, conf_file, db)
    assert len({r['url'] for r in out}) == 50
    assert 'over_host_cap_total' not in counters['generate']


_BASES = ['http://a.com/b/c/d.html?q=1#f', 'https://a.com:8443/', 'http://a.com',
          'http://u:p@a.com/x/y', 'http://[::1]:81/p/q/', 'https://xn--bcher-kva.de/a%20b/c',
          'http://a.com/b/c/..', 'ftp://a.com/x/', 'mailto:x@y.z']
_HREF_CHARS = st.text(alphabet="ab./?#%2eE:\\ \t@'\"<{é[];=&-_~", max_size=16)


@settings(max_examples=500, deadline=None)
@given(base=st.sampled_from(_BASES), href=_HREF_CHARS)
def test_page_resolver_agrees_with_the_url_standard(base, href):
    """The fast per-page resolver gives exactly what ada (WHATWG) gives."""
    resolver = urls.PageResolver(base)
    assert resolver(href) == urls.resolve(base, href)
    assert resolver(href) == urls.resolve(base, href)    # cached answer too


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(_BASES), href=_HREF_CHARS,
       encoding=st.sampled_from(['windows-1252', 'shift_jis', 'koi8-r', 'utf-8']))
def test_page_resolver_agrees_with_resolve_in_any_document_encoding(base, href, encoding):
    resolver = urls.PageResolver(base, encoding)
    assert resolver(href) == urls.resolve(base, href, encoding)


@pytest.mark.job
@pytest.mark.parametrize('encoding,href,url', [
    # URL standard: an http(s) link's query is encoded in the document's encoding ...
    ('windows-1252', '/s?q=caf\u00e9', 'http://h.com/s?q=caf%E9'),
    ('ISO-8859-1', '/s?q=caf\u00e9&x=\u00fc', 'http://h.com/s?q=caf%E9&x=%FC'),
    ('koi8-r', '/s?q=\u043c\u0438\u0440', 'http://h.com/s?q=%CD%C9%D2'),
    # (only bytes of the special-query set are percent-encoded: 本's trail byte is '{')
    ('shift_jis', '/s?q=\u65e5\u672c', 'http://h.com/s?q=%93%FA%96{'),
    # ... a character it cannot hold as &#N; ...
    ('windows-1252', '/s?q=\u65e5', 'http://h.com/s?q=%26%2326085%3B'),
    # ... while the path and the fragment stay UTF-8, and UTF-8/UTF-16 pages use UTF-8.
    ('windows-1252', '/caf\u00e9?q=\u00e9#\u00e9', 'http://h.com/caf%C3%A9?q=%E9#%C3%A9'),
    ('windows-1252', '/a#x?q=\u00e9', 'http://h.com/a#x?q=%C3%A9'),
    ('utf-16le', '/s?q=caf\u00e9', 'http://h.com/s?q=caf%C3%A9'),
    (None, '/s?q=caf\u00e9', 'http://h.com/s?q=caf%C3%A9'),
    ('no-such-encoding', '/s?q=caf\u00e9', 'http://h.com/s?q=caf%C3%A9'),
])
def test_a_links_query_is_encoded_in_the_documents_encoding(tmp_path, encoding, href, url):
    from jobs.lib import html
    page = '<a href="%s">x</a>' % href
    assert html.parse(page, 'http://h.com/', encoding=encoding)['links'][0]['url'] == url
    # Through the parse job (the fetch recorded the document's encoding; links are
    # kept without their fragment).
    docs = [{'kind': 'doc', 'url': 'http://h.com/', 'status': 'fetched', 'encoding': encoding,
             'final_url': 'http://h.com/', 'body': page, 'headers': {}}]
    out, _ = run_job(MRParse, _conf_file(tmp_path), docs)
    assert [l['url'] for l in out[0]['links']] == [url.split('#')[0]]


def test_links_to_types_no_parser_reads_are_denied_by_default_unless_kept():
    """The default deny_extensions (Scrapy's IGNORED_EXTENSIONS and more): images,
    media, archives, office files, executables, fonts. A type kept with fetch.keep_types
    is followed; HTML and extension-less paths always are."""
    default = filters.LinkFilter.for_conf(config.load(overrides=['parse.parsers=[]']))
    denied = ['http://a.com/i.png', 'http://a.com/I.JPG?size=2', 'http://a.com/v.mp4',
              'http://a.com/a.tgz', 'http://a.com/f.woff2', 'http://a.com/setup.exe',
              'http://a.com/report.pdf', 'http://a.com/s.css']
    kept = ['http://a.com/', 'http://a.com/page.html', 'http://a.com/dir/',
            'http://a.com/png', 'http://a.com/x.png/', 'http://a.com/doc.php?f=a.pdf',
            'http://a.com/sitemap.xml.gz']
    assert [default.reason(u) for u in denied] == ['extension'] * len(denied)
    assert [default.reason(u) for u in kept] == [None] * len(kept)
    pdf = filters.LinkFilter.for_conf(config.load(overrides=[
        'parse.parsers=[]', 'fetch.keep_types=["application/pdf"]']))
    assert pdf.reason('http://a.com/report.pdf') is None
    assert pdf.reason('http://a.com/i.png') == 'extension'
    everything = filters.LinkFilter.for_conf(config.load(overrides=['filter.deny_extensions=[]']))
    assert [everything.reason(u) for u in denied] == [None] * len(denied)
