"""URL resolution and normalisation per the WHATWG URL standard (via ada-url).

``resolve(base, href)`` joins a link the way a browser does; ``normalize(url)`` gives the
one spelling that crawldb and in/ use, so equivalent spellings are one URL. Both return
None for what cannot be an http(s) URL. ``normalizer(conf)`` is ``normalize`` with the
crawl's configured query options (``parse.sort_query``, ``parse.strip_params``).
"""
import codecs
import fnmatch
import functools
import ipaddress
import re
from urllib.parse import unquote_plus

import ada_url

SCHEMES = ('http:', 'https:')
_WS = ' \t\n\r\f'


def query_encoder(encoding):
    """The document's encoding as the URL standard uses it for a link's query, or None
    when that is UTF-8 anyway (UTF-8 itself, UTF-16: the standard says UTF-8 for it,
    no encoding, or one Python does not know)."""
    if not encoding:
        return None
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return None
    return None if name in ('utf-8', 'utf-16', 'utf-16-be', 'utf-16-le') else name


#: Bytes the URL standard percent-encodes in a special URL's query (C0 controls,
#: space, ", #, ', <, > and all above 0x7E); the other bytes stay as they are.
_SPECIAL_QUERY_SET = frozenset(range(0x21)) | {0x22, 0x23, 0x27, 0x3C, 0x3E} | \
    frozenset(range(0x7F, 0x100))
#: Characters the Encoding Standard's encoder refuses where Python's codec maps them:
#: iso-2022-jp's SO, SI and ESC (an error reported as U+FFFD), gb18030's U+E5E5.
_ENCODER_ERRORS = {'iso2022_jp': {'\x0e': 0xFFFD, '\x0f': 0xFFFD, '\x1b': 0xFFFD},
                   'gb18030': {'\ue5e5': 0xE5E5}}


def _percent_bytes(data):
    return ''.join('%%%02X' % b if b in _SPECIAL_QUERY_SET else chr(b) for b in data)


def encode_query(href, encoding):
    """*href* with its query encoded in the document's *encoding* (a
    :func:`query_encoder` name), as the WHATWG URL standard does for an http(s) link of
    a page in that encoding ("percent-encode after encoding"): one encoder over the
    whole query, so an iso-2022-jp run has one escape sequence; only the bytes of the
    special-query set are percent-encoded; a character the encoding cannot represent
    becomes ``%26%23N%3B`` (``&#N;``), an iso-2022-jp run ended first. The path and the
    fragment stay UTF-8. Tests: the web-platform-tests percent-encoding suite."""
    q = href.find('?')
    frag = href.find('#')
    if q == -1 or -1 < frag < q:
        return href
    end = len(href) if frag == -1 else frag
    query = href[q + 1:end]
    refused = _ENCODER_ERRORS.get(encoding, {})
    if query.isascii() and not any(ch in query for ch in refused):
        return href      # ASCII is itself in every such encoding
    query = query.replace('\t', '').replace('\n', '').replace('\r', '')  # as the parser
    new_encoder = codecs.getincrementalencoder(encoding)
    encoder, out = new_encoder(), []
    for ch in query:
        error = refused.get(ch)
        if error is None:
            try:
                out.append(_percent_bytes(encoder.encode(ch)))
                continue
            except UnicodeEncodeError:
                error = ord(ch)
        out.append(_percent_bytes(encoder.encode('', final=True)))
        encoder = new_encoder()
        out.append('%%26%%23%d%%3B' % error)
    out.append(_percent_bytes(encoder.encode('', final=True)))
    return href[:q + 1] + ''.join(out) + href[end:]


def resolve(base, href, encoding=None):
    """Absolute URL of *href* seen on a page at *base*, or None if it is not a URL.
    *encoding*: the page's, for the query's characters (:func:`encode_query`)."""
    if href is None:
        return None
    href = href.strip(_WS)
    encoding = query_encoder(encoding)
    if encoding is not None:
        href = encode_query(href, encoding)
    try:
        return ada_url.join_url(base, href) if base else ada_url.URL(href).href
    except ValueError:
        return None


