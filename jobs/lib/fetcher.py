"""Fetching one politeness key's URLs politely: robots.txt, one connection, a delay.

``HostFetcher(conf, robots_cache).fetch(in_records, layer, key)`` yields one doc record
(see jobs.lib.records) per input record, whatever happens: nothing is lost. The fetch
job runs many HostFetchers at once in threads, one per politeness key (:func:`politeness_key`:
the host, its IP address or its registered domain).

Politeness: the requests of one key (robots.txt, retries and redirect hops included)
go out one at a time, each starting at least ``delay`` seconds after the previous one
ended; a robots.txt ``Crawl-delay`` raises that delay up to ``politeness.max_crawl_delay``.

Robustness: 5xx, 429 and transient network errors are retried with exponential
backoff (``Retry-After`` honoured up to ``fetch.max_retry_after``); after
``fetch.max_consecutive_failures`` failed URLs in a row the rest of the key is deferred;
when the reducer's ``fetch.time_budget`` runs out the rest is deferred. A watchdog
cuts any request (headers included) that runs past ``fetch.max_request_seconds``.

Security: every TCP connection of a fetcher's session goes through
:func:`_safe_create_connection` (mounted by :class:`SafeAdapter` on the crawl's own
sessions only; nothing is patched process-wide), which resolves the name through a cache and refuses loopback, private, link-local, multicast
and reserved addresses (also when spelled as IPv4-mapped, IPv4-compatible, NAT64 or
6to4 IPv6 addresses) unless ``security.allow_private_networks`` is on. Because the
check sits where the socket is opened, it covers every redirect hop and cannot be
dodged by a name that resolves differently on a second lookup.
"""
import base64
import email.utils
import hashlib
import heapq
import ipaddress
import itertools
import socket
import threading
import time
import weakref
from datetime import datetime, timezone

import requests
import urllib3
import urllib3.connection
import urllib3.exceptions

from jobs.lib import counters as C, encoding, records as R, robots, urls

_KEPT_HEADERS = ('etag', 'last-modified', 'x-robots-tag', 'retry-after', 'content-length',
                 'content-encoding')
_CHUNK = 64 * 1024
_DRAIN_BYTES = 64 * 1024   # unread bodies up to this are read to keep the connection
#: Network error reasons worth a retry: the server or the path may recover in seconds.
#: dns, private_address, tls, connection_refused and time_limit are not retried: they
#: rarely heal within a layer and a retry would only spend the host's time.
_RETRY_REASONS = ('read_timeout', 'connect_timeout', 'connection_reset', 'protocol_error',
                  'connection_error')
POLITENESS_KEYS = ('host', 'ip', 'domain')


class Blocked(OSError):
    """A connection refused by the address policy (reason: private_address)."""


def _embedded_ipv4(ip):
    """IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    if ip.version != 6:
        return []
    out = []
    if ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.extend(ip.teredo)
    n = int(ip)
    if n >> 32 == 0 and n > 1:                      # ::a.b.c.d (IPv4-compatible)
        out.append(ipaddress.IPv4Address(n & 0xFFFFFFFF))
    if n >> 32 == 0x0064ff9b << 64:                 # 64:ff9b::/96 (NAT64)
        out.append(ipaddress.IPv4Address(n & 0xFFFFFFFF))
    return out


def ip_is_public(ip):
    """True for an address a crawl may connect to without allow_private_networks."""
    if isinstance(ip, str):
        ip = ipaddress.ip_address(ip.split('%', 1)[0])
    return all(a.is_global and not a.is_multicast for a in [ip] + _embedded_ipv4(ip))


_ip_is_public = ip_is_public   # old name, kept for callers


class Resolver:
    """getaddrinfo with a cache (names are resolved once per TTL) and the address policy."""

    def __init__(self, allow_private=False, ttl=3600.0):
        self.allow_private = allow_private
        self.ttl = ttl
        self._cache = {}
        self._lock = threading.Lock()

    def lookup(self, host, port):
        """getaddrinfo results for (host, port), from the cache when fresh; no policy."""
        key = (host, port)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[1] < self.ttl:
            return hit[0]
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        with self._lock:
            self._cache[key] = (infos, now)
        return infos

    def resolve(self, host, port):
        """Like :meth:`lookup`, but raises :class:`Blocked` for a refused address."""
        infos = self.lookup(host, port)
        if not self.allow_private:
            for info in infos:
                ip = ipaddress.ip_address(info[4][0].split('%', 1)[0])
                if not ip_is_public(ip):
                    raise Blocked('%s resolves to non-public address %s' % (host, ip))
        return infos


RESOLVER = Resolver()

# The fetching thread's open sockets, so the watchdog can cut a stalled request.
_tls = threading.local()


def _safe_create_connection(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                            source_address=None, socket_options=None):
    """urllib3's create_connection, resolving through RESOLVER (cache + policy)."""
    host, port = address
    if host.startswith('['):
        host = host.strip('[]')
    err = None
    for family, socktype, proto, _, sockaddr in RESOLVER.resolve(host, port):
        sock = None
        try:
            sock = socket.socket(family, socktype, proto)
            if socket_options:
                for opt in socket_options:
                    sock.setsockopt(*opt)
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            owner = getattr(_tls, 'sockets', None)
            if owner is not None:
                owner.add(sock)
            return sock
        except OSError as e:
            err = e
            if sock is not None:
                sock.close()
    raise err if err is not None else OSError('getaddrinfo returned nothing')


