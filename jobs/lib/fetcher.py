"""Fetching one host's URLs politely: robots.txt, one connection, a delay between requests.

``HostFetcher(conf, robots_cache).fetch(host_key, in_records)`` yields one doc record
(see jobs.lib.records) per input record, whatever happens: nothing is lost. The fetch
job runs many HostFetchers at once in threads, one per host.

Security: every TCP connection goes through :func:`_safe_create_connection`, which
resolves the name through a cache and refuses loopback, private, link-local, multicast
and reserved addresses unless ``security.allow_private_networks`` is on. Because the
check sits where the socket is opened, it covers every redirect hop and cannot be
dodged by a name that resolves differently on a second lookup.
"""
import base64
import hashlib
import ipaddress
import socket
import threading
import time
from datetime import datetime, timezone

import requests
import urllib3.util.connection

from jobs.lib import encoding, records as R, robots, urls

HTML_TYPES = ('text/html', 'application/xhtml+xml')
_KEPT_HEADERS = ('etag', 'last-modified', 'x-robots-tag', 'retry-after', 'content-length')
_CHUNK = 64 * 1024


class Blocked(OSError):
    """A connection refused by the address policy (reason: private_address)."""


def _ip_is_public(ip):
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class Resolver:
    """getaddrinfo with a cache (names are resolved once per task) and the address policy."""

    def __init__(self, allow_private=False, ttl=3600.0):
        self.allow_private = allow_private
        self.ttl = ttl
        self._cache = {}
        self._lock = threading.Lock()

    def resolve(self, host, port):
        key = (host, port)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[1] < self.ttl:
            infos = hit[0]
        else:
            infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
            with self._lock:
                self._cache[key] = (infos, now)
        if not self.allow_private:
            for info in infos:
                ip = ipaddress.ip_address(info[4][0].split('%', 1)[0])
                if not _ip_is_public(ip):
                    raise Blocked('%s resolves to non-public address %s' % (host, ip))
        return infos


RESOLVER = Resolver()


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
            return sock
        except OSError as e:
            err = e
            if sock is not None:
                sock.close()
    raise err if err is not None else OSError('getaddrinfo returned nothing')


urllib3.util.connection.create_connection = _safe_create_connection


def now_iso():
    return datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def digest(body):
    """``sha1:`` + base32 of the SHA-1 of *body*: the WARC payload digest form."""
    return 'sha1:' + base64.b32encode(hashlib.sha1(body).digest()).decode('ascii')


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
            return 'connection_reset' if isinstance(exc, ConnectionResetError) \
                else 'protocol_error'
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


class TimeLimit(Exception):
    """The whole-request time limit ran out."""


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


