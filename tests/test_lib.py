"""Unit tests of the pure helpers in jobs/lib."""
import xml.etree.ElementTree as ET

import pytest

from jobs.lib import encoding, html, robots, urls, xmlpage

pytestmark = pytest.mark.unit


@pytest.mark.parametrize('base,href,expected', [
    ('http://a.com/x/y.html', '../z.html', 'http://a.com/z.html'),
    ('http://a.com/x/y.html', '//b.org/p', 'http://b.org/p'),
    ('http://a.com/x/y.html', '?q=1', 'http://a.com/x/y.html?q=1'),
    ('http://a.com/x/', '  z.html\n', 'http://a.com/x/z.html'),
    ('http://a.com/', 'http://[bad', None),
])
def test_resolve(base, href, expected):
    assert urls.resolve(base, href) == expected


@pytest.mark.parametrize('url,expected', [
    ('HTTP://ExAmple.COM:80/a/./b/../c#frag', 'http://example.com/a/c'),
    ('https://example.com:443', 'https://example.com/'),
    ('http://bücher.de/', 'http://xn--bcher-kva.de/'),
    ('http://user:pw@example.com/', 'http://example.com/'),
    ('http://example.com/a b', 'http://example.com/a%20b'),
    ('http://0x7f.1/', 'http://127.0.0.1/'),
    ('ftp://example.com/', None),
    ('javascript:alert(1)', None),
    ('not a url', None),
    ('', None),
])
def test_normalize(url, expected):
    assert urls.normalize(url) == expected


def test_host_and_origin():
    assert urls.host('http://a.com:8080/x?y') == 'a.com:8080'
    assert urls.origin('https://a.com/x/y') == 'https://a.com'


ROBOTS = '''
User-agent: otherbot
Disallow: /

User-agent: mrcrawl
Disallow: /private/
Allow: /private/open
Disallow: /*.pdf$
Crawl-delay: 2
Sitemap: http://a.com/sitemap.xml
'''


@pytest.mark.parametrize('url,allowed', [
    ('http://a.com/', True),
    ('http://a.com/private/x', False),
    ('http://a.com/private/open/page', True),
    ('http://a.com/doc.pdf', False),
    ('http://a.com/doc.pdf?x=1', True),
])
def test_robots_can_fetch(url, allowed):
    assert robots.can_fetch(ROBOTS, 'mrcrawl/0.1 (+x)', url) is allowed
    assert robots.can_fetch(ROBOTS.encode(), 'mrcrawl/0.1', url) is allowed


def test_robots_other_agent_group_and_rules_object():
    assert robots.can_fetch(ROBOTS, 'otherbot/1', 'http://a.com/') is False
    rules = robots.Rules(ROBOTS, 'mrcrawl/0.1')
    assert rules.crawl_delay() == 2.0
    assert rules.sitemaps() == ['http://a.com/sitemap.xml']
    assert robots.Rules(allow_all=True).allowed('http://a.com/private/x')
    assert not robots.Rules(deny_all=True).allowed('http://a.com/')


@pytest.mark.parametrize('text,bot,url,allowed', [
    # RFC 9309 2.2.4: lines that are not group members (Sitemap, unknown keys, comments,
    # blank lines) do not end a group: a and b share "Disallow: /" in each of these.
    ('User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /\n', 'a', 'http://x/', False),
    ('User-agent: a\nSitemap: http://x/s.xml\nUser-agent: b\nDisallow: /\n', 'a',
     'http://x/', False),
    ('User-agent: a\n# note\n\nUser-agent: b\nDisallow: /\n', 'a', 'http://x/', False),
    # ... nor does one inside a group end its rules.
    ('User-agent: a\nDisallow: /x\nNoindex: /z\nDisallow: /y\n', 'a', 'http://x/y', False),
    ('User-agent: a\nDisallow: /x\nFoo: bar\nUser-agent: b\nDisallow: /\n', 'b',
     'http://x/x', False),
    # A user-agent line after rules starts a new group.
    ('User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /\n', 'a', 'http://x/', True),
    # Keys are case-insensitive; a line without a colon is kept for Protego to judge.
    ('USER-AGENT: a\nDISALLOW: /\n', 'a', 'http://x/', False),
])
def test_robots_group_rules_follow_rfc_9309(text, bot, url, allowed):
    assert robots.can_fetch(text, bot + '/1.0', url) is allowed


def test_robots_known_keys_are_the_ones_protego_reads():
    """robots.KNOWN_KEYS copies Protego's directive names (private in protego 0.7): if an
    upgrade reads another key, lines with it would be dropped before Protego sees them."""
    from protego import _protego
    assert robots.KNOWN_KEYS == _protego._ALL_DIRECTIVES


