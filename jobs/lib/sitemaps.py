"""Sitemaps (sitemaps.org 0.9: urlset, sitemapindex, gzip, plain text) and robots.txt
``Sitemap:`` lines as URL sources for the parse job.

The fetch job keeps the raw bytes of the types listed in ``fetch.keep_types``, and of
:data:`SITEMAP_TYPES` when ``sitemaps.enabled`` is on (:func:`kept_types`), as
``raw_body`` (base64); :func:`raw_bytes` gets them back. XML is parsed by lxml with
entity resolution and network access off (no XXE, no billion laughs), gzip is inflated
with a cap (``sitemaps.max_uncompressed_bytes``: no zip bomb).
"""
import base64
import re
import zlib
from datetime import datetime, timedelta, timezone

SITEMAP_TYPES = ('application/xml', 'text/xml', 'application/gzip', 'application/x-gzip',
                 'text/plain')
_SITEMAP_LINE_RE = re.compile(r'^\s*sitemap\s*:\s*(\S+)', re.I | re.M)
_GZIP_MAGIC = b'\x1f\x8b'
# W3C datetime (https://www.w3.org/TR/NOTE-datetime), the sitemaps.org lastmod format:
# YYYY, YYYY-MM, YYYY-MM-DD, or a date with hh:mm[:ss[.s]] and a zone (Z or +hh:mm);
# a time without a zone, common in the wild, is read as UTC (as crawler-commons does).
_W3C_RE = re.compile(
    r'(\d{4})(?:-(\d\d)(?:-(\d\d)(?:T(\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?'
    r'(Z|[+-]\d\d:\d\d)?)?)?)?', re.A)


def kept_types(conf):
    """The MIME types whose bodies the fetch keeps (raw_body) and whose links pass the
    extension filter: ``fetch.keep_types``, plus the sitemap types when
    ``sitemaps.enabled`` is on (so that one setting switches sitemaps on)."""
    kept = tuple(t.lower() for t in conf['fetch']['keep_types'])
    if conf['sitemaps']['enabled']:
        kept += tuple(t for t in SITEMAP_TYPES if t not in kept)
    return kept


class SitemapError(ValueError):
    """Not a sitemap, or over a limit."""


def raw_bytes(doc):
    """The body bytes of a doc record: ``raw_body`` (base64), else the decoded ``body``."""
    if doc.get('raw_body') is not None:
        return base64.b64decode(doc['raw_body'])
    if doc.get('body') is not None:
        return doc['body'].encode('utf-8')
    return None


def inflate(data, max_bytes):
    """*data* gunzipped when it is gzip, at most *max_bytes* (else SitemapError)."""
    if not data.startswith(_GZIP_MAGIC):
        if len(data) > max_bytes:
            raise SitemapError('sitemap over %d bytes' % max_bytes)
        return data
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, max_bytes + 1)
    except zlib.error as e:
        raise SitemapError('bad gzip: %s' % e)
    if len(out) > max_bytes:
        raise SitemapError('sitemap inflates to over %d bytes' % max_bytes)
    return out


def lastmod(text):
    """A sitemap ``<lastmod>`` (W3C datetime) as the crawl writes times, UTC to the
    second (``2026-11-30T08:00:00Z``; fractions dropped, a date alone is its midnight
    UTC), or None when it is not one."""
    m = _W3C_RE.fullmatch((text or '').strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, zone = m.groups()
    try:
        t = datetime(int(year), int(month or 1), int(day or 1), int(hour or 0),
                     int(minute or 0), int(second or 0), tzinfo=timezone.utc)
    except ValueError:          # month 13, February 30, hour 25...
        return None
    if zone and zone != 'Z':
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        try:
            t = t - offset if zone[0] == '+' else t + offset
        except OverflowError:
            return None
    return '%04d-%02d-%02dT%02d:%02d:%02dZ' % (t.year, t.month, t.day, t.hour, t.minute,
                                                t.second)


def robots_sitemaps(text):
    """The ``Sitemap:`` URLs of a robots.txt, in order."""
    return _SITEMAP_LINE_RE.findall(text)


def _local(tag):
    return tag.rsplit('}', 1)[-1] if isinstance(tag, str) else ''


def parse(data, max_urls=50000, max_bytes=52428800):
    """A sitemap's bytes -> (kind, entries).

    kind is ``urlset`` (entries: page URLs), ``sitemapindex`` (entries: sitemap URLs) or
    ``text`` (one URL per line). Each entry is ``{loc, lastmod, changefreq, priority}``
    (the optional ones None when absent). At most *max_urls* entries.
    """
    data = inflate(data, max_bytes)
    head = data.lstrip()[:1]
    if head != b'<':
        entries = []
        for line in data.decode('utf-8', 'replace').splitlines():
            line = line.strip()
            if line.startswith(('http://', 'https://')):
                entries.append({'loc': line, 'lastmod': None, 'changefreq': None,
                                'priority': None})
                if len(entries) >= max_urls:
                    break
        return 'text', entries
    # lazy: lxml only for XML sitemaps
    from lxml import etree
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False, recover=True, remove_comments=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise SitemapError('not XML: %s' % e)
    if root is None:
        raise SitemapError('not XML')
    kind = _local(root.tag)
    child = {'urlset': 'url', 'sitemapindex': 'sitemap'}.get(kind)
    if child is None:
        raise SitemapError('not a sitemap: root element <%s>' % kind)
    entries = []
    for item in root:
        if _local(item.tag) != child:
            continue
        entry = {'loc': None, 'lastmod': None, 'changefreq': None, 'priority': None}
        for el in item:
            name = _local(el.tag)
            if name in entry and el.text:
                entry[name] = el.text.strip()
        if entry['loc']:
            entries.append(entry)
            if len(entries) >= max_urls:
                break
    return kind, entries
