"""Character encoding of fetched bodies, in the order of the WHATWG sniffing rules.

BOM, then the HTTP ``Content-Type`` charset, then a ``<meta>`` charset found by the
prescan of the first 1024 bytes, then a detector (valid UTF-8 is UTF-8; otherwise
charset-normalizer), then windows-1252. Names are WHATWG encoding names, as
``webencodings`` maps labels (``latin1`` and ``iso-8859-1`` are ``windows-1252``).
"""
import codecs
import re

import webencodings

_BOMS = ((codecs.BOM_UTF8, 'utf-8'), (codecs.BOM_UTF16_BE, 'utf-16be'),
         (codecs.BOM_UTF16_LE, 'utf-16le'))
_CT_CHARSET_RE = re.compile(r'charset\s*=\s*["\']?([^"\';\s]+)', re.I)
_META_RE = re.compile(
    rb'<meta\b[^>]*?charset\s*=\s*["\']?\s*([a-zA-Z0-9_.:-]+)', re.I)
_PRESCAN_BYTES = 1024
_DETECT_BYTES = 64 * 1024
DEFAULT = 'windows-1252'


#: Media types whose bodies are HTML documents (decoded to text and parsed as HTML).
HTML_TYPES = ('text/html', 'application/xhtml+xml')


def mime(content_type):
    """``text/html; charset=utf-8`` -> ``text/html``; None for no header."""
    return content_type.split(';', 1)[0].strip().lower() if content_type else None


def is_html(media_type):
    """A body of this media type (None: the server did not say) is read as HTML."""
    return media_type is None or media_type in HTML_TYPES


def lookup(label):
    """WHATWG encoding name for *label*, or None if it is not a known label."""
    if not label:
        return None
    enc = webencodings.lookup(label.strip().strip('"\''))
    return enc.name if enc is not None else None


def _python_name(name):
    """Codec name Python knows for a WHATWG name."""
    enc = webencodings.lookup(name)
    return enc.codec_info.name if enc is not None else name


def encode(text, name):
    """*text* encoded with the WHATWG encoding *name*, or None when that cannot give bytes
    (an unknown name, a character the encoding lacks). ``decode`` then ``encode`` gives
    the received bytes back unless decoding replaced bytes or dropped a BOM."""
    try:
        return text.encode(_python_name(name or DEFAULT), 'strict')
    except (LookupError, UnicodeError):
        return None


def bom(body):
    for mark, name in _BOMS:
        if body.startswith(mark):
            return name
    return None


def from_content_type(content_type):
    if not content_type:
        return None
    m = _CT_CHARSET_RE.search(content_type)
    return lookup(m.group(1)) if m else None


def from_meta(body):
    m = _META_RE.search(body[:_PRESCAN_BYTES])
    if not m:
        return None
    name = lookup(m.group(1).decode('ascii', 'replace'))
    # The prescan never yields UTF-16: a page that says so in ASCII is not UTF-16.
    if name in ('utf-16be', 'utf-16le'):
        return 'utf-8'
    if name == 'x-user-defined':
        return 'windows-1252'
    return name


def detect(body):
    """Best guess for an undeclared body."""
    sample = body[:_DETECT_BYTES]
    try:
        sample.decode('utf-8')
        return 'utf-8'
    except UnicodeDecodeError as e:
        # A multi-byte character cut by the sample's end is still UTF-8.
        if e.start >= len(sample) - 3 and len(body) > len(sample):
            return 'utf-8'
    # lazy: only for a page with no charset that is not UTF-8
    from charset_normalizer import from_bytes
    best = from_bytes(sample).best()
    if best is not None:
        name = lookup(best.encoding)
        if name:
            return name
    return DEFAULT


def sniff(body, content_type=None):
    """WHATWG encoding name of *body* (bytes) served with *content_type*."""
    return (bom(body) or from_content_type(content_type) or from_meta(body)
            or detect(body))


def decode(body, content_type=None):
    """``(text, encoding)``: *body* decoded by its sniffed encoding, errors replaced."""
    name = sniff(body, content_type)
    mark = bom(body)
    if mark is not None and mark == name:
        # The BOM picked the encoding; it is not part of the text (utf-16 codecs of a
        # fixed byte order would keep it as U+FEFF).
        body = body[3 if name == 'utf-8' else 2:]
    try:
        return body.decode(_python_name(name), 'replace'), name
    except LookupError:
        return body.decode('windows-1252', 'replace'), DEFAULT