class _SafeHTTPConnection(urllib3.connection.HTTPConnection):
    """An HTTPConnection that connects through :func:`_safe_create_connection`."""

    def _new_conn(self):
        try:
            return _safe_create_connection((self._dns_host, self.port), self.timeout,
                                           source_address=self.source_address,
                                           socket_options=self.socket_options)
        except Blocked:
            raise
        except socket.gaierror as e:
            raise urllib3.exceptions.NameResolutionError(self.host, self, e) from e
        except socket.timeout as e:
            raise urllib3.exceptions.ConnectTimeoutError(
                self, 'Connection to %s timed out' % self.host) from e
        except OSError as e:
            raise urllib3.exceptions.NewConnectionError(
                self, 'Failed to establish a new connection: %s' % e) from e


class _SafeHTTPSConnection(_SafeHTTPConnection, urllib3.connection.HTTPSConnection):
    pass


class _SafeHTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _SafeHTTPConnection


class _SafeHTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _SafeHTTPSConnection


class SafeAdapter(requests.adapters.HTTPAdapter):
    """The crawl's HTTPAdapter: its connections resolve and connect through RESOLVER.

    Mounted on the fetchers' sessions only, so that other HTTP clients in the same
    process (the driver's WebHDFS client, with the inline runner) keep their own rules.
    """

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {'http': _SafeHTTPPool,
                                                   'https': _SafeHTTPSPool}


class _Watchdog:
    """One thread that calls a function when its deadline passes unless disarmed first.

    requests' read timeout bounds the wait for *each* byte, so a server that trickles
    its headers or body a byte at a time could hold a connection forever; the watchdog
    enforces the whole-request limit by shutting the request's sockets down.
    """

    def __init__(self):
        self._heap = []
        self._cond = threading.Condition()
        self._ids = itertools.count()
        self._thread = None

    def arm(self, deadline, fn):
        entry = [deadline, next(self._ids), fn, False]    # [.., .., fn, fired]
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='fetch-watchdog',
                                                daemon=True)
                self._thread.start()
            if self._heap[0] is entry:    # else the thread already wakes before it is due
                self._cond.notify()
        return entry

    def disarm(self, entry):
        """Cancel *entry*; returns True when it had already fired."""
        with self._cond:
            fired = entry[3]
            entry[2] = None
        return fired

    def _run(self):
        """Sleep until the earliest armed deadline. Disarmed entries on top of the heap
        are dropped without waiting for their deadlines, and arming a later deadline
        does not wake the thread: at ~130 requests a second it woke for every arm and
        every expiry, each a GIL hand-off in the fetch task."""
        heap = self._heap
        while True:
            with self._cond:
                while True:
                    while heap and heap[0][2] is None:
                        heapq.heappop(heap)
                    if heap and heap[0][0] <= time.monotonic():
                        break
                    self._cond.wait(heap[0][0] - time.monotonic() if heap else None)
                entry = heapq.heappop(heap)
                fn = entry[2]
                entry[3] = True
            try:
                fn()
            except Exception:   # a failing cut must not kill the watchdog
                pass


WATCHDOG = _Watchdog()

_PSL = None
_PSL_LOCK = threading.Lock()


def registered_domain(name):
    """``www.example.co.uk`` -> ``example.co.uk`` (bundled Public Suffix List; IPs as is)."""
    global _PSL
    if urls.literal_ip(name) is not None:
        return name
    with _PSL_LOCK:
        if _PSL is None:
            from publicsuffixlist import PublicSuffixList
            _PSL = PublicSuffixList()    # its bundled list: nothing is downloaded
    return _PSL.privatesuffix(name) or name