@pytest.mark.parametrize('body,ctype,expected', [
    (b'abc', 'text/html; charset=ISO-8859-1', 'windows-1252'),
    (b'\xef\xbb\xbfabc', 'text/html; charset=latin1', 'utf-8'),   # BOM wins
    (b'<meta charset="shift_jis">', None, 'shift_jis'),
    (b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', None, 'koi8-r'),
    (b'<meta charset="utf-16">', None, 'utf-8'),
    ('caf\u00e9'.encode('utf-8'), None, 'utf-8'),
    (b'abc', 'text/html; charset=bogus-charset', 'utf-8'),
])
def test_encoding_sniff(body, ctype, expected):
    assert encoding.sniff(body, ctype) == expected


def test_decode_replaces_bad_bytes():
    text, name = encoding.decode(b'ok \xff\xfe', 'text/html; charset=utf-8')
    assert name == 'utf-8' and text.startswith('ok ') and '\ufffd' in text


def test_extract_links_base_anchor_rel_and_malformed_html():
    page = ('<html><head><base href="/sub/"><title>T</title></head><body>'
            '<a href="x.html#f" rel="nofollow">anchor  <b>text</b></a>'
            '<table><tr><td><a href=//other.org/y>y<td><a href="javascript:0">js</a>'
            '<iframe src="if.html"></iframe><area href="a.html" alt="A">'
            '<p>unclosed <a href="/top">top')
    links = html.extract_links(page, 'http://h.com/p/q.html')
    assert [l['url'] for l in links] == [
        'http://h.com/sub/x.html#f', 'http://other.org/y', 'javascript:0',
        'http://h.com/sub/if.html', 'http://h.com/sub/a.html', 'http://h.com/top']
    assert links[0]['text'] == 'anchor text' and links[0]['rel'] == 'nofollow'


def test_first_base_href_counts_wherever_it_stands():
    # A <base> in the body (after links) is still the document's base, for the links
    # before it too; one before <body> goes to <head> and wins over a later one.
    late = '<p><a href=a.html>a</a><meta http-equiv=refresh content="0;r.html"></p>' \
           '<base href=/sub/><a href=b.html>b</a><base href=/other/>'
    assert [l['url'] for l in html.extract_links(late, 'http://h/x/y')] == [
        'http://h/sub/a.html', 'http://h/sub/r.html', 'http://h/sub/b.html']
    early = '<title>t</title></head><base href=/h/><body><base href=/sub/><a href=b>b</a>'
    assert [l['url'] for l in html.extract_links(early, 'http://h/x/y')] == ['http://h/h/b']
    assert html.parse(late, 'http://h/x/y')['links'][0]['url'] == 'http://h/sub/a.html'


def test_parse_title_text_robots_meta_refresh_canonical():
    page = ('<html><head><title> Hi  there </title><meta name="robots" content="NOINDEX">'
            '<link rel="canonical" href="/canon"><meta http-equiv="refresh" content="5; url=/next">'
            '<script>var hidden = 1;</script></head><body><p>Body <i>text</i></p>'
            '<style>.x{}</style></body></html>')
    parsed = html.parse(page, 'http://h.com/a/b')
    assert parsed['title'] == 'Hi there'
    assert parsed['text'] == 'Body text'
    assert parsed['noindex'] and not parsed['nofollow']
    assert parsed['canonical'] == 'http://h.com/canon'
    assert [l['url'] for l in parsed['links']] == ['http://h.com/next']


def test_xml_page_survives_hostile_text():
    page = {'url': 'http://h.com/a?x=1&y=2', 'status': 'fetched', 'http_status': 200,
            'fetch_time': '2026-11-30T00:00:00Z', 'depth': 1, 'layer': 1,
            'title': 'A <b>title</b> ]]> & \x00\x1b\ud800 more',
            'text': 'line one\nline two\r\n<script>x</script>',
            'links': [{'url': 'http://h.com/b"c', 'text': 'B\x07', 'rel': ''}],
            'duplicates': ['http://h.com/dup']}
    doc = xmlpage.page_xml(page)
    assert '\n' not in doc
    root = ET.fromstring(doc)
    assert root.find('title').text == 'A <b>title</b> ]]> &  more'
    assert root.find('text').text == 'line one\nline two\r\n<script>x</script>'
    assert root.find('links/link').get('href') == 'http://h.com/b"c'
    assert root.find('duplicates/url').text == 'http://h.com/dup'


def test_robots_answers_false_for_what_cannot_be_a_url():
    """Found by hypothesis (test_properties): Protego raised on these."""
    from jobs.lib import robots
    txt = 'User-agent: *\nDisallow: /x\n'
    assert robots.can_fetch(txt, 'mrcrawl', '%2e\ud800') is False
    assert robots.can_fetch(txt, 'mrcrawl', 'http://[1:2/#') is False
    assert robots.Rules(txt, 'mrcrawl').allowed('http://[1:2/#') is False
    assert robots.can_fetch(txt, 'mrcrawl', 'http://a.test/y') is True
    assert robots.can_fetch(txt, 'mrcrawl', 'http://a.test/x') is False


def test_watchdog_fires_armed_deadlines_only_and_on_time():
    """jobs.lib.watchdog.Watchdog: an entry armed after a later one still fires at its
    own deadline; disarmed entries never fire and leave the heap without waiting for
    their deadlines; disarm reports whether the entry had fired."""
    import threading
    import time
    from jobs.lib.watchdog import Watchdog
    dog = Watchdog()
    fired = []
    done = threading.Event()
    now = time.monotonic()
    stale = [dog.arm(now + 60.0, lambda: fired.append('stale')) for _ in range(500)]
    late = dog.arm(now + 0.6, lambda: (fired.append('late'), done.set()))
    early = dog.arm(now + 0.2, lambda: fired.append('early'))
    for entry in stale:
        assert dog.disarm(entry) is False
    assert done.wait(5.0)
    assert fired == ['early', 'late']
    assert time.monotonic() - now >= 0.6
    assert dog.disarm(early) is True and dog.disarm(late) is True
    dog.arm(time.monotonic() + 0.05, lambda: None)     # wakes the thread once more
    deadline = time.monotonic() + 5.0
    while dog._heap and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dog._heap == []        # the 500 disarmed entries did not wait for 60 s
    assert fired == ['early', 'late']


def test_counter_names_live_in_counters_py_only():
    """Every counter name is a constant (or a helper's result) of jobs/lib/counters.py,
    and every constant there is used: no ``'..._total'`` literal elsewhere in jobs/ and
    drivers/. jobs/inverted_index.py is exempt: the example downstream job imports
    nothing of mrcrawl on purpose."""
    import ast
    import glob
    import os
    import re
    from tests.helpers import ROOT
    name = re.compile(r'^[a-z0-9%][a-z0-9_%]*_total$')
    sources = {}
    for path in glob.glob(os.path.join(ROOT, 'jobs', '**', '*.py'), recursive=True) + \
            glob.glob(os.path.join(ROOT, 'drivers', '**', '*.py'), recursive=True):
        rel = os.path.relpath(path, ROOT)
        if rel not in ('jobs/lib/counters.py', 'jobs/inverted_index.py'):
            sources[rel] = open(path).read()
    literals = sorted('%s:%d %s' % (rel, node.lineno, node.value)
                      for rel, text in sources.items() for node in ast.walk(ast.parse(text))
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and name.match(node.value))
    assert literals == []
    constants = re.findall(r"^([A-Z][A-Z0-9_]*) = '",
                           open(os.path.join(ROOT, 'jobs/lib/counters.py')).read(), re.M)
    everything = '\n'.join(sources.values())
    assert len(constants) > 100
    assert [c for c in constants if not re.search(r'\bC\.%s\b' % c, everything)] == []


def test_bookkeeping_files_follow_the_umask_like_part_files(tmp_path):
    """LocalFS.write_text replaces a file atomically through mkstemp (mode 0600); the
    file it leaves (report.json, state.json...) has the mode any other file the crawl
    writes gets, as a part file written by open()."""
    import os
    from drivers.runtime.fs import LocalFS
    LocalFS().write_text(str(tmp_path / 'report.json'), '{}')
    with open(tmp_path / 'part-00000', 'w') as f:
        f.write('x')
    mode = os.stat(tmp_path / 'report.json').st_mode & 0o777
    assert mode == os.stat(tmp_path / 'part-00000').st_mode & 0o777


def test_code_stays_within_its_size_bars():
    """Each module of jobs/ and drivers/ opens with a docstring saying what lives there,
    and has no function longer than 70 lines (past it, a function is doing more than one
    thing). A module's size is not barred: it ends at a seam, and its imports go one way
    (tests/test_imports.py)."""
    import ast
    import glob
    import os
    from tests.helpers import ROOT
    too_long, undocumented = [], []
    for path in glob.glob(os.path.join(ROOT, 'jobs', '**', '*.py'), recursive=True) + \
            glob.glob(os.path.join(ROOT, 'drivers', '**', '*.py'), recursive=True):
        rel = os.path.relpath(path, ROOT)
        text = open(path).read()
        tree = ast.parse(text)
        if not ast.get_docstring(tree):
            undocumented.append(rel)
        too_long += ['%s:%d %s: %d lines' % (rel, node.lineno, node.name,
                                             node.end_lineno - node.lineno + 1)
                     for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.end_lineno - node.lineno + 1 > 70]
    assert undocumented == [] and too_long == []
