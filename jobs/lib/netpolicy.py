"""Where a fetch may connect: the address policy, a caching resolver, and the requests
adapter whose connections go through both.

Every TCP connection of a fetcher's session is opened by :func:`safe_create_connection`
(mounted by :class:`SafeAdapter` on the crawl's own sessions only; nothing is patched
process-wide). It resolves the name through a :class:`Resolver` (a cache) and refuses
loopback, private, link-local, multicast and reserved addresses (also when spelled as
IPv4-mapped, IPv4-compatible, NAT64, 6to4 or Teredo IPv6 addresses) unless the resolver
allows private networks (``security.allow_private_networks``). Because the check sits
where the socket is opened, it covers every redirect hop and cannot be dodged by a name
that resolves differently on a second lookup.

The sockets a thread opens are added to the set it registered with
:func:`track_sockets`, so that the watchdog (jobs.lib.watchdog) can cut a stalled request.
"""
import ipaddress
import socket
import threading
import time

import requests
import urllib3
import urllib3.connection
import urllib3.contrib.socks
import urllib3.exceptions


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


class Resolver:
    """getaddrinfo with a cache (names are resolved once per TTL) and the address policy.

    One per fetch task (:meth:`for_conf`), shared by its fetchers' threads."""

    def __init__(self, allow_private=False, ttl=3600.0):
        self.allow_private = allow_private
        self.ttl = ttl
        self._cache = {}
        self._lock = threading.Lock()

    @classmethod
    def for_conf(cls, conf):
        """The resolver of a crawl's resolved settings."""
        return cls(conf['security']['allow_private_networks'],
                   conf['fetch']['dns_cache_seconds'])

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


# The fetching thread's open sockets, so the watchdog can cut a stalled request.
_tls = threading.local()


def track_sockets(sockets):
    """Add the sockets this thread opens from now on to *sockets* (None: stop)."""
    _tls.sockets = sockets


def safe_create_connection(address, resolver, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                           source_address=None, socket_options=None):
    """urllib3's create_connection, resolving through *resolver* (cache + policy)."""
    host, port = address
    if host.startswith('['):
        host = host.strip('[]')
    err = None
    for family, socktype, proto, _, sockaddr in resolver.resolve(host, port):
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
    """An HTTPConnection that connects through :func:`safe_create_connection` with its
    class's ``resolver`` (bound per adapter: :class:`SafeAdapter`)."""

    resolver = None

    def _new_conn(self):
        try:
            return safe_create_connection((self._dns_host, self.port), self.resolver,
                                          self.timeout, source_address=self.source_address,
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


class SafeAdapter(requests.adapters.HTTPAdapter):
    """The crawl's HTTPAdapter: its connections resolve and connect through *resolver*.

    Mounted on the fetchers' sessions only, so that other HTTP clients in the same
    process (the driver's WebHDFS client, with the inline runner) keep their own rules.
    urllib3 builds connections from a pool's class attribute, so the resolver is bound
    to connection and pool classes made for this adapter.
    """

    def __init__(self, resolver, **kwargs):
        self.resolver = resolver
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _pool_classes(self.resolver)

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        """A proxy's connections (jobs.lib.routes) go to the proxy, an address the
        operator chose, so its own is not checked (the page's host is, before the
        request); they are tracked for the watchdog like the others."""
        fresh = proxy not in self.proxy_manager
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if fresh and proxy.lower().startswith('socks'):
            manager.pool_classes_by_scheme = _SOCKS_POOLS     # PySocks connects
        elif fresh:
            manager.pool_classes_by_scheme = _pool_classes(
                Resolver(allow_private=True, ttl=self.resolver.ttl))
        return manager


class _TrackedSOCKSConnection(urllib3.contrib.socks.SOCKSConnection):
    """A connection through a SOCKS proxy (PySocks opens it), tracked for the watchdog."""

    def _new_conn(self):
        sock = super()._new_conn()
        owner = getattr(_tls, 'sockets', None)
        if owner is not None:
            owner.add(sock)
        return sock


class _TrackedSOCKSHTTPSConnection(_TrackedSOCKSConnection,
                                   urllib3.connection.HTTPSConnection):
    pass


_SOCKS_POOLS = {
    'http': type('SOCKSPool', (urllib3.contrib.socks.SOCKSHTTPConnectionPool,),
                 {'ConnectionCls': _TrackedSOCKSConnection}),
    'https': type('SOCKSHTTPSPool', (urllib3.contrib.socks.SOCKSHTTPSConnectionPool,),
                  {'ConnectionCls': _TrackedSOCKSHTTPSConnection})}


def _pool_classes(resolver):
    """urllib3's pool classes by scheme, their connections bound to *resolver*."""
    bound = {'resolver': resolver}
    http = type('HTTPConnection', (_SafeHTTPConnection,), bound)
    https = type('HTTPSConnection', (_SafeHTTPSConnection,), bound)
    return {'http': type('HTTPPool', (urllib3.HTTPConnectionPool,), {'ConnectionCls': http}),
            'https': type('HTTPSPool', (urllib3.HTTPSConnectionPool,),
                          {'ConnectionCls': https})}
