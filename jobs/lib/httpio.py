"""One HTTP exchange of a politeness key: its session, a request under the watchdog,
bodies read within limits, and what a failure or a Retry-After means.

A :class:`KeySession` holds one pooled connection (``pool_maxsize=1``: the key's
requests go out one at a time anyway) through the address policy (jobs.lib.netpolicy),
and takes nothing from the environment: no ~/.netrc credentials sent to crawled hosts,
no proxy or CA bundle from environment variables (requests also stat()s ~/.netrc on
every request otherwise). Every request is armed on the watchdog (jobs.lib.watchdog)
with its deadline; a body is read in chunks and never past its size limit, so a gzip
bomb never inflates past the limit plus one chunk (urllib3 >= 2.6 decompresses at most
*amt* bytes per ``read1`` call).

With fetch.verify_tls false, a host whose certificate fails verification is asked
again without it, once per session, and its pages are recorded ``tls_verified: false``
(:meth:`KeySession.tls_verified`) with why in :attr:`KeySession.unverified`.
"""
import base64
import email.utils
import hashlib
import os
import socket
import ssl
import tempfile
import threading
import time
import warnings
import weakref
from datetime import datetime, timezone

import certifi
import requests
import socks
import urllib3
import urllib3.exceptions

from jobs.lib import netpolicy, records as R, urls
from jobs.lib.netpolicy import Blocked
from jobs.lib.records import now_iso
from jobs.lib.secretref import SecretError
from jobs.lib.watchdog import WATCHDOG

#: Response headers a doc record keeps.
KEPT_HEADERS = ('etag', 'last-modified', 'x-robots-tag', 'retry-after', 'content-length',
                'content-encoding')
_CHUNK = 64 * 1024
_DRAIN_BYTES = 64 * 1024   # unread bodies up to this are read to keep the connection
#: Network error reasons worth a retry: the server or the path may recover in seconds.
#: dns, private_address, tls*, connection_refused and time_limit are not retried: they
#: rarely heal within a layer and a retry would only spend the host's time.
RETRY_REASONS = ('read_timeout', 'connect_timeout', 'connection_reset', 'protocol_error',
                 'connection_error')
#: What a failed request raises through requests, urllib3 and the socket layer.
NETWORK_ERRORS = (requests.RequestException, OSError, urllib3.exceptions.HTTPError)


class SecretUnavailable(OSError):
    """A secret the request needs (a proxy's password: jobs.lib.secretref) cannot be read
    in this task: network_error, reason secret_unavailable."""