def politeness_key(url, mode='host', resolver=None):
    """The politeness key of a normalised *url*: ``host[:port]``, ``ip:...`` or ``domain:...``.

    ``ip`` resolves the name (through the cache, without the address policy, which the
    fetcher applies later); a name that does not resolve keeps its host key, so its
    URLs still reach a fetcher that records the DNS error.
    """
    if mode == 'host':
        return urls.host(url)
    name = urls.hostname(url)
    if not name:
        return urls.host(url)
    if mode == 'domain':
        return 'domain:' + registered_domain(name)
    try:
        infos = (resolver or RESOLVER).lookup(name, 443 if url.startswith('https:') else 80)
    except (OSError, UnicodeError):
        return urls.host(url)
    return 'ip:' + infos[0][4][0] if infos else urls.host(url)


def fetch_key(rec, conf):
    """The politeness key of an in/ ``url`` record, or None if its URL cannot be fetched.

    Normalises ``rec['url']`` in place (the fetch job's mapper and MRPlanFetch share
    this, so a plan and a fetch of the same in/ agree on every key).
    """
    url = urls.normalize(rec.get('url'))
    if url is None or len(url) > conf['filter']['max_url_length']:
        return None
    rec['url'] = url
    return politeness_key(url, conf['politeness']['key'])


def _carry(rec, doc):
    """Copy what the generator knew of the URL from its in/ record to its doc: ``prev``
    (a re-crawl's previous digest and checksum), ``score`` (its OPIC cash) and, for a
    secondary resource, ``resource_of``, ``resource_name`` and ``max_bytes``."""
    for key in ('prev', 'score', 'resource_of', 'resource_name', 'max_bytes'):
        if rec.get(key) is not None:
            doc[key] = rec[key]
    return doc


now_iso = R.now_iso   # the records' time format, defined once in jobs.lib.records


def _declared_length(headers):
    """The full size the server declares: the total of a Content-Range, else
    Content-Length when the body is not content-encoded (then it counts encoded bytes);
    None when unknown."""
    crange = headers.get('content-range') or ''
    total = crange.rpartition('/')[2].strip()
    if total.isdigit():
        return int(total)
    if headers.get('content-encoding', 'identity').strip().lower() not in ('', 'identity'):
        return None
    value = (headers.get('content-length') or '').strip()
    return int(value) if value.isdigit() else None


digest = R.digest     # the records' digest form, defined once in jobs.lib.records


def http_exchange(resp):
    """What a WARC request/response pair needs beyond the doc record (warc.enabled):
    ``{version, reason, headers, request}``; headers are ``[name, value]`` lists in the
    order received (repeated names kept), request = {method, path, headers sent}."""
    version = getattr(resp.raw, 'version', 11)
    raw_headers = getattr(resp.raw, 'headers', None) or resp.headers
    req = resp.request
    return {'version': 'HTTP/1.0' if version == 10 else 'HTTP/1.1',
            'reason': resp.reason or '',
            'headers': [[k, v] for k, v in raw_headers.items()],
            'request': {'method': req.method or 'GET', 'path': req.path_url,
                        'headers': [[k, v] for k, v in req.headers.items()]}}


