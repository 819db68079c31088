"""Conformance cases from the standards' own maintained test suites, run offline.

* robots.txt matching (RFC 9309): Google's ``robotstxt-spec-test`` compliance cases,
  asked through ``robots.Rules(body, user_agent).allowed(url)``, as the fetcher asks.
* URL parsing (WHATWG URL): web-platform-tests ``url/resources/urltestdata.json``,
  through ``urls.resolve``, ``urls.PageResolver`` and ``urls.normalize``.
* A link's query percent-encoded in the document's encoding, the fragment in UTF-8
  (WHATWG URL): web-platform-tests ``url/resources/percent-encoding.json``, through
  ``urls.resolve`` and ``urls.PageResolver``.

The data is vendored in tests/data/conformance/ (its README.md names each file's source
repository, commit, path and licence). Every case of a suite runs unless a rule below
says it does not apply to mrcrawl; each rule is written next to the loader that applies
it, and no case is left out by its id. ``test_*_counts`` check that each suite still
runs at least as many cases as it does today, so that it cannot become empty unnoticed.
"""
import base64
import collections
import json
import os
import re
from urllib.parse import urlsplit

import pytest

from jobs.lib import robots, urls

pytestmark = pytest.mark.unit

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'conformance')


def _load(name):
    with open(os.path.join(DATA, name), encoding='utf-8') as f:
        return json.load(f)


# -- robots.txt: google/robotstxt-spec-test -----------------------------------------------
#
# An expectation of the suite is left out when the first of these rules that holds says so
# (the names are the keys of ROBOTS_EXCLUDED):
#
# google-specific       The suite marks it ``test_type: GOOGLE_SPECIFIC``: behaviour of
#                       Google's parser that RFC 9309 does not ask for.
# not-utf8              The robots.txt bytes are not UTF-8 (a BOM cut short). RFC 9309
#                       section 2.3: the file MUST be UTF-8 encoded; what such bytes mean
#                       (the suite skips a partial BOM) is Google's parser's choice.
# not-a-product-token   The user agent asked about is not an RFC 9309 product token
#                       (section 2.2.1: only a-z, A-Z, "_" and "-"), e.g. "AB42bot", "Foo
#                       Bar" or "": no crawler, mrcrawl included (robots.product_token),
#                       can be one.
# truncated-group-name  The robots.txt has a user-agent line whose value is not a product
#                       token and the user agent asked about is that value's a-zA-Z_-
#                       prefix ("User-agent: AB42bot" asked for "AB", "User-agent:
#                       barbarbot*" asked for "barbarbot"). Google's parser reads such a
#                       line as naming the prefix; RFC 9309 has no such reading.
# raw-non-ascii-url     The URL asked about has characters that are not percent-encoded
#                       (".../foo/bar/ツ"). The suite's own note on these cases: "It's up
#                       to the caller to percent encode a URL before passing it to the
#                       parser"; mrcrawl only asks about normalised URLs (urls.normalize
#                       percent-encodes them).
# escaped-unreserved    An Allow/Disallow path percent-encodes an unreserved character
#                       ("/foo/bar/%62%61%7A"). The suite's explanation calls this illegal
#                       under RFC 3986 and "should not be relied on"; RFC 9309 section
#                       2.2.2 has such octets of the URI decoded before comparison, which
#                       the suite's pair of expectations (".../baz" disallowed,
#                       ".../%62%61%7A" allowed) contradicts.
#
# One rule changes an expectation instead of leaving it out:
#
# robots-txt-path       A URL whose path is /robots.txt is expected ALLOWED whatever the
#                       suite says: RFC 9309 section 2.2.2, "The /robots.txt URI is
#                       implicitly allowed." (Google's parser has no such exception.)

#: RFC 9309 section 2.2.1: the product token's characters.
_PRODUCT_TOKEN = re.compile(r'[A-Za-z_-]+\Z')
_TOKEN_PREFIX = re.compile(r'[A-Za-z_-]*')
#: A robots.txt line: key, colon, value (the value stops at a comment).
_LINE = re.compile(r'\s*([^:#]*?)\s*:\s*([^#]*)')
#: A percent-escape of an RFC 3986 unreserved character (ALPHA, DIGIT, "-", ".", "_", "~").
_ESCAPED_UNRESERVED = re.compile(
    r'%(?:2[DdEe]|3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|5[Ff]|6[1-9A-Fa-f]|7[0-9Aa]|7[Ee])')
