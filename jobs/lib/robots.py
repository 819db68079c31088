"""robots.txt (RFC 9309) matching, via Protego (the parser Scrapy uses).

Protego matches groups by user-agent product token, applies the longest matching
Allow/Disallow rule with ``*`` and ``$``, and exposes Crawl-delay and Sitemap lines.
Lines with a key Protego does not read are dropped before it parses (:class:`Rules`).
"""
import threading
import time

from protego import Protego

#: Bytes of robots.txt parsed; RFC 9309 asks crawlers to parse at least 500 KiB.
MAX_ROBOTS_BYTES = 500 * 1024

#: The keys Protego reads, with the spellings it accepts. RFC 9309 (2.2.4): other
#: records are not group members and must not end a group, but Protego lets any key end
#: a group's user-agent lines ("User-agent: a / Foo: x / User-agent: b / Disallow: /"
#: left a without rules), so lines with another key are dropped first.
KNOWN_KEYS = frozenset({
    'user-agent', 'useragent', 'user agent', 'allow',
    'disallow', 'dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw',
    'sitemap', 'sitemaps', 'site-map', 'crawl-delay', 'crawl delay',
    'request-rate', 'request rate', 'visit-time', 'visit time', 'host'})


_USER_AGENT_KEYS = ('user-agent', 'useragent', 'user agent')


def _read(text):
    """One pass over *text*: (it without the lines whose key, before a colon, is not in
    KNOWN_KEYS; the names its user-agent lines give, lower-cased, each also without a
    trailing ``*``)."""
    kept, names = [], set()
    for line in text.splitlines():
        key, colon, value = line.split('#', 1)[0].partition(':')
        key = key.strip().lower()
        if not colon or key in KNOWN_KEYS:
            kept.append(line)
        if colon and key in _USER_AGENT_KEYS:
            name = value.strip().lower()
            names.update((name, name.rstrip('*').rstrip()))
    return '\n'.join(kept), names


def text_of(robots_txt):
    """robots.txt as the str that is parsed (str or bytes in; cut at 500 KiB, bad UTF-8
    replaced)."""
    if robots_txt is None:
        return ''
    if isinstance(robots_txt, bytes):
        robots_txt = robots_txt[:MAX_ROBOTS_BYTES].decode('utf-8', 'replace')
    else:
        robots_txt = robots_txt[:MAX_ROBOTS_BYTES]
    # A byte-order mark would make the first line's key unknown: a BOM before
    # "User-agent: *" / "Disallow: /" let everything through.
    return robots_txt[1:] if robots_txt.startswith('\ufeff') else robots_txt


def product_token(user_agent):
    """``'mrcrawl/0.1 (+url)'`` -> ``'mrcrawl'``: what robots.txt groups name."""
    words = (user_agent or '').strip().split('/', 1)[0].split()
    return words[0] if words else '*'


def can_fetch(robots_txt, user_agent, url):
    """True when *robots_txt* (str or bytes) lets *user_agent* fetch *url*."""
    return Rules(robots_txt, user_agent).allowed(url)


def _allowed(parsed, url, token):
    """Protego's answer, or False for what cannot be a URL (an invalid IPv6 host, a lone
    surrogate: Protego raises ValueError/UnicodeEncodeError). The crawl only asks about
    normalised URLs; this keeps the function total for any caller."""
    try:
        return bool(parsed.can_fetch(url, token))
    except ValueError:
        return False


class Rules:
    """What one host's robots.txt says, as the fetcher uses it.

    ``allow_all`` / ``deny_all`` stand for the RFC's error cases (4xx: allow all;
    5xx or unreachable: disallow all for now).
    """

    def __init__(self, robots_txt=None, user_agent='*', allow_all=False, deny_all=False,
                 reason=None):
        self.allow_all = allow_all
        self.deny_all = deny_all
        self.reason = reason
        self.read_at = time.time()
        self.text = None if (allow_all or deny_all) else text_of(robots_txt)
        self._parsed, names = None, ()
        if self.text is not None:
            kept, names = _read(self.text)
            self._parsed = Protego.parse(kept)
        # RFC 9309 2.2.1 matches a group by the whole product token; Protego also takes
        # a group named by its start ("mr" for mrcrawl): ask it with the token only
        # when a group names exactly that (a trailing * aside), else with "*".
        token = product_token(user_agent)
        self.token = token if token.lower() in names else '*'

    def record(self, origin):
        """The ``robots`` record that lets later layers reuse these rules (MRFetch
        --robots-dir): its URL and origin, time read (epoch seconds), the answer
        (``deny_all``: it could not be read, reused for politeness.robots_error_minutes
        only)."""
        return {'kind': 'robots', 'url': origin + '/robots.txt', 'origin': origin,
                'fetched_at': round(self.read_at, 3), 'allow_all': self.allow_all,
                'deny_all': self.deny_all, 'reason': self.reason, 'text': self.text}

    @classmethod
    def from_record(cls, rec, user_agent):
        return cls(rec.get('text'), user_agent, allow_all=rec['allow_all'],
                   deny_all=rec.get('deny_all', False), reason=rec.get('reason'))

    def allowed(self, url):
        if self.deny_all:
            return False
        if self.allow_all:
            return True
        return _allowed(self._parsed, url, self.token)

    def crawl_delay(self):
        if self._parsed is None:
            return None
        delay = self._parsed.crawl_delay(self.token)
        return float(delay) if delay is not None else None

    def sitemaps(self):
        return list(self._parsed.sitemaps) if self._parsed is not None else []


class RobotsCache:
    """One robots.txt per origin per task, fetched once, shared by threads; or read in
    an earlier layer (:meth:`preload`). ``fetched``: {origin: Rules} this task fetched;
    ``reused``: origins whose preloaded rules were asked for."""

    def __init__(self):
        self._rules = {}
        self._preloaded = set()
        self._locks = {}
        self._lock = threading.Lock()
        self.fetched = {}
        self.reused = set()

    def preload(self, origin, rules):
        self._rules[origin] = rules
        self._preloaded.add(origin)

    def lookup(self, origin):
        """The rules of *origin* if they were read (or preloaded), else None."""
        rules = self._rules.get(origin)
        if rules is not None and origin in self._preloaded:
            self.reused.add(origin)
        return rules

    def store(self, origin, rules):
        """Keep *rules*, read for *origin* by its key's flow; if another thread read them
        meanwhile (a render sub-request), theirs stay. Returns the rules kept."""
        with self._lock:
            if origin not in self._rules:
                self._rules[origin] = self.fetched[origin] = rules
            return self._rules[origin]

    def get(self, origin, fetch):
        with self._lock:
            lock = self._locks.setdefault(origin, threading.Lock())
        with lock:
            if origin not in self._rules:
                self._rules[origin] = self.fetched[origin] = fetch(origin)
            elif origin in self._preloaded:
                self.reused.add(origin)
            return self._rules[origin]
