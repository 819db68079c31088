"""Property-based tests (hypothesis) of the pure helpers that hostile input reaches first:
URL resolution and normalisation, robots.txt matching, the XML page writer.

Bounded for CI: a few hundred examples each with a fixed seed (``derandomize``), so a
run takes seconds and fails the same way twice. For a long random search set
``MRCRAWL_HYPOTHESIS=long`` (20 000 examples per test, random seeds).
"""
import pytest
import os
import re
import xml.etree.ElementTree as ET
from datetime import timedelta

import ada_url
from hypothesis import HealthCheck, example, given, settings, strategies as st

from jobs.lib import robots, urls, xmlpage

pytestmark = pytest.mark.unit

settings.register_profile('mrcrawl-ci', max_examples=300, deadline=timedelta(seconds=1),
                          derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('mrcrawl-long', max_examples=20000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
PROFILE = 'mrcrawl-long' if os.environ.get('MRCRAWL_HYPOTHESIS') == 'long' else 'mrcrawl-ci'


def bounded(**kw):
    """The profile's settings, with per-test overrides."""
    return settings(settings.get_profile(PROFILE), **kw)


# -- strategies -------------------------------------------------------------------------

#: Every code point, lone surrogates and C0/C1 controls included.
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF)
#: Characters that break parsers and writers, drawn often.
NASTY = st.sampled_from(['\x00', '\x01', '\x0b', '\x0c', '\x1b', '\x7f', '\x85', '\t', '\n',
                         '\r', '\r\n', '\ud800', '\udfff', '\ud83d', '\ufffe', '\uffff',
                         '\u2028', '\ufeff', ']]>', '<![CDATA[', '<', '>', '&', '&amp;',
                         '"', "'", '<!--', '-->', '<?xml?>', '<!DOCTYPE x [<!ENTITY e "x">]>',
                         '&e;', '\U0001F600', '%', '%2e', '%ZZ', '\\', '#', '?', '/', '..'])
HOSTILE_TEXT = st.lists(st.one_of(ANY_CHAR, NASTY), max_size=40).map(''.join)
SHORT_HOSTILE_TEXT = st.lists(st.one_of(ANY_CHAR, NASTY), max_size=12).map(''.join)

SCHEMES = st.sampled_from(['http', 'https', 'HTTP', 'HtTpS', 'ftp', 'file', 'gopher', 'data',
                           'javascript', 'mailto', 'ws', 'blob', 'about', 'x'])
HOSTS = st.sampled_from([
    'example.com', 'EXAMPLE.com', 'Sub.Example.COM.', 'xn--caf-dma.example', 'caf\u00e9.example',
    'M\u00fcnchen.de', 'stra\u00dfe.de', '\u0130stanbul.example', 'a..b', 'a_b.example',
    '127.0.0.1', '0x7f.1', '2130706433', '0177.0.0.1', '0x7f.0.0.1', '1.2.3', '256.1.1.1',
    '[::1]', '[::ffff:127.0.0.1]', '[FE80::1%25eth0]', '[v1.x]', '[1:2', 'user:pw@host.example',
    '@host.example', 'host.example:0', 'host.example:65535', 'host.example:65536',
    'host.example:80', 'host.example:443', 'ex ample.com', 'ex%41mple.com', 'a%2eb.example',
    '%00.example', '\u3002example\u3002com', ''])
SEGMENT = st.one_of(
    st.sampled_from(['', '.', '..', '%2e', '%2E%2e', '.%2e', 'a', 'B', '~u', '%7e', '%7E',
                     '%2f', '%zz', '%', ';jsessionid=1', 'p;x=1', 'a b', '\\', 'caf\u00e9',
                     '\t', '\n', 'index.html']),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x2FF), max_size=6))
QUERY = st.one_of(st.just(''), st.lists(st.sampled_from(
    ['a=1', 'b=2', 'A=3', 'utm_source=x', 'UTM_Medium=y', 'gclid=z', 'jsessionid=j', 'q=a+b',
     'q=%20', 'q=%7e', 'e=', 'f', '', '=v', 'x=%zz', 'k=caf\u00e9', '?']),
    max_size=5).map(lambda p: '?' + '&'.join(p)))
FRAGMENT = st.sampled_from(['', '#', '#f', '#a#b', '#caf\u00e9', '#%zz'])


@st.composite
def url_like(draw):
    """Absolute URLs built from the parts the URL standard treats specially."""
    scheme = draw(SCHEMES)
    sep = draw(st.sampled_from(['://', ':', ':/', ':///', ':\\\\', '://\t']))
    path = '/'.join(draw(st.lists(SEGMENT, max_size=5)))
    pre = draw(st.sampled_from(['', '', ' ', '\t', '\x00', '\n ']))
    return '%s%s%s%s/%s%s%s' % (pre, scheme, sep, draw(HOSTS), path, draw(QUERY),
                                draw(FRAGMENT))