#: The user agent string the crawl sends is "token/version (+url)"; robots.Rules reads the
#: token from it (robots.product_token), so each case is also asked that way.
_UA_SUFFIX = '/1.0 (+https://example.com/bot)'

RobotsCase = collections.namedtuple(
    'RobotsCase', 'source body useragent url expected suite_expected explanation')


def _lines(text):
    """``(key lower-cased, value)`` of each line of *text* that has a key."""
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            yield m.group(1).lower(), m.group(2).strip()


def _robots_exclusion(expectation, text):
    """The name of the rule that leaves *expectation* out, or None when it applies."""
    useragent, url = expectation['useragent'], expectation['testurl']
    if expectation.get('test_type', 'STANDARD') != 'STANDARD':
        return 'google-specific'
    if text is None:
        return 'not-utf8'
    if not _PRODUCT_TOKEN.match(useragent):
        return 'not-a-product-token'
    for key, value in _lines(text):
        if key in ('user-agent', 'useragent', 'user agent') and value != '*' \
                and not _PRODUCT_TOKEN.match(value) \
                and _TOKEN_PREFIX.match(value).group().lower() == useragent.lower():
            return 'truncated-group-name'
    if not url.isascii():
        return 'raw-non-ascii-url'
    if any(key in ('allow', 'disallow') and _ESCAPED_UNRESERVED.search(value)
           for key, value in _lines(text)):
        return 'escaped-unreserved'
    return None


def _robots_cases():
    spec = _load('robotstxt-spec-test.json')
    cases, excluded, overridden = [], collections.Counter(), 0
    for spec_file in spec['files']:
        stem = spec_file['path'].rsplit('/', 1)[-1].replace('.textproto', '')
        for ti, test in enumerate(spec_file['tests']):
            if 'robotstxt_base64' in test:
                body = base64.b64decode(test['robotstxt_base64'])
            else:
                body = test['robotstxt'].encode('utf-8')
            try:
                text = body.decode('utf-8')
            except UnicodeDecodeError:
                text = None
            for ei, exp in enumerate(test['test_expectations']):
                reason = _robots_exclusion(exp, text)
                if reason is not None:
                    excluded[reason] += 1
                    continue
                suite_expected = exp['expected_outcome'] == 'ALLOWED'
                expected = suite_expected
                if urlsplit(exp['testurl']).path == '/robots.txt':
                    overridden += expected is not True
                    expected = True
                cases.append(pytest.param(
                    RobotsCase('%s test %d' % (spec_file['path'], ti), body,
                               exp['useragent'], exp['testurl'], expected, suite_expected,
                               exp.get('additional_explanation', '')),
                    id='%s[%d.%d]' % (stem, ti, ei)))
    return cases, excluded, overridden


#: The applicable cases; how many were left out, by rule; how many of the cases run have
#: their expectation changed by the robots-txt-path rule.
ROBOTS_CASES, ROBOTS_EXCLUDED, ROBOTS_OVERRIDDEN = _robots_cases()


def _word(allowed):
    return 'ALLOWED' if allowed else 'DISALLOWED'


@pytest.mark.parametrize('case', ROBOTS_CASES)
def test_robots_txt(case):
    rules = robots.Rules(case.body, case.useragent)
    answers = {
        'Rules(body, %r).allowed(url)' % case.useragent: rules.allowed(case.url),
        'Rules(body, %r).allowed(url)' % (case.useragent + _UA_SUFFIX):
            robots.Rules(case.body, case.useragent + _UA_SUFFIX).allowed(case.url),
    }
    normal = urls.normalize(case.url)
    if normal is not None:
        answers['Rules(body, %r).allowed(urls.normalize(url) = %r)' % (
            case.useragent, normal)] = rules.allowed(normal)
    wrong = {k: v for k, v in answers.items() if v is not case.expected}
    assert not wrong, '\n'.join(
        ['%s: robots.txt %r, user agent %r, URL %r' % (
            case.source, case.body, case.useragent, case.url),
         'expected %s%s' % (_word(case.expected),
                            '' if case.expected == case.suite_expected else
                            ' (RFC 9309 2.2.2; the suite says %s)'
                            % _word(case.suite_expected))]
        + ['  %s -> %s' % (k, _word(v)) for k, v in wrong.items()]
        + (['suite: ' + case.explanation] if case.explanation else []))


