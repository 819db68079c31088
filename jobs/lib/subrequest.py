"""The crawler's side of a rendered page's requests (jobs.lib.render): each request the
browser makes is fetched here, under the rules of a crawl request, or refused with the
reason the render counters name (``subrequests_aborted_<reason>_total``):

- GET and http(s) only; the page's :class:`Budget`: ``render.max_requests`` requests,
  ``render.max_bytes`` body bytes, ``render.max_seconds``;
- the address policy (jobs.lib.netpolicy, through the resolver and the key's
  KeySession), then robots.txt (the task's shared cache), its Crawl-delay too
  (``crawl_delay`` past ``politeness.max_crawl_delay``);
- politeness: a request to the page's own key waits its turn on that key's Slot, so
  the server sees the gaps of a normal fetch (the key's thread is blocked meanwhile,
  and a fetcher's requests go one at a time); a request to another key goes through
  a fetcher of that key made once per task (its own Slot at its delay), unless a
  thread of the task is fetching that key at that moment (``key_busy``); that fetcher
  and the key's thread hand the key's turn over (:meth:`SubRequests.busy`), so the
  key's requests keep its delay whichever of them made the last one;
- the task's cache (jobs.lib.subcache): a fresh stored response is answered without a
  request (``subrequests_cached_total``), a stale one is revalidated
  (``subrequests_revalidated_total`` when the server answers 304).

Requests wait their key's turn, so they run in threads (:meth:`SubRequests.fetch`),
never in the render thread's loop.
"""
import threading
import time

from jobs.lib import counters as C, httpio, politeness, urls
from jobs.lib.fetcher import HostFetcher
from jobs.lib.httpio import NETWORK_ERRORS
from jobs.lib.netpolicy import Blocked
from jobs.lib.politeness import OutOfBudget, TimeLimit
from jobs.lib.routes import Routes
from jobs.lib.subcache import Stale, SubCache

#: Headers that describe the bytes on the wire, not the decoded body handed over.
WIRE_HEADERS = frozenset(('content-encoding', 'content-length', 'transfer-encoding',
                           'connection', 'keep-alive'))
#: Request headers of the browser passed on (the session sends our own User-Agent).
PASSED_HEADERS = ('accept', 'referer')

def _keep_crawl_delay(f, rules):
    """Raise fetcher *f*'s delay to the Crawl-delay of robots.txt *rules* (None: not
    obeyed), as the key's thread does: False if it is over politeness.max_crawl_delay
    (the key's thread would refuse its pages)."""
    delay = rules.crawl_delay() if rules is not None else None
    if delay is None or delay <= f.slot.delay:
        return True
    if delay > f.max_crawl_delay:
        return False
    f.slot.raise_delay(delay)
    return True


class Asked:
    """What the route handler hands the pool of one of the browser's requests."""

    def __init__(self, url, method, headers):
        self.url, self.method, self.headers = url, method, headers


class Budget:
    """One page's allowance of sub-requests."""

    def __init__(self, settings):
        self.requests = settings['max_requests']
        self.bytes = settings['max_bytes']
        self.deadline = time.monotonic() + settings['max_seconds']

    def over(self):
        """The budget's part that is spent ('seconds', 'requests', 'bytes'), or None."""
        if time.monotonic() >= self.deadline:
            return 'seconds'
        if self.requests <= 0:
            return 'requests'
        return 'bytes' if self.bytes <= 0 else None