class HostFetcher:
    """Fetches URLs of one politeness key, sequentially, with the configured delay."""

    def __init__(self, conf, robots_cache=None, clock=time.monotonic, sleep=time.sleep):
        self.conf = conf
        pol, fet = conf['politeness'], conf['fetch']
        self.user_agent = pol['user_agent']
        self.delay = pol['delay']
        self.obey_robots = pol['obey_robots']
        self.max_crawl_delay = pol['max_crawl_delay']
        self.timeout = (fet['connect_timeout'], fet['read_timeout'])
        self.max_seconds = fet['max_request_seconds']
        self.max_body = fet['max_body_bytes']
        self.max_redirects = fet['max_redirects']
        self.robots_cache = robots_cache or RobotsCache()
        RESOLVER.allow_private = conf['security']['allow_private_networks']
        self.clock = clock
        self.sleep = sleep
        self._next_request = 0.0
        self.session = None
        self.robots_fetches = 0     # robots.txt requests this fetcher made
        self.robots_failures = 0

    # -- politeness ---------------------------------------------------------------

    def _wait_turn(self, delay):
        wait = self._next_request - self.clock()
        if wait > 0:
            self.sleep(wait)

    def _done_request(self, delay):
        self._next_request = self.clock() + delay

    # -- robots.txt ---------------------------------------------------------------

    def _fetch_robots(self, origin):
        """Rules for *origin*: RFC 9309 error handling, up to 5 redirects, 500 KiB."""
        if not self.obey_robots:
            return robots.Rules(allow_all=True)
        url = origin + '/robots.txt'
        self.robots_fetches += 1
        try:
            for _ in range(6):
                resp = self.session.get(url, stream=True, allow_redirects=False,
                                        timeout=self.timeout)
                try:
                    if resp.is_redirect:
                        url = urls.normalize(urls.resolve(url, resp.headers.get('location')))
                        if url is None:
                            return robots.Rules(allow_all=True, reason='robots_bad_redirect')
                        continue
                    if 400 <= resp.status_code < 500:
                        return robots.Rules(allow_all=True, reason='robots_%d' % resp.status_code)
                    if resp.status_code >= 500:
                        self.robots_failures += 1
                        return robots.Rules(deny_all=True, reason='robots_%d' % resp.status_code)
                    body, _ = self._read_body(resp, robots.MAX_ROBOTS_BYTES,
                                              self.clock() + self.max_seconds)
                    return robots.Rules(body, self.user_agent)
                finally:
                    resp.close()
            # RFC 9309: more than five redirects may be treated as unreachable... but
            # as "allow all" for 4xx-like; we treat it as unavailable.
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_redirect_loop')
        except (requests.RequestException, OSError, TimeLimit, urllib3.exceptions.HTTPError) as e:
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_' + _error_reason(e))
        finally:
            self._done_request(self.delay)

    # -- one request ----------------------------------------------------------------

    def _read_body(self, resp, limit, deadline):
        """Read up to *limit* decoded bytes; returns (bytes, truncated)."""
        chunks, size = [], 0
        raw = resp.raw
        while True:
            if self.clock() > deadline:
                raise TimeLimit()
            chunk = raw.read1(_CHUNK, decode_content=True) if hasattr(raw, 'read1') \
                else raw.read(_CHUNK, decode_content=True)
            if not chunk:
                return b''.join(chunks), False
            chunks.append(chunk)
            size += len(chunk)
            if size >= limit:
                body = b''.join(chunks)
                return body[:limit], True

    def _fetch_one(self, rec, layer):
        """One doc record for the in/ record *rec*."""
        url = rec['url']
        doc = {'kind': 'doc', 'url': url, 'depth': rec.get('depth', 0), 'layer': layer,
               'status': None, 'reason': None, 'http_status': None, 'final_url': url,
               'redirects': [], 'content_type': None, 'fetch_time': now_iso(),
               'elapsed': 0.0, 'length': 0, 'truncated': False, 'digest': None,
               'encoding': None, 'body': None, 'headers': {}}
        start = self.clock()
        current = url
        try:
            for hop in range(self.max_redirects + 1):
                if hop:
                    rules = self._rules_for(current)
                    if rules is not None and not rules.allowed(current):
                        doc.update(status=R.FETCH_ROBOTS_DENIED, reason='redirect_target')
                        return doc
                self._wait_turn(self.delay)
                deadline = self.clock() + self.max_seconds
                try:
                    resp = self.session.get(current, stream=True, allow_redirects=False,
                                            timeout=self.timeout)
                except Exception:
                    self._done_request(self.delay)
                    raise
                try:
                    if resp.is_redirect:
                        target = urls.normalize(urls.resolve(current, resp.headers.get('location')))
                        if target is None:
                            doc.update(status=R.FETCH_HTTP_ERROR, http_status=resp.status_code,
                                       reason='bad_redirect')
                            return doc
                        doc['redirects'].append(target)
                        current = target
                        doc['final_url'] = target
                        continue
                    self._record_response(doc, resp, deadline)
                    return doc
                finally:
                    resp.close()
                    self._done_request(self.delay)
            doc.update(status=R.FETCH_NETWORK_ERROR, reason='too_many_redirects')
            return doc
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
        mime = ctype.split(';', 1)[0].strip().lower() if ctype else None
        doc['http_status'] = resp.status_code
        doc['content_type'] = mime
        doc['headers'] = {k: resp.headers[k] for k in _KEPT_HEADERS if k in resp.headers}
        if resp.status_code == 304:
            doc.update(status=R.FETCH_NOT_MODIFIED)
            return
        if resp.status_code >= 400 or resp.status_code < 200:
            doc.update(status=R.FETCH_HTTP_ERROR, reason='http_%d' % resp.status_code)
            return
        doc['status'] = R.FETCH_FETCHED
        if mime not in HTML_TYPES and mime is not None:
            return      # other types: metadata only
        body, truncated = self._read_body(resp, self.max_body, deadline)
        doc['length'] = len(body)
        doc['truncated'] = truncated
        doc['digest'] = digest(body)
        doc['body'], doc['encoding'] = encoding.decode(body, ctype)

    def _rules_for(self, url):
        if not self.obey_robots:
            return None
        return self.robots_cache.get(urls.origin(url), self._fetch_robots)

    # -- a host -------------------------------------------------------------------------

    def fetch(self, items, layer=0):
        """Yield one doc record per in/ record in *items* (all of one politeness key)."""
        self.session = requests.Session()
        self.session.headers['User-Agent'] = self.user_agent
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=1,
                                                max_retries=0)
        self.session.mount('http://', adapter)
        self.session.mount('https://', adapter)
        try:
            refusal = self._check_host(items[0]['url']) if items else None
            for rec in items:
                if refusal is not None:
                    yield self._unfetched(rec, layer, *refusal)
                else:
                    yield self._fetch_checked(rec, layer)
        finally:
            self.session.close()

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
                    return self._unfetched(rec, layer, R.FETCH_ROBOTS_DENIED, 'crawl_delay')
                self.delay = max(self.delay, crawl_delay)
        return self._fetch_one(rec, layer)

    @staticmethod
    def _unfetched(rec, layer, status, reason):
        return {'kind': 'doc', 'url': rec['url'], 'depth': rec.get('depth', 0),
                'layer': layer, 'status': status, 'reason': reason, 'http_status': None,
                'final_url': rec['url'], 'redirects': [], 'content_type': None,
                'fetch_time': now_iso(), 'elapsed': 0.0, 'length': 0, 'truncated': False,
                'digest': None, 'encoding': None, 'body': None, 'headers': {}}
