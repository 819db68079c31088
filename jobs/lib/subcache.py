"""A fetch task's HTTP cache of its rendered pages' requests (jobs.lib.subrequest), as a
browser keeps one: the script or style sheet every page of a site loads is asked of the
server once, not once per page, each time at the cost of the key's delay.

What may be stored, for how long, and how a stale response is revalidated
(``If-None-Match``/``If-Modified-Since``, then 304) follow RFC 9111 through
CacheControl's controller, the cache of requests' users; like a browser, a response
with ``Last-Modified`` and no stated lifetime is fresh for a tenth of its age (at most
a day: CacheControl's LastModified heuristic). The entries are kept in memory, up to
``render.cache_bytes``, the least recently used dropped first.
"""
import collections
import io
import threading

import requests
import urllib3


class _Bounded:
    """Serialized entries up to *limit* bytes; the least recently used go first
    (CacheControl's BaseCache interface)."""

    def __init__(self, limit):
        self.limit, self.size = limit, 0
        self._data = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def set(self, key, value, expires=None):
        with self._lock:
            self._pop(key)
            if len(value) > self.limit:
                return
            self._data[key] = value
            self.size += len(value)
            while self.size > self.limit:
                self.size -= len(self._data.popitem(last=False)[1])

    def delete(self, key):
        with self._lock:
            self._pop(key)

    def close(self):
        pass

    def _pop(self, key):
        old = self._data.pop(key, None)
        if old is not None:
            self.size -= len(old)


class Stale:
    """A lookup that found no fresh response: *validators* are the conditional headers
    to send (empty: nothing stored to revalidate)."""

    def __init__(self, request, validators):
        self.request, self.validators = request, validators


class SubCache:
    """Thread-safe: the task's pool threads look up and store at once."""

    def __init__(self, limit):
        # Imported here: CacheControl ships to YARN only with crawls that render, and
        # every fetch task imports this module (jobs.fetch -> render -> subrequest).
        from cachecontrol.controller import CacheController
        from cachecontrol.heuristics import LastModified
        self._controller = CacheController(_Bounded(limit), cache_etags=True)
        self._heuristic = LastModified()

    def lookup(self, url, headers):
        """(status, headers, body) of a fresh stored response to GET *url* with request
        *headers*, or a :class:`Stale` to pass to :meth:`store` with the response."""
        request = requests.Request('GET', url, headers=headers).prepare()
        resp = self._controller.cached_request(request)
        if resp:
            return _triple(resp)
        return Stale(request, self._controller.conditional_headers(request))

    def store(self, stale, status, headers, body):
        """Keep a response (*headers* without the wire's framing; *body* decoded) as its
        headers allow. A 304 to the validators of *stale* refreshes the stored response:
        it is returned, to answer in the 304's place (None if it was dropped meanwhile)."""
        resp = urllib3.HTTPResponse(body=io.BytesIO(b''), headers=headers, status=status,
                                    version=11, reason='', preload_content=False,
                                    decode_content=False)
        if status == 304 and stale.validators:
            cached = self._controller.update_cached_response(stale.request, resp)
            return _triple(cached) if cached is not resp else None
        self._controller.cache_response(stale.request, self._heuristic.apply(resp), body)
        return None


def _triple(resp):
    return resp.status, dict(resp.headers), resp.read()