class KeySession:
    """One politeness key's HTTP session. *slot* (jobs.lib.politeness.Slot) gives the
    clock and what running past a deadline means. With *warc* (warc.enabled) it keeps
    the robots.txt and redirect answers the fetcher hands it (:meth:`keep`) until the
    next doc record takes them (:meth:`attach_kept`)."""

    def __init__(self, user_agent, timeout, resolver, slot, warc=False, ca_bundle='',
                 verify_tls=True, routes=None):
        self.timeout = timeout
        self.resolver = resolver
        self.routes = routes        # jobs.lib.routes.Routes: proxies, site extras, or None
        #: why a site's credentials and headers were left off requests -> how many:
        #: http (plain http, no over_http), unverified (a certificate that failed)
        self.withheld = {}
        self.secret_headers = routes.secret_headers if routes else SECRET_REQUEST_HEADERS
        self.slot = slot
        self.warc, self.kept = warc, []
        self.verify_tls = verify_tls
        #: origin (https://host[:port]) -> why its certificate failed (a tls_*
        #: reason): asked without verification since (verify_tls false)
        self.unverified = {}
        self._sockets = weakref.WeakSet()
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.verify = trust_store(ca_bundle)
        self.session.headers['User-Agent'] = user_agent
        adapter = netpolicy.SafeAdapter(resolver, pool_connections=1, pool_maxsize=1,
                                        max_retries=0)
        self.session.mount('http://', adapter)
        self.session.mount('https://', adapter)
        self.track()

    def track(self):
        """The sockets this thread opens from now on are this session's (the watchdog
        cuts them): the thread that uses the session calls it, if another made it."""
        netpolicy.track_sockets(self._sockets)

    def close(self):
        netpolicy.track_sockets(None)
        self.session.close()

    def keep(self, kind, url, resp, body=None, truncated=False):
        """With warc, keep a robots.txt (*kind* ``robots``) or redirect (``redirect``)
        answer to *url* for the WARC, as Heritrix archives them (jobs.lib.warcfile).
        *body*: the bytes read (None: not read, as an error page's)."""
        if self.warc:
            self.kept.append({
                'kind': kind, 'url': url, 'fetch_time': now_iso(),
                'http_status': resp.status_code,
                'http': http_exchange(resp, self.secret_headers),
                'body': None if body is None else base64.b64encode(body).decode('ascii'),
                'truncated': bool(truncated)})

    def keep_redirect(self, url, resp, limit, deadline):
        """With warc, read a 3xx answer's body (up to *limit*, as a page's) and keep it;
        else the caller drains it."""
        if self.warc:
            try:
                body, truncated = self.read_body(resp, limit, deadline)
            except NETWORK_ERRORS:      # the hop's answer stands; its body is unknown
                body, truncated = None, False
            self.keep('redirect', url, resp, body, truncated)

    def attach_kept(self, doc):
        """*doc* carrying the answers kept since the previous doc (``warc_exchanges``)."""
        if self.kept:
            doc['warc_exchanges'], self.kept = self.kept, []
        return doc

    def _cut(self):
        """Watchdog thread: shut this key's sockets down; the blocked read returns."""
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

    def get(self, url, deadline, headers=None):
        """``session.get`` (streamed, no redirects) under the watchdog.

        Returns (response, watchdog entry): the entry stays armed while the body is read
        and must be passed to :meth:`disarm`.
        """
        self.track()    # a key's flow may move from thread to thread (jobs.lib.keyqueue)
        entry = WATCHDOG.arm(time.monotonic() + max(0.0, deadline - self.slot.clock()),
                             self._cut)
        try:
            resp = self._get(url, headers)
        except Exception:
            if WATCHDOG.disarm(entry):
                raise self.slot.limit_error(deadline)
            raise
        return resp, entry

    def _get(self, url, headers):
        if self.unverified and urls.origin(url) in self.unverified:
            return self._send(url, headers, verify=False)
        try:
            return self._send(url, headers)
        except requests.exceptions.SSLError as e:
            reason = tls_reason(e)
            if self.verify_tls or reason == 'tls':    # tls: no certificate to overlook
                raise
            self.unverified[urls.origin(url)] = reason
            return self._send(url, headers, verify=False)

    def _send(self, url, headers, verify=None):
        proxies, auth = None, None
        if self.routes:
            try:
                proxy, extras = self.routes.proxy(url), self.routes.extras(url)
            except SecretError as e:
                raise SecretUnavailable(str(e)) from None
            if proxy is not None:
                # The proxy connects to the host: the policy checks it here first.
                self.resolver.resolve(urls.hostname(url),
                                      443 if url.startswith('https:') else 80)
                proxies = {'http': proxy, 'https': proxy}
            if extras is not None:
                withheld = 'unverified' if verify is False else 'http' if \
                    url.startswith('http:') and not extras.over_http else None
                if withheld:
                    self.withheld[withheld] = self.withheld.get(withheld, 0) + 1
                else:
                    headers, auth = dict(extras.headers, **(headers or {})), extras.auth
        if verify is not False:
            return self.session.get(url, stream=True, allow_redirects=False,
                                    timeout=self.timeout, headers=headers, proxies=proxies,
                                    auth=auth)
        with warnings.catch_warnings():    # verify=False: one warning a request, not news
            warnings.simplefilter('ignore', urllib3.exceptions.InsecureRequestWarning)
            return self.session.get(url, stream=True, allow_redirects=False,
                                    timeout=self.timeout, headers=headers, verify=False,
                                    proxies=proxies, auth=auth)

    def tls_verified(self, url):
        """Was *url*'s answer sent over TLS with a verified certificate? None for
        http."""
        if not url.startswith('https:'):
            return None
        return urls.origin(url) not in self.unverified

    def disarm(self, entry, deadline, exc=None):
        """Stop the watchdog; an error it caused becomes TimeLimit/OutOfBudget."""
        if WATCHDOG.disarm(entry) and exc is not None:
            raise self.slot.limit_error(deadline) from exc

    def stream(self, resp, limit, deadline, sink):
        """Feed up to *limit* decoded bytes of *resp* to *sink*; True if more followed."""
        size, raw = 0, resp.raw
        while True:
            if self.slot.clock() > deadline:
                raise self.slot.limit_error(deadline)
            chunk = raw.read1(min(_CHUNK, limit - size + 1), decode_content=True)
            if not chunk:
                return False
            if size + len(chunk) > limit:
                sink(chunk[:limit - size])
                return True
            sink(chunk)
            size += len(chunk)

    def read_body(self, resp, limit, deadline):
        """Read up to *limit* decoded bytes; returns (bytes, truncated)."""
        chunks = []
        truncated = self.stream(resp, limit, deadline, chunks.append)
        return b''.join(chunks), truncated

    def drain(self, resp, deadline):
        """Read the rest of a small unread body (redirects, errors, metadata-only types)
        so the connection goes back to the pool instead of being closed. A content-coded
        body partly read (decoded) stays unread: urllib3 reads no raw bytes after decoded
        ones, and decoding the rest could inflate far past what its wire size says."""
        try:
            size = int(resp.headers.get('content-length', -1))
        except ValueError:
            return
        if not 0 <= size <= _DRAIN_BYTES or resp.raw.closed or \
                resp.raw.tell() and resp.headers.get('content-encoding'):
            return
        try:
            while self.slot.clock() < deadline and resp.raw.read(_DRAIN_BYTES,
                                                                 decode_content=False):
                pass
        except (OSError, urllib3.exceptions.HTTPError):
            pass     # the connection is dropped: that is all a failed drain costs