_PCT_RE = re.compile(r'%([0-9A-Fa-f]{2})')
# RFC 3986 section 2.3: percent-encoded unreserved characters are the characters.
_UNRESERVED = frozenset(b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~')


def _pct_sub(m):
    code = int(m.group(1), 16)
    return chr(code) if code in _UNRESERVED else '%' + m.group(1).upper()


def _consistent_escapes(part):
    """Unreserved characters unescaped, other escapes in upper-case hex (RFC 3986 6.2.2)."""
    return _PCT_RE.sub(_pct_sub, part) if '%' in part else part


@functools.lru_cache(maxsize=64)
def _param_matcher(patterns):
    """A predicate on lower-cased parameter names from glob *patterns* (``utm_*``)."""
    if not patterns:
        return None
    exact = frozenset(p.lower() for p in patterns if not any(c in p for c in '*?['))
    globs = [re.compile(fnmatch.translate(p.lower())) for p in patterns
             if any(c in p for c in '*?[')]
    return lambda name: name in exact or any(g.match(name) for g in globs)


def _clean_query(query, sort_query, drop):
    """*query* (no ``?``) with parameters matching *drop* removed, sorted if asked."""
    pairs = [p for p in query.split('&') if p]
    if drop is not None:
        pairs = [p for p in pairs
                 if not drop(unquote_plus(p.split('=', 1)[0]).lower())]
    if sort_query:
        # By name, then by the whole pair: stable, and equal names keep a fixed order.
        pairs.sort(key=lambda p: (p.split('=', 1)[0], p))
    return '&'.join(pairs)


def _strip_path_params(path, drop):
    """``/a;jsessionid=XYZ/b`` -> ``/a/b`` for ``;name=value`` matching *drop*."""
    out = []
    for seg in path.split('/'):
        if ';' in seg:
            head, *params = seg.split(';')
            params = [p for p in params if not drop(p.split('=', 1)[0].lower())]
            seg = ';'.join([head] + params)
        out.append(seg)
    return '/'.join(out)


# A "plain" relative reference: a path with no colon (so no scheme), backslash, percent
# sign (so no %2e dot segment) or character the URL standard would percent-encode, then
# an optional query and fragment of characters it keeps as they are in http(s) URLs.
_PLAIN_REF_RE = re.compile(r"([A-Za-z0-9._~!$&'()*+,;=@/-]*)"
                           r"(\?[A-Za-z0-9._~!$&()*+,;=:@/?%-]*)?"
                           r"(#[A-Za-z0-9._~!$&'()*+,;=:@/?%-]*)?\Z")


_MISS = object()


def _remove_dot_segments(path):
    """RFC 3986 5.2.4 on an absolute path; equal to the URL standard's path parsing for
    paths without percent signs or backslashes."""
    out = []
    segments = path.split('/')
    last = len(segments) - 1
    for i, seg in enumerate(segments[1:], 1):
        if seg == '..':
            if out:
                out.pop()
            if i == last:
                out.append('')
        elif seg == '.':
            if i == last:
                out.append('')
        else:
            out.append(seg)
    return '/' + '/'.join(out)


class PageResolver:
    """``resolve(base, href)`` for the many links of one page, faster.

    The same href is resolved once per page, and plain relative references (see
    ``_PLAIN_REF_RE``: ``#frag``, ``?q``, ``page.html``, ``../a/b.html#x``, ``/p``) of an
    http(s) base are joined in Python without a parse, by the rules the URL standard
    gives for them; anything else goes to :func:`resolve`. Results are those of
    :func:`resolve` (tests/test_filters.py checks this on random input).
    """

    def __init__(self, base, encoding=None):
        self.base = base
        self.encoding = query_encoder(encoding)
        self.cache = {}
        self.paths = {}
        self.origin = None
        try:
            u = ada_url.URL(base) if base else None
        except ValueError:
            u = None
        if u is not None and u.protocol in SCHEMES and u.host and not (
                u.username or u.password):
            self.origin = '%s//%s' % (u.protocol, u.host)
            self.path = u.pathname
            # ada's search is '' for an empty query too; a base ending in '?' keeps it.
            self.query = u.search or ('?' if u.href.split('#', 1)[0].endswith('?') else '')
            self.dir = self.path[:self.path.rfind('/') + 1]

    def __call__(self, href):
        url = self.cache.get(href, _MISS)
        if url is not _MISS:
            return url
        if href is None:
            return None
        key = href
        if self.encoding is not None:
            # Stripped first, as resolve() does: encoded, a trailing space is kept as %20.
            href = encode_query(href.strip(_WS), self.encoding)
        m = _PLAIN_REF_RE.match(href) if self.origin is not None else None
        if m is None or href.startswith('//'):
            url = resolve(self.base, href)
        else:
            path, query, frag = m.groups()
            if not path:
                prefix = self.origin + self.path
                if query is None:
                    query = self.query
            else:
                prefix = self.paths.get(path)
                if prefix is None:   # links differ by fragment far more often than path
                    prefix = self.paths[path] = self.origin + _remove_dot_segments(
                        path if path[0] == '/' else self.dir + path)
            url = prefix + (query or '') + (frag or '')
        self.cache[key] = url
        return url


def normalize(url, sort_query=False, strip_params=()):
    """The canonical spelling of an http(s) *url*, or None.

    Lower-case scheme and host, IDNA (punycode) host, default port dropped,
    dot-segments removed, fragment and credentials dropped, an empty path made ``/``,
    percent-encoding made consistent (escaped unreserved characters unescaped, other
    escapes in upper-case hex), an empty ``?`` dropped. With *sort_query*, query
    parameters are sorted by name; parameters whose name matches a glob in
    *strip_params* (case-insensitive: ``utm_*``, ``jsessionid``) are removed from the
    query and from ``;name=value`` path parameters.
    """
    if not url:
        return None
    try:
        u = ada_url.URL(url.strip(_WS))
    except ValueError:
        return None
    if u.protocol not in SCHEMES or not u.hostname:
        return None
    u.hash = ''
    if u.username or u.password:
        u.username = ''
        u.password = ''
    drop = _param_matcher(tuple(strip_params)) if strip_params else None
    path = u.pathname
    new_path = _consistent_escapes(path)
    if drop is not None and ';' in new_path:
        new_path = _strip_path_params(new_path, drop)
    if new_path != path:
        u.pathname = new_path
    search = u.search
    if search or u.href.endswith('?'):
        query = _consistent_escapes(search[1:])
        if sort_query or drop is not None:
            query = _clean_query(query, sort_query, drop)
        # The setter drops one leading "?", so give it one: "??" stays a query of "?".
        u.search = '?' + query if query else ''
    return u.href


#: URLs whose normal form a :func:`normalizer` remembers (about 300 bytes each; the
#: least recently used go first).
NORMALIZER_CACHE_SIZE = 100_000


def normalizer(conf):
    """``normalize`` with the query options of a resolved configuration, remembering
    recent results (``functools.lru_cache``): a task's pages link the same URLs again
    and again (navigation, a site's own pages), and each normalisation parses the URL."""
    parse = conf['parse']
    return functools.lru_cache(maxsize=NORMALIZER_CACHE_SIZE)(functools.partial(
        normalize, sort_query=parse['sort_query'], strip_params=tuple(parse['strip_params'])))


def host(url):
    """``host[:port]`` of an already normalised URL (the politeness key by default)."""
    rest = url.split('://', 1)[1]
    end = len(rest)
    for sep in '/?#':
        i = rest.find(sep)
        if i != -1 and i < end:
            end = i
    return rest[:end]


def origin(url):
    """``scheme://host[:port]`` of a normalised URL: where its robots.txt lives."""
    scheme = url.split('://', 1)[0]
    return '%s://%s' % (scheme, host(url))


def hostname(url):
    """The host name alone (no port, IPv6 brackets removed)."""
    try:
        name = ada_url.URL(url).hostname
    except ValueError:
        return None
    return name[1:-1] if name.startswith('[') else name


def literal_ip(name):
    """The ipaddress object when *name* is an IP literal, else None."""
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None