class SubRequests:
    """A fetch task's fetching of its rendered pages' requests. *stat(name, n)* counts."""

    def __init__(self, conf, robots_cache, resolver, stat):
        self.conf, self.robots_cache, self.resolver, self._stat = \
            conf, robots_cache, resolver, stat
        self.delays = politeness.SiteDelays(conf)
        self.routes = Routes(conf)
        self._lock = threading.Lock()
        self._fetcher_locks = {}
        self._busy = {}      # politeness key -> its threads fetching now
        self._others = {}       # politeness key -> the task's fetcher of it (_other)
        self._ended = {}        # politeness key -> the Slot of its thread that ended last
        #: politeness key -> when its last request in an earlier layer ended (epoch
        #: seconds: the fetch list's pace records), which the task's fetcher of it keeps
        self.paces = {}
        self._cache = None      # made with the first request: only crawls that render

    @property
    def cache(self):
        """The task's cache of the browser's requests (jobs.lib.subcache)."""
        with self._lock:
            if self._cache is None:
                self._cache = SubCache(self.conf['render']['cache_bytes'])
            return self._cache

    def busy(self, key, n, slot):
        """A thread of the task starts (*n* = 1) or ends (-1) fetching *key*, *slot*
        its fetcher's Slot: whether none is fetching it now. Whichever fetcher asks the
        key, its requests keep the delay after the key's last: a thread that starts
        waits for the request the task's fetcher of that key (:meth:`_other`) has in
        flight and keeps the delay after it; once the key's last thread ends, that
        fetcher keeps the delay after the thread's last request."""
        with self._lock:
            self._busy[key] = self._busy.get(key, 0) + n
            idle = not self._busy[key]
            if idle:
                self._ended[key] = slot
            other = self._others.get(key)
        if other is not None and (n > 0 or idle):
            with self._fetcher_lock(other):     # none of its requests is in flight now
                if n > 0:
                    slot.follow(other.slot)
                else:
                    other.slot.follow(slot)
        return idle

    def fetch(self, req, hf, budget):
        """(status, headers, body) of one of the browser's requests, or why not."""
        url = urls.normalize(req.url) if req.url.startswith(('http:', 'https:')) else None
        if url is None:
            return 'scheme'
        if req.method != 'GET':
            return 'method'
        try:
            self.resolver.resolve(urls.hostname(url), 443 if url.startswith('https:') else 80)
        except Blocked:
            return 'private_address'
        except (OSError, UnicodeError):
            return 'dns'
        headers = {k: v for k, v in req.headers.items() if k.lower() in PASSED_HEADERS}
        stored = self._cached(url, headers, budget)
        if not isinstance(stored, Stale):      # no request goes out: no turn to wait
            return stored
        f = hf
        if not hf.same_key(url):
            key = politeness.politeness_key(url, self.conf['politeness']['key'],
                                            self.resolver)
            with self._lock:
                if self._busy.get(key):
                    # A thread of the task is fetching that key: a second fetcher
                    # would not keep its delay from that thread's requests.
                    return 'key_busy'
            f = self._other(url, key)
            self._stat(C.SUBREQUESTS_OTHER_KEY)
        try:
            return self._fetch(f, f is hf, url, headers, budget)
        except OutOfBudget:
            return 'time_budget'
        except TimeLimit:
            return 'over_budget_seconds' if time.monotonic() >= budget.deadline \
                else 'time_limit'

    def _fetch(self, f, own, url, headers, budget):
        """GET *url* through fetcher *f* (*own*: the page's): robots.txt, its turn, its
        session, the page's budget. One request of a fetcher at a time (the browser
        asks for several at once): one connection per key, the delay between them."""
        with self._fetcher_lock(f):
            with self._lock:
                if not own and self._busy.get(f.key):
                    # A thread of the task started on the key while this request
                    # waited for the one before it: the key is that thread's now.
                    return 'key_busy'
            rules = f._rules_for(url)
            if rules is not None and not rules.allowed(url):
                return 'robots'
            if not _keep_crawl_delay(f, rules):
                return 'crawl_delay'
            over = self._spend(budget)   # only requests that would go out spend it
            if over is not None:
                return over
            # Stored while this request waited for the one before it (the browser asks
            # for the same script in two pages of the key at once)?
            stored = self._cached(url, headers, budget)
            if not isinstance(stored, Stale):
                with self._lock:
                    budget.requests += 1      # spent for a request that did not go out
                return stored
            return self._fetch_now(f, url, headers, budget, stored)

    def _spend(self, budget):
        """One request of the page's *budget* spent, or why not ('over_budget_...')."""
        with self._lock:           # a page's requests run at once in threads
            over = budget.over()
            if over is None:
                budget.requests -= 1
        return None if over is None else 'over_budget_' + over

    def _cached(self, url, headers, budget):
        """The cache's fresh response to *url* (counted; its bytes spent from the page's
        budget), or why not, or a :class:`Stale` lookup."""
        got = self.cache.lookup(url, headers)
        if isinstance(got, Stale):
            return got
        with self._lock:
            over = len(got[2]) > budget.bytes
            if not over:
                budget.bytes -= len(got[2])
        if over:
            return 'over_budget_bytes'
        self._stat(C.SUBREQUESTS_CACHED)
        return got

    def _fetcher_lock(self, f):
        with self._lock:
            return self._fetcher_locks.setdefault(id(f), threading.Lock())

    def _fetch_now(self, f, url, headers, budget, stale):
        f.slot.wait_turn()
        if time.monotonic() >= budget.deadline:
            return 'over_budget_seconds'
        deadline = min(f.slot.deadline(), budget.deadline)
        entry = None
        f.http.track()      # this thread's sockets, for the watchdog to cut
        try:
            resp, entry = f.http.get(url, deadline, {**headers, **stale.validators})
            try:
                body, truncated = f.http.read_body(resp, budget.bytes, deadline)
            finally:
                resp.close()
        except NETWORK_ERRORS as e:
            if entry is not None:
                f.http.disarm(entry, deadline, e)
            return 'error_' + httpio.error_reason(e)
        finally:
            if entry is not None:
                f.http.disarm(entry, deadline)
            f.slot.done_request()
        with self._lock:
            budget.bytes -= len(body)
        self._stat(C.SUBREQUEST_BYTES, len(body))
        if truncated:
            return 'over_budget_bytes'
        self._stat(C.SUBREQUESTS_FETCHED)
        kept = {k: v for k, v in resp.headers.items() if k.lower() not in WIRE_HEADERS}
        got = self.cache.store(stale, resp.status_code, kept, body)
        if got is not None:       # a 304 to the cache's validators: the stored body
            with self._lock:
                budget.bytes -= len(got[2])
            self._stat(C.SUBREQUESTS_REVALIDATED)
            return got
        if resp.status_code == 304 and stale.validators:
            # The stored response was dropped (its bytes went to newer ones) while it
            # was revalidated, and the browser, which sent no validators, needs a body:
            # asked again, unconditionally.
            self._stat(C.SUBREQUESTS_REVALIDATED_DROPPED)
            over = self._spend(budget)
            if over is not None:
                return over
            return self._fetch_now(f, url, headers, budget, Stale(stale.request, {}))
        return resp.status_code, kept, body

    def _other(self, url, key):
        """The task's fetcher of *url*'s politeness key *key* (not the page's), made once."""
        with self._lock:
            f = self._others.get(key)
            if f is None:
                f = HostFetcher(self.conf, self.robots_cache, self.resolver,
                                delay=self.delays(url), routes=self.routes)
                f.key, f.first_url = key, url
                f.http = f.session()
                if self.paces.get(key) is not None:
                    # Another machine's clock a little ahead counts as 'just now'.
                    f.slot.resume(max(0.0, time.time() - self.paces[key]))
                if self._ended.get(key) is not None:   # a thread of the task fetched it
                    f.slot.follow(self._ended[key])
                self._others[key] = f
        return f

    def last_requests(self, paces):
        """*paces* ({politeness key: (a URL of it, epoch seconds its last request
        ended)}, the task's threads'), with the last requests of the task's fetchers of
        other keys where they ended later: the pace records the task writes."""
        paces = dict(paces)
        with self._lock:
            others = list(self._others.items())
        for key, f in others:
            ago = f.slot.ended_ago()
            if ago is not None and (key not in paces or
                                    paces[key][1] < time.time() - ago):
                paces[key] = (paces[key][0] if key in paces else f.first_url,
                              time.time() - ago)
        return paces

    def close(self):
        """Close the other keys' sessions; count their robots.txt fetches."""
        for f in self._others.values():
            f.http.close()
            self._stat(C.SUBREQUEST_ROBOTS_FETCHED, f.robots_fetches)
