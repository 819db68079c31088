"""Typed field extraction from one page with a site configuration (jobs.lib.sites).

Each field selects values one way:

- ``css``: CSS selector (selectolax/Lexbor, on the page's HTML5 tree): the text of each
  matching element, or its attribute ``attr``;
- ``xpath``: XPath 1.0 (lxml), evaluated on the serialisation of the same HTML5 tree, so
  malformed HTML gives the tree a browser builds: element results give their text (or
  ``attr``), string results (``/text()``, ``/@href``) are taken as they are;
- ``regex``: alone, searched in the raw HTML (group 1 if the pattern has a group, else
  the whole match; HTML entities decoded); with css or xpath, applied to each selected
  value, keeping the values it matches.

and converts them to its ``type``: ``text`` (first value, whitespace collapsed), ``int``
and ``float`` (first number in the first value that has one: ``"1 234 views"`` ->
1234), ``date`` (ISO ``YYYY-MM-DD`` from ISO 8601 text or one of ``formats``, strptime
syntax), ``url`` (first value resolved against the page and normalised), ``list``
(every value, in document order). A field with nothing found is None (``[]`` for list).

:func:`fields_checksum` is the CRC32 of the fields (the vertical-search design's change
detector): same fields, same checksum, whatever the rest of the page does.
"""
import datetime
import html as html_lib
import re
import zlib

import orjson
from selectolax.lexbor import LexborHTMLParser

from jobs.lib import urls

_SPACE_RE = re.compile(r'\s+')
_INT_RE = re.compile(r'[-+]?\d{1,3}(?:[ \u00a0\u202f,\'](?=\d{3}\b)\d{3})+(?!\d)|[-+]?\d+')
_FLOAT_RE = re.compile(r'[-+]?(?:\d+(?:[.,]\d+)?|[.,]\d+)(?:[eE][-+]?\d+)?')
_ISO_DATE_RE = re.compile(r'(\d{4})-(\d{2})-(\d{2})')


def _clean(text):
    return _SPACE_RE.sub(' ', text or '').strip()


class Page:
    """One page prepared for extraction: the Lexbor tree, lazily an lxml tree.

    *url* is the page's final URL; ``base`` honours ``<base href>``; *normalize* is the
    crawl's URL normaliser (``urls.normalizer(conf)``) for ``url`` fields and resources.
    """

    def __init__(self, html, url, tree=None, normalize=urls.normalize):
        self.html = html
        self.url = url
        self.tree = tree if tree is not None else LexborHTMLParser(html)
        self.normalize = normalize
        self._lxml = None
        self._base = None

    @property
    def base(self):
        if self._base is None:
            node = self.tree.css_first('base[href]')
            self._base = (node is not None and urls.resolve(
                self.url, node.attributes.get('href'))) or self.url
        return self._base

    @property
    def lxml(self):
        if self._lxml is None:
            # lazy: lxml.html only for the XPath of site fields
            import lxml.html
            serialised = self.tree.html or '<html></html>'
            self._lxml = lxml.html.document_fromstring(serialised)
        return self._lxml


def select(page, spec):
    """The raw string values *spec* (css/xpath/regex/attr) selects on *page*."""
    attr = spec.get('attr')
    rx = re.compile(spec['regex'], re.S) if 'regex' in spec else None
    if 'css' in spec:
        values = []
        for node in page.tree.css(spec['css']):
            v = node.attributes.get(attr) if attr else node.text(deep=True, separator=' ')
            if v is not None:
                values.append(v)
    elif 'xpath' in spec:
        values = []
        result = page.lxml.xpath(spec['xpath'])
        if not isinstance(result, list):
            result = [result]
        for item in result:
            if isinstance(item, str):
                values.append(str(item))
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                values.append(repr(item))
            elif hasattr(item, 'text_content'):
                v = item.get(attr) if attr else item.text_content()
                if v is not None:
                    values.append(v)
    else:
        values = []
        for m in rx.finditer(page.html):
            values.append(html_lib.unescape(m.group(1) if rx.groups else m.group(0)))
        return values
    if rx is not None:
        picked = []
        for v in values:
            m = rx.search(v)
            if m:
                picked.append(m.group(1) if rx.groups else m.group(0))
        values = picked
    return values


def to_int(text):
    m = _INT_RE.search(text)
    if not m:
        return None
    return int(re.sub(r'[^\d+-]', '', m.group(0)))


def to_float(text):
    m = _FLOAT_RE.search(text)
    if not m:
        return None
    return float(m.group(0).replace(',', '.'))


def to_date(text, formats=()):
    text = _clean(text)
    for fmt in formats:
        try:
            return datetime.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    m = _ISO_DATE_RE.search(text)
    if m:
        try:
            return datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
        except ValueError:
            return None
    return None


def convert(values, spec, base_url, normalize=urls.normalize):
    """Typed value of a field from its selected *values*."""
    ftype = spec.get('type', 'text')
    if ftype == 'list':
        return [c for c in (_clean(v) for v in values) if c]
    for v in values:
        if ftype == 'text':
            c = _clean(v)
            if c:
                return c
        elif ftype == 'int':
            n = to_int(v)
            if n is not None:
                return n
        elif ftype == 'float':
            n = to_float(v)
            if n is not None:
                return n
        elif ftype == 'date':
            d = to_date(v, spec.get('formats', ()))
            if d is not None:
                return d
        elif ftype == 'url':
            u = normalize(urls.resolve(base_url, v))
            if u is not None:
                return u
    return None


def extract_fields(page, fields):
    """``{name: typed value}`` for the ``fields`` of a site spec, plus the missing ones.

    Returns (fields dict, list of required field names that came out empty).
    """
    out, missing = {}, []
    for name, spec in fields.items():
        value = convert(select(page, spec), spec, page.base, page.normalize)
        out[name] = value
        if spec.get('required') and value in (None, []):
            missing.append(name)
    return out, missing


def extract_resources(page, resources):
    """Secondary resources a page names: ``[{name, url, max_bytes}]``, resolved, normalised."""
    out, seen = [], set()
    for name, spec in resources.items():
        for v in select(page, spec):
            u = page.normalize(urls.resolve(page.base, v.strip()))
            if u is not None and u not in seen:
                seen.add(u)
                out.append({'name': name, 'url': u, 'max_bytes': spec['max_bytes']})
    return out


def fields_checksum(fields):
    """``crc32:`` + 8 hex digits of the fields as canonical JSON (sorted keys)."""
    data = orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
    return 'crc32:%08x' % zlib.crc32(data)