def _error_reason(exc):
    """Short reason for a network exception (used in counters)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Blocked):
            return 'private_address'
        if isinstance(exc, socket.gaierror):
            return 'dns'
        if isinstance(exc, (requests.exceptions.ConnectTimeout,)):
            return 'connect_timeout'
        if isinstance(exc, (requests.exceptions.ReadTimeout, socket.timeout,
                            urllib3.exceptions.ReadTimeoutError)):
            return 'read_timeout'
        if isinstance(exc, requests.exceptions.SSLError):
            return 'tls'
        if isinstance(exc, (ConnectionResetError, urllib3.exceptions.ProtocolError,
                            requests.exceptions.ChunkedEncodingError)):
            # urllib3 wraps a reset as ProtocolError('Connection aborted.', reset), and
            # an address refused on a reused pool's new connection the same way.
            if any(isinstance(a, Blocked) for a in exc.args):
                return 'private_address'
            if isinstance(exc, ConnectionResetError) or any(
                    isinstance(a, ConnectionResetError) for a in exc.args):
                return 'connection_reset'
            return 'protocol_error'
        if isinstance(exc, ConnectionRefusedError):
            return 'connection_refused'
        if isinstance(exc, urllib3.exceptions.DecodeError) or \
                isinstance(exc, requests.exceptions.ContentDecodingError):
            return 'decode_error'
        nxt = exc.__cause__ or exc.__context__
        if nxt is None and exc.args and isinstance(exc.args[0], BaseException):
            nxt = exc.args[0]
        if nxt is None and hasattr(exc, 'reason') and isinstance(exc.reason, BaseException):
            nxt = exc.reason
        exc = nxt
    return 'connection_error'


def retry_after_seconds(value, now=None):
    """Seconds a ``Retry-After`` header asks for (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


class TimeLimit(Exception):
    """The whole-request time limit ran out."""


class OutOfBudget(Exception):
    """The reducer's time budget ran out: the URL is deferred, not failed."""


class RobotsCache:
    """One robots.txt per origin per task (so per layer), fetched once, shared by threads."""

    def __init__(self):
        self._rules = {}
        self._locks = {}
        self._lock = threading.Lock()

    def get(self, origin, fetch):
        with self._lock:
            lock = self._locks.setdefault(origin, threading.Lock())
        with lock:
            if origin not in self._rules:
                self._rules[origin] = fetch(origin)
            return self._rules[origin]


class _Hop:
    """What one request of a redirect chain gave: a redirect target or a final answer."""

    def __init__(self, target=None):
        self.target = target


class HostFetcher:
    """Fetches URLs of one politeness key, sequentially, with the configured delay.

    *budget_deadline* (a ``clock()`` value or None) is when the reducer's time budget
    ends; ``stats`` counts what the job reports as counters (names in jobs.lib.counters).
    """

    def __init__(self, conf, robots_cache=None, clock=time.monotonic, sleep=time.sleep,
                 budget_deadline=None):
        self.conf = conf
        pol, fet = conf['politeness'], conf['fetch']
        self.user_agent = pol['user_agent']
        self.delay = pol['delay']
        self.obey_robots = pol['obey_robots']
        self.max_crawl_delay = pol['max_crawl_delay']
        self.key_mode = pol.get('key', 'host')
        self.timeout = (fet['connect_timeout'], fet['read_timeout'])
        self.max_seconds = fet['max_request_seconds']
        self.max_body = fet['max_body_bytes']
        self.max_redirects = fet['max_redirects']
        self.max_retries = fet.get('max_retries', 0)
        self.retry_backoff = fet.get('retry_backoff', 1.0)
        self.max_retry_after = fet.get('max_retry_after', 0.0)
        self.max_failures = fet.get('max_consecutive_failures', 0)
        self.keep_types = tuple(t.lower() for t in fet.get('keep_types', ()))
        #: warc.enabled: doc records carry what the WARC job needs (``http``, ``warc_body``)
        self.warc = bool(conf.get('warc', {}).get('enabled', False))
        self.max_url_length = conf.get('filter', {}).get('max_url_length', 2048)
        self.robots_cache = robots_cache or RobotsCache()
        RESOLVER.allow_private = conf['security']['allow_private_networks']
        RESOLVER.ttl = fet.get('dns_cache_seconds', RESOLVER.ttl)
        self.clock = clock
        self.sleep = sleep
        self.budget_deadline = budget_deadline
        self._next_request = 0.0
        self._last_end = 0.0
        self.session = None
        self.key = None
        self._sockets = weakref.WeakSet()
        self._in_urls = set()       # this key's URLs in this layer's in/
        self._fetched = set()       # URLs this fetcher requested (chain hops included)
        self.robots_fetches = 0     # robots.txt requests this fetcher made
        self.robots_failures = 0
        self.stats = {}

    def _stat(self, name, n=1):
        self.stats[name] = self.stats.get(name, 0) + n

    # -- politeness ---------------------------------------------------------------

    def _wait_turn(self):
        """Sleep until this key may be asked again; OutOfBudget if that is too late."""
        wait = self._next_request - self.clock()
        if self.budget_deadline is not None and \
                self.clock() + max(wait, 0.0) >= self.budget_deadline:
            raise OutOfBudget()
        if wait > 0:
            self.sleep(wait)

    def _done_request(self, pause=0.0):
        """A request to this key ended: the next one waits the delay (or *pause*, if longer)."""
        self._last_end = self.clock()
        self._next_request = self._last_end + max(self.delay, pause)

    # -- one HTTP request, cut by the watchdog ---------------------------------------

    def _deadline(self):
        deadline = self.clock() + self.max_seconds
        if self.budget_deadline is not None:
            deadline = min(deadline, self.budget_deadline)
        return deadline

    def _cut(self):
        """Watchdog thread: shut this fetcher's sockets down; the blocked read returns."""
        for _ in range(5):
            try:
                socks = list(self._sockets)
                break
            except RuntimeError:     # the fetching thread added one meanwhile
                continue
        else:
            socks = []
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _get(self, url, deadline, headers=None):
        """``session.get`` (streamed, no redirects) under the watchdog.

        Returns (response, watchdog entry): the entry stays armed while the body is read
        and must be passed to :meth:`_disarm`.
        """
        entry = WATCHDOG.arm(time.monotonic() + max(0.0, deadline - self.clock()), self._cut)
        try:
            resp = self.session.get(url, stream=True, allow_redirects=False,
                                    timeout=self.timeout, headers=headers)
        except Exception:
            if WATCHDOG.disarm(entry):
                raise self._limit_error(deadline)
            raise
        return resp, entry

    def _limit_error(self, deadline):
        if self.budget_deadline is not None and deadline >= self.budget_deadline:
            return OutOfBudget()
        return TimeLimit()

    def _disarm(self, entry, deadline, exc=None):
        """Stop the watchdog; an error it caused becomes TimeLimit/OutOfBudget."""
        if WATCHDOG.disarm(entry) and exc is not None:
            raise self._limit_error(deadline) from exc

    # -- robots.txt ---------------------------------------------------------------

    def _fetch_robots(self, origin):
        """Rules for *origin*: RFC 9309 error handling, up to 5 redirects, 500 KiB.

        4xx: allow all. 5xx, 429 (as Nutch and Google treat it), unreachable or a
        redirect chain longer than 5: disallow all for this layer (the URLs are deferred
        and robots.txt is tried again next layer). Its requests keep the key's delay.
        """
        if not self.obey_robots:
            return robots.Rules(allow_all=True)
        url = origin + '/robots.txt'
        try:
            for _ in range(6):
                self._wait_turn()
                self.robots_fetches += 1
                deadline = self._deadline()
                entry = None
                try:
                    resp, entry = self._get(url, deadline)
                    try:
                        if resp.is_redirect:
                            url = urls.normalize(urls.resolve(url, resp.headers.get('location')))
                            if url is None:
                                return robots.Rules(allow_all=True, reason='robots_bad_redirect')
                            continue
                        if resp.status_code == 429 or resp.status_code >= 500:
                            self.robots_failures += 1
                            return robots.Rules(deny_all=True,
                                                reason='robots_%d' % resp.status_code)
                        if 400 <= resp.status_code < 500:
                            return robots.Rules(allow_all=True,
                                                reason='robots_%d' % resp.status_code)
                        body, _ = self._read_body(resp, robots.MAX_ROBOTS_BYTES, deadline)
                        return robots.Rules(body, self.user_agent)
                    finally:
                        resp.close()
                except (requests.RequestException, OSError,
                        urllib3.exceptions.HTTPError) as e:
                    if entry is not None:
                        self._disarm(entry, deadline, e)
                    raise
                finally:
                    if entry is not None:
                        WATCHDOG.disarm(entry)
                    self._done_request()
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_too_many_redirects')
        except OutOfBudget:
            raise
        except TimeLimit:
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_time_limit')
        except (requests.RequestException, OSError, urllib3.exceptions.HTTPError) as e:
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_' + _error_reason(e))

    # -- bodies -------------------------------------------------------------------------

    def _stream(self, resp, limit, deadline, sink):
        """Feed up to *limit* decoded bytes of *resp* to *sink*; True if more followed.

        urllib3 >= 2.6 decompresses at most *amt* bytes per ``read1`` call, so a gzip
        bomb never inflates past the limit plus one chunk.
        """
        size, raw = 0, resp.raw
        while True:
            if self.clock() > deadline:
                raise self._limit_error(deadline)
            chunk = raw.read1(min(_CHUNK, limit - size + 1), decode_content=True)
            if not chunk:
                return False
            if size + len(chunk) > limit:
                sink(chunk[:limit - size])
                return True
            sink(chunk)
            size += len(chunk)

    def _read_body(self, resp, limit, deadline):
        """Read up to *limit* decoded bytes; returns (bytes, truncated)."""
        chunks = []
        truncated = self._stream(resp, limit, deadline, chunks.append)
        return b''.join(chunks), truncated

    def _read_resource(self, doc, resp, deadline):
        """A secondary resource: stream its first ``max_bytes`` (decoded) bytes through
        SHA-1 and keep nothing but length, digest, truncated and the declared size."""
        limit = doc.get('max_bytes')
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            limit = self.max_body
        sha, seen = hashlib.sha1(), [0]

        def sink(chunk):
            sha.update(chunk)
            seen[0] += len(chunk)
        truncated = self._stream(resp, limit, deadline, sink)
        size = seen[0]
        doc['length'] = size
        doc['truncated'] = truncated
        doc['digest'] = R.sha1_form(sha)
        doc['declared_length'] = _declared_length(resp.headers)
        self._stat(C.RESOURCES_FETCHED)
        if truncated:
            self._stat(C.RESOURCES_TRUNCATED)

    def _drain(self, resp, deadline):
        """Read the rest of a small unread body (redirects, errors, metadata-only types)
        so the connection goes back to the pool instead of being closed."""
        try:
            size = int(resp.headers.get('content-length', -1))
        except ValueError:
            return
        if not 0 <= size <= _DRAIN_BYTES or resp.raw.closed:
            return
        try:
            while self.clock() < deadline and resp.raw.read(_DRAIN_BYTES,
                                                            decode_content=False):
                pass
        except (OSError, urllib3.exceptions.HTTPError):
            pass     # the connection is dropped: that is all a failed drain costs

    # -- one URL ------------------------------------------------------------------------

    def _new_doc(self, rec, layer):
        url = rec['url']
        return _carry(rec, {
            'kind': 'doc', 'url': url, 'depth': rec.get('depth', 0), 'layer': layer,
            'status': None, 'reason': None, 'http_status': None, 'final_url': url,
            'redirects': [], 'content_type': None, 'fetch_time': now_iso(),
            'elapsed': 0.0, 'length': 0, 'truncated': False, 'digest': None,
            'encoding': None, 'body': None, 'headers': {}, 'attempts': 0})

    def _conditional_headers(self, rec):
        headers = {}
        if rec.get('etag'):
            headers['If-None-Match'] = rec['etag']
        if rec.get('last_modified'):
            headers['If-Modified-Since'] = rec['last_modified']
        if headers:
            self._stat('conditional_requests_total')
        return headers or None

    def _request(self, url, doc, headers=None):
        """One request of a chain, retried on 5xx/429/transient errors with backoff.

        Returns a :class:`_Hop` with the redirect target (absolute, not yet normalised)
        or with ``target=None`` when *doc* holds the final answer.
        """
        attempt = 0
        while True:
            self._wait_turn()
            self._fetched.add(url)
            doc['attempts'] += 1
            deadline = self._deadline()
            pause = 0.0
            entry = None
            try:
                resp, entry = self._get(url, deadline, headers)
                try:
                    code = resp.status_code
                    if (code == 429 or code >= 500) and attempt < self.max_retries:
                        wait = retry_after_seconds(resp.headers.get('retry-after'))
                        if wait is None or wait <= self.max_retry_after:
                            pause = max(wait or 0.0, self.retry_backoff * 2 ** attempt)
                            attempt += 1
                            self._stat('retries_total')
                            continue
                        self._stat('retry_after_over_cap_total')
                    if resp.is_redirect:
                        return _Hop(urls.resolve(url, resp.headers.get('location')) or '')
                    self._record_response(doc, resp, deadline)
                    return _Hop()
                finally:
                    self._drain(resp, deadline)
                    resp.close()
            except (requests.RequestException, OSError, urllib3.exceptions.HTTPError) as e:
                if entry is not None:
                    self._disarm(entry, deadline, e)
                if _error_reason(e) in _RETRY_REASONS and attempt < self.max_retries:
                    pause = self.retry_backoff * 2 ** attempt
                    attempt += 1
                    self._stat('retries_total')
                    continue
                raise
            finally:
                if entry is not None:
                    WATCHDOG.disarm(entry)
                self._done_request(pause)

    def _check_hop(self, doc, target):
        """(status, reason) when a redirect to *target* must not be followed, else None.

        Every hop passes what the job's mapper checks for in/ URLs (http(s), normalises,
        length) and stays within this politeness key: a hop to another key is recorded
        (status redirected, final_url = the target) and the crawl database takes the
        target for the next layer, as Nutch does with http.redirect.max = 0, because
        another key may be fetched by another reducer at this very moment.
        """
        if target is None:
            return R.FETCH_HTTP_ERROR, 'bad_redirect'
        if len(target) > self.max_url_length:
            return R.FETCH_FILTERED, 'redirect_url_too_long'
        if target == doc['url'] or target in doc['redirects'][:-1]:
            return R.FETCH_NETWORK_ERROR, 'redirect_loop'
        if politeness_key(target, self.key_mode) != self.key:
            self._stat('redirect_cross_key_total')
            return R.FETCH_REDIRECTED, 'cross_key'
        if target in self._in_urls or target in self._fetched:
            # In this layer's in/ (it gets its own record) or already fetched by this
            # fetcher: fetching it again under this URL would fetch it twice.
            self._stat('redirect_deduplicated_total')
            return R.FETCH_REDIRECTED, 'duplicate_target'
        if urls.hostname(target) != urls.hostname(doc['url']):
            # Another name of this key (politeness.key = domain or ip): its address
            # passes the policy before its robots.txt is asked for.
            refusal = self._check_host(target)
            if refusal is not None:
                return refusal
        rules = self._rules_for(target)
        if rules is not None and not rules.allowed(target):
            if rules.deny_all:
                return R.FETCH_DEFERRED, rules.reason or 'robots_unavailable'
            return R.FETCH_ROBOTS_DENIED, 'redirect_target'
        return None

    def _fetch_one(self, rec, layer):
        """One doc record for the in/ record *rec*."""
        doc = self._new_doc(rec, layer)
        start = self.clock()
        current = doc['url']
        headers = self._conditional_headers(rec)
        try:
            for hop in range(self.max_redirects + 1):
                if hop:
                    refusal = self._check_hop(doc, current)
                    if refusal is not None:
                        doc.update(status=refusal[0], reason=refusal[1])
                        return doc
                result = self._request(current, doc, headers if not hop else None)
                if result.target is None:
                    return doc
                target = urls.normalize(result.target)
                doc['redirects'].append(target or result.target)
                doc['final_url'] = target or result.target
                if target is None:
                    doc.update(status=R.FETCH_HTTP_ERROR, reason='bad_redirect')
                    return doc
                current = target
            doc.update(status=R.FETCH_NETWORK_ERROR, reason='too_many_redirects')
            return doc
        except OutOfBudget:
            doc.update(status=R.FETCH_DEFERRED, reason='time_budget', final_url=doc['url'],
                       redirects=[], body=None, length=0, digest=None)
        except TimeLimit:
            doc.update(status=R.FETCH_NETWORK_ERROR, reason='time_limit')
        except (requests.RequestException, OSError, urllib3.exceptions.HTTPError) as e:
            reason = _error_reason(e)
            doc.update(status=R.FETCH_FILTERED if reason == 'private_address'
                       else R.FETCH_NETWORK_ERROR, reason=reason)
        finally:
            doc['elapsed'] = round(self.clock() - start, 4)
        return doc

    def _record_response(self, doc, resp, deadline):
        ctype = resp.headers.get('content-type')
        mime = encoding.mime(ctype)
        doc['http_status'] = resp.status_code
        doc['content_type'] = mime
        doc['headers'] = {k: resp.headers[k] for k in _KEPT_HEADERS if k in resp.headers}
        if self.warc:
            doc['http'] = http_exchange(resp)
        if resp.status_code == 304:
            doc.update(status=R.FETCH_NOT_MODIFIED, reason='http_304')
            return
        if resp.status_code >= 400 or resp.status_code < 200 or resp.status_code >= 300:
            doc.update(status=R.FETCH_HTTP_ERROR, reason='http_%d' % resp.status_code)
            return
        doc['status'] = R.FETCH_FETCHED
        if doc.get('resource_of') is not None:
            self._read_resource(doc, resp, deadline)   # never a body, whatever the type
            return
        html = encoding.is_html(mime)
        if not html and mime not in self.keep_types:
            return      # other types: metadata only (the body is never read)
        body, truncated = self._read_body(resp, self.max_body, deadline)
        doc['length'] = len(body)
        doc['truncated'] = truncated
        doc['digest'] = digest(body)
        if html:
            doc['body'], doc['encoding'] = encoding.decode(body, ctype)
            if self.warc and encoding.encode(doc['body'], doc['encoding']) != body:
                # Decoding was lossy (bytes replaced, a BOM dropped, a character cut by
                # the size limit): the WARC gets the bytes as received.
                doc['warc_body'] = base64.b64encode(body).decode('ascii')
        else:
            # A configured type: the bytes as they came, for a handler downstream. Not
            # put in `body`, which the parse job reads as HTML.
            doc['raw_body'] = base64.b64encode(body).decode('ascii')

    def _rules_for(self, url):
        if not self.obey_robots:
            return None
        return self.robots_cache.get(urls.origin(url), self._fetch_robots)

    # -- a key ------------------------------------------------------------------------

    def fetch(self, items, layer=0, key=None):
        """Yield one doc record per in/ record in *items* (all of politeness key *key*)."""
        if items and key is None:
            key = politeness_key(items[0]['url'], self.key_mode)
        self.key = key
        self._in_urls = {rec['url'] for rec in items}
        self.session = requests.Session()
        # Nothing from the environment: no ~/.netrc credentials sent to crawled hosts, no
        # proxy or CA bundle from environment variables (requests also stat()s ~/.netrc
        # on every request otherwise).
        self.session.trust_env = False
        self.session.headers['User-Agent'] = self.user_agent
        adapter = SafeAdapter(pool_connections=1, pool_maxsize=1,
                                                max_retries=0)
        self.session.mount('http://', adapter)
        self.session.mount('https://', adapter)
        _tls.sockets = self._sockets
        refusals = {}        # host name -> (status, reason) or None, checked once each
        failures = 0
        cut = None           # (status, reason) for every URL left once the key is cut
        try:
            for rec in items:
                if cut is None and self._out_of_budget():
                    cut = (R.FETCH_DEFERRED, 'time_budget')
                    self._stat('keys_hit_by_time_budget_total')
                if cut is not None:
                    yield self._unfetched(rec, layer, *cut)
                    continue
                name = urls.hostname(rec['url'])
                if name not in refusals:
                    refusals[name] = self._check_host(rec['url'])
                if refusals[name] is not None:
                    yield self._unfetched(rec, layer, *refusals[name])
                    continue
                try:
                    doc = self._fetch_checked(rec, layer)
                except OutOfBudget:
                    doc = self._unfetched(rec, layer, R.FETCH_DEFERRED, 'time_budget')
                if doc['status'] == R.FETCH_DEFERRED and doc['reason'] == 'time_budget':
                    cut = (R.FETCH_DEFERRED, 'time_budget')
                    self._stat('keys_hit_by_time_budget_total')
                elif self._is_failure(doc):
                    failures += 1
                    if self.max_failures and failures >= self.max_failures:
                        # Nutch's fetcher.max.exceptions.per.queue: a host that keeps
                        # failing would only spend the layer's time; try it next layer.
                        cut = (R.FETCH_DEFERRED, 'host_failures')
                        self._stat('keys_above_failure_threshold_total')
                elif doc['status'] in (R.FETCH_FETCHED, R.FETCH_NOT_MODIFIED,
                                       R.FETCH_HTTP_ERROR, R.FETCH_REDIRECTED):
                    failures = 0
                yield doc
        finally:
            _tls.sockets = None
            self.session.close()

    def _out_of_budget(self):
        return self.budget_deadline is not None and self.clock() >= self.budget_deadline

    @staticmethod
    def _is_failure(doc):
        if doc['status'] == R.FETCH_NETWORK_ERROR:
            return True
        return doc['status'] == R.FETCH_HTTP_ERROR and (doc['http_status'] or 0) in \
            (429,) + tuple(range(500, 600))

    @staticmethod
    def _check_host(url):
        """(status, reason) when no URL of this host can be fetched, else None.

        Resolving once up front keeps a host whose name does not resolve, or that sits
        on a refused network, from costing a timeout (and a robots.txt try) per URL.
        """
        name = urls.hostname(url)
        port = 443 if url.startswith('https:') else 80
        try:
            RESOLVER.resolve(name, port)
        except Blocked:
            return R.FETCH_FILTERED, 'private_address'
        except (socket.gaierror, UnicodeError):
            return R.FETCH_NETWORK_ERROR, 'dns'
        except OSError as e:
            return R.FETCH_NETWORK_ERROR, _error_reason(e)
        return None

    def _fetch_checked(self, rec, layer):
        url = rec['url']
        rules = self._rules_for(url)
        if rules is not None:
            if not rules.allowed(url):
                return self._unfetched(rec, layer, R.FETCH_DEFERRED if rules.deny_all
                                       else R.FETCH_ROBOTS_DENIED,
                                       rules.reason or 'disallowed')
            crawl_delay = rules.crawl_delay()
            if crawl_delay is not None:
                if crawl_delay > self.max_crawl_delay:
                    self._stat('robots_denied_max_crawl_delay_total')
                    return self._unfetched(rec, layer, R.FETCH_ROBOTS_DENIED, 'crawl_delay')
                if crawl_delay > self.delay:
                    self._stat(C.CRAWL_DELAY_RAISED)
                    self.delay = crawl_delay
                    # The robots.txt request itself ended under the old delay.
                    self._next_request = max(self._next_request,
                                             self._last_end + self.delay)
        return self._fetch_one(rec, layer)

    @staticmethod
    def _unfetched(rec, layer, status, reason):
        return _carry(rec, {
            'kind': 'doc', 'url': rec['url'], 'depth': rec.get('depth', 0),
            'layer': layer, 'status': status, 'reason': reason, 'http_status': None,
            'final_url': rec['url'], 'redirects': [], 'content_type': None,
            'fetch_time': now_iso(), 'elapsed': 0.0, 'length': 0, 'truncated': False,
            'digest': None, 'encoding': None, 'body': None, 'headers': {},
            'attempts': 0})