def test_robots_txt_counts():
    ran = len(ROBOTS_CASES)
    total = ran + sum(ROBOTS_EXCLUDED.values())
    print('robotstxt-spec-test: %d of %d expectations run (%d with the expectation of '
          'RFC 9309 for /robots.txt); left out: %s'
          % (ran, total, ROBOTS_OVERRIDDEN, dict(ROBOTS_EXCLUDED)))
    assert total >= 400
    assert ran >= 360


# -- URL parsing: web-platform-tests url/resources/urltestdata.json --------------------
#
# A case applies when
#
# * its base is null (an absolute URL: urls.normalize, urls.resolve(None, input)) or an
#   http(s) URL (a page the crawler fetched): mrcrawl resolves links on http(s) pages
#   only, so bases such as about:blank, file:, data: or non-special schemes do not apply;
# * it expects success and the result's scheme is http or https: the crawler fetches
#   nothing else (urls.normalize returns None for other schemes), so results such as
#   mailto:, javascript:, file: or non-special URLs do not apply;
# * or it expects failure (whatever the input's scheme): the crawler must reject what no
#   URL parser accepts (urls.resolve returns None).
#
# urls.normalize takes an absolute URL: it is checked on every successful case's href, on
# the input of the cases with a null base, and on the failures with a null base (None).
# It deliberately differs from the parser's href (see its docstring): it
# drops the fragment, the credentials and an empty "?", and makes percent-encoding
# consistent (escaped unreserved characters unescaped, other escapes in upper-case hex,
# RFC 3986 6.2.2). Rather than leaving those cases out, the expected normal form is built
# from the case's own protocol, host, pathname and search by exactly those documented
# changes (_normal_form).

_SPECIAL = ('http:', 'https:')


def _is_http(url):
    return url is not None and url.split(':', 1)[0].lower() + ':' in _SPECIAL


def _url_cases():
    data = _load('urltestdata.json')['cases']
    applicable, excluded = [], collections.Counter()
    for i, case in enumerate(data):
        if case['base'] is not None and not _is_http(case['base']):
            excluded['base not null or http(s)'] += 1
        elif not case.get('failure') and case['protocol'] not in _SPECIAL:
            excluded['result not http(s)'] += 1
        else:
            applicable.append(pytest.param(case, id='%d:%.50r' % (i, case['input'])))
    return applicable, excluded


URL_CASES, URL_EXCLUDED = _url_cases()
_UNRESERVED = frozenset('ABCDEFGHIJKLMNOPQRSTUVWXYZ'
                        'abcdefghijklmnopqrstuvwxyz0123456789-._~')


def _consistent(part):
    """RFC 3986 6.2.2: escaped unreserved characters unescaped, other escapes upper-case."""
    def sub(m):
        ch = chr(int(m.group(1), 16))
        return ch if ch in _UNRESERVED else '%' + m.group(1).upper()
    return re.sub(r'%([0-9A-Fa-f]{2})', sub, part)


def _normal_form(case):
    """The URL of a successful http(s) *case* as urls.normalize documents it: scheme,
    host[:port], path and non-empty query, with consistent percent-encoding."""
    query = case['search'][1:]
    return '%s//%s%s%s' % (case['protocol'], case['host'], _consistent(case['pathname']),
                           '?' + _consistent(query) if query else '')


@pytest.mark.parametrize('case', URL_CASES)
def test_url_parsing(case):
    expected = None if case.get('failure') else case['href']
    answers = {'urls.resolve(base, input)': urls.resolve(case['base'], case['input'])}
    if case['base'] is not None:
        answers['urls.PageResolver(base)(input)'] = urls.PageResolver(case['base'])(
            case['input'])
    wrong = {k: v for k, v in answers.items() if v != expected}
    assert not wrong, '\n'.join(
        ['input %r, base %r: expected %r' % (case['input'], case['base'], expected)]
        + ['  %s -> %r' % kv for kv in wrong.items()])


