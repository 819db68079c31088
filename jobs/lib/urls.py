"""URL resolution and normalisation per the WHATWG URL standard (via ada-url).

``resolve(base, href)`` joins a link the way a browser does; ``normalize(url)`` gives the
one spelling that crawldb and in/ use, so equivalent spellings are one URL. Both return
None for what cannot be an http(s) URL.
"""
import ipaddress

import ada_url

SCHEMES = ('http:', 'https:')
_DEFAULT_PORTS = {'http:': '80', 'https:': '443'}
_WS = ' \t\n\r\f'


def resolve(base, href):
    """Absolute URL of *href* seen on a page at *base*, or None if it is not a URL."""
    if href is None:
        return None
    href = href.strip(_WS)
    try:
        return ada_url.join_url(base, href) if base else ada_url.URL(href).href
    except ValueError:
        return None


def normalize(url):
    """The canonical spelling of an http(s) *url*, or None.

    Lower-case scheme and host, IDNA (punycode) host, default port dropped,
    dot-segments removed, fragment dropped, percent-encoding as the URL standard
    serialises it, an empty path made ``/``.
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
    return u.href


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