@st.composite
def href_like(draw):
    """What an href attribute holds: relative references, absolute URLs, junk."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(url_like())
    if kind == 1:
        lead = draw(st.sampled_from(['', '/', '//', './', '../', '?', '#', '\\', '/\\',
                                     '///', ' ']))
        return lead + '/'.join(draw(st.lists(SEGMENT, max_size=4))) + draw(QUERY) + \
            draw(FRAGMENT)
    if kind == 2:
        return draw(st.sampled_from(['javascript:alert(1)', 'data:text/html,<b>x</b>',
                                     'file:///etc/passwd', 'ftp://h/f', 'gopher://h:70/1',
                                     'mailto:a@b', 'JaVaScRiPt:x', ' javascript:x',
                                     'java\tscript:x', 'http:', 'http:/x', 'https:x',
                                     'http://', '//', '', ' ']))
    return draw(HOSTILE_TEXT)


BASES = st.one_of(url_like(), st.sampled_from([
    'http://a.example/dir/page.html?q=1#f', 'https://A.example:443/', 'http://[::1]:8080/x/',
    'http://a.example', 'http://a.example/a/b/c/', 'http://a.example/%7Euser/']))


def _check_normalised(n):
    """What every normalize() result must be."""
    assert n.startswith(('http://', 'https://')), n
    assert '#' not in n, n
    parsed = ada_url.URL(n)             # ada accepts it ...
    assert parsed.href == n             # ... and serialises it unchanged
    assert parsed.hostname and parsed.hostname == parsed.hostname.lower(), n
    assert not parsed.username and not parsed.password, n
    assert not any(c in n for c in ' \t\r\n\x00'), n


# -- URLs ---------------------------------------------------------------------------------

@bounded()
@given(st.one_of(url_like(), HOSTILE_TEXT))
@example('HTTP://ExAmple.COM:80/a/./b/../c#frag')
@example('http://0x7f.0.0.1/%2e%2E/x?#')
@example('http://[::ffff:127.0.0.1]/?utm_source=x')
def test_normalize_result_is_a_canonical_http_url_and_idempotent(url):
    for opts in ({}, {'sort_query': True, 'strip_params': ('utm_*', 'gclid', 'jsessionid')}):
        n = urls.normalize(url, **opts)
        if n is not None:
            _check_normalised(n)
            assert urls.normalize(n, **opts) == n, (url, n)


@bounded()
@given(BASES, href_like())
@example('http://a.example/x/y.html', 'file:///etc/passwd')
@example('http://a.example/x/y.html', '//127.0.0.1:22/')
def test_resolve_then_normalize_is_stable(base, href):
    r = urls.resolve(base, href)
    if r is None:
        return
    assert ada_url.URL(r).href == r          # resolve gives a URL ada accepts as it is
    n = urls.normalize(r)
    if n is not None:
        _check_normalised(n)
        assert urls.normalize(n) == n
        assert urls.normalize(urls.resolve(base, n)) == n     # an absolute link is itself
    # PageResolver (the parse job's fast path) agrees with resolve on every input.
    assert urls.PageResolver(base)(href) == r


@bounded()
@given(BASES, st.sampled_from(['file:', 'ftp:', 'gopher:', 'data:', 'javascript:', 'mailto:',
                               'ws:', 'blob:', 'about:', 'FILE:', ' JavaScript:',
                               'java\nscript:', 'jav&#x09;ascript:']),
       st.sampled_from(['', '//', '///', '/etc/passwd', '//127.0.0.1/x', 'alert(1)',
                        'text/html,<b>x', 'a@b.example']))
def test_no_scheme_but_http_and_https_survives_normalisation(base, scheme, rest):
    r = urls.resolve(base, scheme + rest)
    n = urls.normalize(r) if r is not None else None
    # Either refused, or (a scheme-less spelling the URL standard reads as a relative
    # path, like "jav&#x09;ascript:") an http(s) URL on the base's own scheme.
    assert n is None or (n.startswith(('http://', 'https://')) and
                         scheme.strip().lower().rstrip(':') not in ('file', 'ftp', 'gopher',
                                                                   'data', 'javascript',
                                                                   'mailto', 'ws', 'blob',
                                                                   'about')), (r, n)


# -- robots.txt ---------------------------------------------------------------------------

ROBOTS_LINE = st.one_of(
    st.sampled_from(['User-agent: *', 'User-agent: mrcrawl', 'user-agent:MRCRAWL/2',
                     'Disallow: /', 'Disallow:', 'Allow: /a', 'Disallow: /*.pdf$',
                     'Disallow: /%', 'Disallow: /%zz', 'Allow: /$', 'Disallow: *',
                     'Crawl-delay: 2', 'Crawl-delay: -1', 'Crawl-delay: nan',
                     'Crawl-delay: 1e400', 'Crawl-delay: x', 'Request-rate: 1/0',
                     'Request-rate: 9/', 'Visit-time: 2500-9999', 'Sitemap: ',
                     'Sitemap: http://[bad', 'Host: x', '# comment', '\ufeffUser-agent: *',
                     'Disallow: /caf\u00e9', 'Disallow: /\ud800', 'Allow: /\x00']),
    HOSTILE_TEXT)
ROBOTS_TEXT = st.lists(ROBOTS_LINE, max_size=12).map('\n'.join)


@bounded()
@given(st.one_of(ROBOTS_TEXT, HOSTILE_TEXT, st.binary(max_size=300),
                 ROBOTS_TEXT.map(lambda t: t.encode('utf-8', 'surrogatepass'))),
       st.one_of(st.just('mrcrawl/0.1 (+http://x)'), HOSTILE_TEXT),
       st.one_of(url_like(), HOSTILE_TEXT))
def test_robots_never_raise_on_any_input(robots_txt, user_agent, url):
    assert robots.can_fetch(robots_txt, user_agent, url) in (True, False)
    rules = robots.Rules(robots_txt, user_agent)
    assert rules.allowed(url) in (True, False)
    delay = rules.crawl_delay()
    assert delay is None or isinstance(delay, float)
    assert all(isinstance(s, str) for s in rules.sitemaps())


PATH_CHARS = 'ab/'
RULE_PATH = st.text(alphabet=PATH_CHARS, min_size=0, max_size=5).map(lambda p: '/' + p)
WILD_PATH = st.text(alphabet=PATH_CHARS + '*', min_size=0, max_size=5).flatmap(
    lambda p: st.sampled_from(['/' + p, '/' + p + '$']))


def _reference_allowed(rules, path):
    """RFC 9309 2.2.2 on one group: the longest matching pattern wins; on a tie, allow."""
    best = None
    for allow, pattern in rules:
        anchored = pattern.endswith('$')
        body = pattern[:-1] if anchored else pattern
        regex = '.*'.join(re.escape(part) for part in body.split('*'))
        if re.match(regex + ('\\Z' if anchored else ''), path):
            rank = (len(pattern), allow)
            best = rank if best is None or rank > best else best
    return True if best is None else best[1]


def _robots(groups):
    lines = []
    for agent, rules in groups:
        lines.append('User-agent: %s' % agent)
        lines += ['%s: %s' % ('Allow' if allow else 'Disallow', p) for allow, p in rules]
        lines.append('')
    return '\n'.join(lines)


@bounded(max_examples=400)
@given(st.lists(st.tuples(st.booleans(), RULE_PATH), max_size=6),
       st.lists(st.tuples(st.booleans(), WILD_PATH), max_size=3),
       st.text(alphabet=PATH_CHARS, max_size=8).map(lambda p: '/' + p),
       st.booleans())
@example([(False, '/a'), (True, '/a')], [], '/ab', False)       # a tie: allow wins
@example([(False, '/'), (True, '/ab')], [], '/ab/b', True)
@example([], [(False, '/*b$'), (True, '/a*')], '/ab', False)
def test_robots_agree_with_longest_match_reference(literal, wild, path, own_group):
    rules = literal + wild
    # Our own group (product token "mrcrawl") when there is one, else "*"; the other
    # group must be ignored whatever it says.
    if own_group:
        groups = [('*', [(True, '/')] + [(not a, p) for a, p in rules]), ('mrcrawl', rules)]
    else:
        groups = [('otherbot', [(False, '/')]), ('*', rules)]
    text = _robots(groups)
    url = 'http://h.example' + path
    expected = _reference_allowed(rules, path)
    assert robots.can_fetch(text, 'mrcrawl/0.1 (+http://x)', url) is expected, (text, path)
    assert robots.Rules(text.encode(), 'mrcrawl/0.1').allowed(url) is expected


# -- the XML writer -----------------------------------------------------------------------

_XML_CHAR_RE = re.compile('[\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def _xml_char(c):
    return bool(_XML_CHAR_RE.fullmatch(c))


FIELD_VALUE = st.one_of(st.none(), SHORT_HOSTILE_TEXT, st.integers(), st.booleans(),
                        st.floats(allow_nan=True, allow_infinity=True),
                        st.lists(SHORT_HOSTILE_TEXT, max_size=3))


@st.composite
def hostile_page(draw):
    t = SHORT_HOSTILE_TEXT
    page = {'kind': 'merged', 'url': draw(t), 'status': draw(t),
            'http_status': draw(st.one_of(st.none(), st.integers(0, 999))),
            'fetch_time': draw(t), 'depth': draw(st.integers(0, 99)),
            'layer': draw(st.integers(0, 99)), 'content_type': draw(t),
            'encoding': draw(t), 'length': draw(st.integers(0, 10 ** 9)),
            'digest': draw(t), 'title': draw(st.one_of(st.none(), t)), 'text': draw(t),
            'links': draw(st.lists(st.fixed_dictionaries(
                {'url': t, 'text': st.one_of(st.none(), t), 'rel': st.one_of(st.none(), t)}),
                max_size=4)),
            'headings': draw(st.lists(st.fixed_dictionaries(
                {'text': st.one_of(st.none(), t), 'level': st.integers(1, 6)}), max_size=3)),
            'anchors': draw(st.lists(st.fixed_dictionaries(
                {'from': t, 'text': st.one_of(st.none(), t)}), max_size=3)),
            'duplicates': draw(st.lists(t, max_size=3))}
    if draw(st.booleans()):
        page['site'] = draw(t)
        page['fields_checksum'] = draw(t)
        page['fields'] = draw(st.dictionaries(t, FIELD_VALUE, max_size=4))
    return page


@bounded(max_examples=250)
@given(hostile_page())
@example({'kind': 'merged', 'url': 'http://x/]]>\ud800\x00\r\n', 'status': '<a>&',
          'fetch_time': '"', 'title': '<![CDATA[ ]]> \udfff', 'text': '\ufffe\x0b\r \n\t',
          'links': [{'url': '"/><x/>', 'text': '\x85\u2028', 'rel': "'"}],
          'duplicates': ['\x1b'], 'site': '\ud83d', 'fields_checksum': '&#0;',
          'fields': {'<n>': ['\x00', ']]>'], '\r': None, 'f': 1.5, 'b': True}})
def test_page_xml_is_one_line_and_round_trips(page):
    raw = xmlpage.page_xml_bytes(page)                     # what MRHtmlToXml writes
    assert b'\n' not in raw and b'\r' not in raw          # one line per page, always
    out = raw.decode('utf-8')                              # UTF-8, no declaration
    assert out == xmlpage.page_xml(page)
    root = ET.fromstring(out)                              # one well-formed document
    assert root.tag == 'page'
    c = xmlpage.clean

    def same(got, sent):
        assert (got or '') == c(sent), (got, sent)

    same(root.findtext('url'), page['url'])
    same(root.findtext('title'), page['title'] or '')
    same(root.findtext('text'), page['text'])
    fetch = root.find('fetch')
    same(fetch.get('status'), page['status'])
    same(fetch.get('time'), page['fetch_time'])
    same(fetch.findtext('content_type'), page.get('content_type') or '')
    same(fetch.findtext('encoding'), page.get('encoding') or '')
    same(fetch.findtext('digest'), page.get('digest') or '')
    links = root.find('links').findall('link')
    assert len(links) == len(page['links'])
    for el, link in zip(links, page['links']):
        same(el.get('href'), link['url'])
        same(el.text, link['text'] or '')
        assert el.get('rel') == (c(link['rel']) if link['rel'] else None)
    heads = root.find('headings').findall('h')
    assert [(h.get('level'), h.text or '') for h in heads] == [
        (str(h['level']), c(h['text'] or '')) for h in page.get('headings', ())]
    anchors = root.find('anchors').findall('anchor')
    assert [(a.get('from'), a.text or '') for a in anchors] == [
        (c(a['from']), c(a['text'] or '')) for a in page.get('anchors', ())]
    assert [u.text or '' for u in root.find('duplicates')] == [c(u) for u in
                                                                page['duplicates']]
    if 'fields' in page:
        fields = root.find('fields')
        same(fields.get('site'), page['site'])
        same(fields.get('checksum'), page['fields_checksum'])
        got = fields.findall('field')
        assert [f.get('name') for f in got] == [c(k) for k in page['fields']]
        for el, value in zip(got, page['fields'].values()):
            if value is None:
                assert el.get('null') == 'true'
            elif isinstance(value, list):
                assert [i.text or '' for i in el] == [c(v) for v in value]
            else:
                same(el.text, str(value))


@bounded()
@given(HOSTILE_TEXT)
def test_clean_removes_exactly_what_xml_cannot_hold(text):
    assert xmlpage.clean(text) == ''.join(ch for ch in text if _xml_char(ch))