@pytest.mark.parametrize('case', [c for c in URL_CASES
                                  if not c.values[0].get('failure')
                                  or c.values[0]['base'] is None])
def test_url_normalize(case):
    if case.get('failure'):
        # An absolute URL that does not parse has no normal form.
        assert urls.normalize(case['input']) is None, case['input']
        return
    expected = _normal_form(case)
    sources = [case['href']] + ([case['input']] if case['base'] is None else [])
    answers = {'urls.normalize(%r)' % s: urls.normalize(s) for s in sources}
    answers['urls.normalize(urls.normalize(href))'] = urls.normalize(
        urls.normalize(case['href']) or '')
    wrong = {k: v for k, v in answers.items() if v != expected}
    assert not wrong, '\n'.join(
        ['input %r, base %r, href %r: expected normal form %r' % (
            case['input'], case['base'], case['href'], expected)]
        + ['  %s -> %r' % kv for kv in wrong.items()])


def test_url_counts():
    ran = len(URL_CASES)
    normalized = sum(1 for c in URL_CASES
                     if not c.values[0].get('failure') or c.values[0]['base'] is None)
    print('urltestdata: %d of %d cases run (%d also through normalize); left out: %s'
          % (ran, ran + sum(URL_EXCLUDED.values()), normalized, dict(URL_EXCLUDED)))
    assert ran + sum(URL_EXCLUDED.values()) >= 890
    assert ran >= 500
    assert normalized >= 450


# -- Query percent-encoding: web-platform-tests url/resources/percent-encoding.json ----
#
# Every case applies. As wpt's url/percent-encoding.window.js does, each input is put in
# the query and in the fragment of a link of a document in each encoding the case names
# (href "https://doesnotmatter.invalid/?INPUT#INPUT", wpt's resources/percent-encoding.py);
# the query must come out as that encoding's expected output and the fragment as the
# UTF-8 one. The encoding is given by the WHATWG name the case uses, which is the name
# encoding.sniff gives for a page. Two more forms of the same rule are checked: the same
# query and fragment in a page-relative link ("?INPUT#INPUT"), and, for UTF-8, a page
# with no known encoding (None).

_PAGE = 'http://example.test/dir/page.html'


def _percent_cases():
    cases = []
    for unit in _load('percent-encoding.json'):
        if isinstance(unit, str):           # a comment
            continue
        utf8 = unit['output']['utf-8']
        for encoding, output in sorted(unit['output'].items()):
            for enc in (encoding, None) if encoding == 'utf-8' else (encoding,):
                for form, href, expected in (
                        ('absolute', 'https://doesnotmatter.invalid/?%s#%s'
                         % (unit['input'], unit['input']),
                         'https://doesnotmatter.invalid/?%s#%s' % (output, utf8)),
                        ('relative', '?%s#%s' % (unit['input'], unit['input']),
                         '%s?%s#%s' % (_PAGE, output, utf8))):
                    cases.append(pytest.param(
                        unit['input'], enc, href, expected,
                        id='%r-%s-%s' % (unit['input'], enc, form)))
    return cases


PERCENT_CASES = _percent_cases()


@pytest.mark.parametrize('text, encoding, href, expected', PERCENT_CASES)
def test_query_percent_encoding(text, encoding, href, expected):
    answers = {
        'urls.resolve(page, href, %r)' % encoding: urls.resolve(_PAGE, href, encoding),
        'urls.PageResolver(page, %r)(href)' % encoding: urls.PageResolver(_PAGE, encoding)(
            href),
    }
    wrong = {k: v for k, v in answers.items() if v != expected}
    assert not wrong, '\n'.join(
        ['input %r in a %s document, href %r: expected %r' % (text, encoding, href,
                                                              expected)]
        + ['  %s -> %r' % kv for kv in wrong.items()])


def test_query_percent_encoding_counts():
    encodings = sorted({p.values[1] or 'none' for p in PERCENT_CASES})
    print('percent-encoding: %d checks over encodings %s' % (len(PERCENT_CASES), encodings))
    assert len(PERCENT_CASES) >= 46
    assert len(encodings) >= 9