def declared_length(headers):
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


#: Request headers that carry credentials: never kept for the WARC (http_exchange,
#: jobs.lib.warcfile.request_headers), whatever sent them (a session's cookie jar).
SECRET_REQUEST_HEADERS = frozenset(('authorization', 'proxy-authorization', 'cookie'))


def http_exchange(resp, secret=SECRET_REQUEST_HEADERS):
    """What a WARC request/response pair needs beyond the doc record (warc.enabled):
    ``{version, reason, headers, request}``; headers are ``[name, value]`` lists in the
    order received (repeated names kept), request = {method, path, headers sent but
    *secret* (lower-case names: :data:`SECRET_REQUEST_HEADERS` and a site's headers
    that hold a secret, jobs.lib.routes)}."""
    version = getattr(resp.raw, 'version', 11)
    raw_headers = getattr(resp.raw, 'headers', None) or resp.headers
    req = resp.request
    return {'version': 'HTTP/1.0' if version == 10 else 'HTTP/1.1',
            'reason': resp.reason or '',
            'headers': [[k, v] for k, v in raw_headers.items()],
            'request': {'method': req.method or 'GET', 'path': req.path_url,
                        'headers': [[k, v] for k, v in req.headers.items()
                                    if k.lower() not in secret]}}


def host_refusal(resolver, url):
    """(status, reason) when no URL of *url*'s host can be fetched, else None.

    Resolving once up front keeps a host whose name does not resolve, or that sits on a
    refused network, from costing a timeout (and a robots.txt try) per URL.
    """
    port = 443 if url.startswith('https:') else 80
    try:
        resolver.resolve(urls.hostname(url), port)
    except Blocked:
        return R.FETCH_FILTERED, 'private_address'
    except (socket.gaierror, UnicodeError):
        return R.FETCH_NETWORK_ERROR, 'dns'
    except OSError as e:
        return R.FETCH_NETWORK_ERROR, error_reason(e)
    return None


def _chain(exc):
    """*exc* and the exceptions it wraps, outermost first: its cause or context, else
    its first argument or its ``reason`` (how requests and urllib3 wrap theirs)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        nxt = exc.__cause__ or exc.__context__
        if nxt is None and exc.args and isinstance(exc.args[0], BaseException):
            nxt = exc.args[0]
        if nxt is None and hasattr(exc, 'reason') and isinstance(exc.reason, BaseException):
            nxt = exc.reason
        exc = nxt


def error_reason(exc):
    """Short reason for a network exception (used in counters)."""
    for exc in _chain(exc):
        if isinstance(exc, Blocked):
            return 'private_address'
        if isinstance(exc, SecretUnavailable):
            return 'secret_unavailable'
        if isinstance(exc, (requests.exceptions.ProxyError, urllib3.exceptions.ProxyError,
                            socks.ProxyError)):       # socks: PySocks's, a SOCKS5 proxy's
            return 'proxy_error'
        if isinstance(exc, socket.gaierror):
            return 'dns'
        if isinstance(exc, (requests.exceptions.ConnectTimeout,)):
            return 'connect_timeout'
        if isinstance(exc, (requests.exceptions.ReadTimeout, socket.timeout,
                            urllib3.exceptions.ReadTimeoutError)):
            return 'read_timeout'
        if isinstance(exc, (requests.exceptions.SSLError, ssl.SSLError)):
            return tls_reason(exc)
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
    return 'connection_error'


#: OpenSSL's verification codes (X509_V_ERR_*) -> the reason a page gets.
TLS_REASONS = {9: 'tls_not_yet_valid', 10: 'tls_expired', 62: 'tls_hostname',
               64: 'tls_hostname', 18: 'tls_self_signed', 2: 'tls_untrusted',
               19: 'tls_untrusted', 20: 'tls_untrusted', 21: 'tls_untrusted'}


def tls_reason(exc):
    """The reason of a failed TLS exchange: what its certificate failed (TLS_REASONS,
    else tls_certificate), or tls for a handshake that failed otherwise."""
    failed = next((e for e in _chain(exc) if isinstance(e, ssl.SSLCertVerificationError)),
                  None)
    return 'tls' if failed is None else TLS_REASONS.get(failed.verify_code, 'tls_certificate')


_BUNDLES, _BUNDLES_LOCK = {}, threading.Lock()


def trust_store(ca_bundle):
    """What a session verifies certificates against: True (certifi's bundle) or, with
    *ca_bundle* (fetch.ca_bundle), a file of certifi's bundle and then its CAs (requests
    takes one file; the extra CAs add to the usual ones). The file is named by its
    content in the temporary folder, so every task of a machine shares one, and none is
    left per task (forked tasks end without atexit)."""
    if not ca_bundle:
        return True
    with _BUNDLES_LOCK:
        if ca_bundle not in _BUNDLES:
            with open(certifi.where(), 'rb') as f:
                usual = f.read()
            with open(ca_bundle, 'rb') as f:
                extra = f.read()
            data = usual + b'\n' + extra
            path = os.path.join(tempfile.gettempdir(), 'mrcrawl-ca-%s.pem'
                                % hashlib.sha256(data).hexdigest()[:16])
            if not os.path.exists(path):
                fd, tmp = tempfile.mkstemp(prefix='.mrcrawl-ca-', dir=os.path.dirname(path))
                with os.fdopen(fd, 'wb') as f:
                    f.write(data)
                os.replace(tmp, path)      # whole or absent: tasks race to write it
            _BUNDLES[ca_bundle] = path
        return _BUNDLES[ca_bundle]


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
