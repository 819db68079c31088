"""Politeness: which key a URL's requests queue under, and when that key may be asked.

A *politeness key* (``politeness.key``) is the host (``host[:port]``), its IP address
(``ip:...``) or its registered domain (``domain:...``): one fetcher per key, one request
at a time. A :class:`Slot` (Scrapy's downloader slot, Nutch's FetchItemQueue) keeps one
key's timing: each request starts at least ``delay`` seconds after the previous one
ended, a robots.txt ``Crawl-delay`` raises that delay, and the reducer's time budget
(``fetch.time_budget``) ends the key's turn. A wait is a step (:meth:`Slot.turn`) that a
scheduler resumes when it is over (jobs.lib.keyqueue), not a sleep: a key waiting out
its delay holds no thread.
"""
from jobs.lib import urls
from jobs.lib.filters import registered_domain
from jobs.lib.sites import SiteIndex


def politeness_key(url, mode, resolver=None):
    """The politeness key of a normalised *url*: ``host[:port]``, ``ip:...`` or ``domain:...``.

    ``ip`` resolves the name through *resolver* (jobs.lib.netpolicy.Resolver: its cache,
    without the address policy, which the fetcher applies later); a name that does not
    resolve keeps its host key, so its URLs still reach a fetcher that records the DNS
    error.
    """
    if mode == 'host':
        return urls.host(url)
    name = urls.hostname(url)
    if not name:
        return urls.host(url)
    if mode == 'domain':
        return 'domain:' + registered_domain(name)
    try:
        infos = resolver.lookup(name, 443 if url.startswith('https:') else 80)
    except (OSError, UnicodeError):
        return urls.host(url)
    return 'ip:' + infos[0][4][0] if infos else urls.host(url)


def fetch_key(rec, conf, resolver):
    """The politeness key of an in/ ``url`` record, or None if its URL cannot be fetched.

    Normalises ``rec['url']`` in place (the fetch job's mapper and MRPlanFetch share
    this, so a plan and a fetch of the same in/ agree on every key).
    """
    url = urls.normalize(rec.get('url'))
    if url is None or len(url) > conf['filter']['max_url_length']:
        return None
    rec['url'] = url
    return politeness_key(url, conf['politeness']['key'], resolver)


def run(steps, clock, sleep):
    """Drive *steps* (a generator that yields the clock() times it waits for, as
    :meth:`Slot.turn`) to its return value, sleeping through each wait: the blocking
    form of a key's steps, for callers that own their thread."""
    while True:
        try:
            at = next(steps)
        except StopIteration as stop:
            return stop.value
        sleep(max(0.0, at - clock()))


def waited(steps, clock, sleep):
    """The items of *steps* that are not waits (a float: a clock() time), sleeping
    through the waits."""
    for item in steps:
        if isinstance(item, float):
            sleep(max(0.0, item - clock()))
        else:
            yield item


class TimeLimit(Exception):
    """The whole-request time limit ran out."""


class OutOfBudget(Exception):
    """The reducer's time budget ran out: the URL is deferred, not failed."""


class SiteDelays:
    """The delay of a URL: its site's ``delay`` (jobs.lib.sites) where it sets one, else
    ``politeness.delay``; a key's is the largest of its URLs'. Robots.txt's Crawl-delay
    raises it further where the key's robots.txt is read (jobs.lib.fetcher)."""

    def __init__(self, conf):
        self.default = conf['politeness']['delay']
        sites = conf.get('sites') or ()
        # Every site when one sets a delay: a page belongs to the first that matches it.
        self.index = SiteIndex(sites if any(s.get('delay') is not None for s in sites)
                               else ())

    def __call__(self, url):
        site = self.index.match(url)
        return self.default if site is None or site.delay is None else site.delay

    def of_key(self, key_urls):
        """The delay of a politeness key whose URLs are *key_urls*."""
        if not self.index.sites:
            return self.default
        return max((self(u) for u in key_urls), default=self.default)


class Slot:
    """One politeness key's timing. *budget_deadline* (a ``clock()`` value or None) is
    when the reducer's time budget ends."""

    def __init__(self, delay, max_request_seconds, clock, sleep, budget_deadline=None):
        self.delay = delay
        self.max_request_seconds = max_request_seconds
        self.clock = clock
        self.sleep = sleep
        self.budget_deadline = budget_deadline
        self._next_request = 0.0
        self._last_end = None       # clock() when the key's last request ended

    def turn(self):
        """Steps until this key may be asked again: yields the clock() time it waits
        for, and holds no thread meanwhile (jobs.lib.keyqueue resumes it then; a Slot or
        a Crawl-delay that moved the turn is checked again); OutOfBudget if that is too
        late."""
        while True:
            now = self.clock()
            wait = self._next_request - now
            if self.budget_deadline is not None and \
                    now + max(wait, 0.0) >= self.budget_deadline:
                raise OutOfBudget()
            if wait <= 0:
                return
            yield self._next_request

    def wait_turn(self):
        """Sleep until this key may be asked again; OutOfBudget if that is too late."""
        run(self.turn(), self.clock, self.sleep)

    def done_request(self, pause=0.0):
        """A request to this key ended: the next one waits the delay (or *pause*, if longer)."""
        self._last_end = self.clock()
        self._next_request = self._last_end + max(self.delay, pause)

    def resume(self, ended_ago):
        """The key's last request, in an earlier layer's fetch, ended *ended_ago* seconds
        ago: this fetch's first request keeps the delay from it (and a Crawl-delay the
        key's robots.txt sets, through :meth:`raise_delay`)."""
        self._last_end = self.clock() - ended_ago
        self._next_request = max(self._next_request, self._last_end + self.delay)

    def follow(self, other):
        """*other* is this key's Slot in another fetcher of the task, which made the
        key's latest request: this one's next request waits as long as other's would
        (its delay, Crawl-delay or retry pause after that request). Neither fetcher may
        be requesting meanwhile."""
        ago = other.ended_ago()
        if ago is None:
            return
        now = self.clock()
        if self._last_end is None or now - ago > self._last_end:
            self._last_end = now - ago
        self._next_request = max(self._next_request, self._last_end + self.delay,
                                 now + other._next_request - other.clock())

    def ended_ago(self):
        """Seconds since the key's last request ended (None: it made none)."""
        return None if self._last_end is None else self.clock() - self._last_end

    def raise_delay(self, delay):
        """A robots.txt Crawl-delay longer than the delay: it applies from the request
        that fetched robots.txt on, which ended under the old delay."""
        self.delay = delay
        if self._last_end is not None:
            self._next_request = max(self._next_request, self._last_end + delay)

    def deadline(self):
        """When a request starting now must end: its own limit or the budget's end."""
        deadline = self.clock() + self.max_request_seconds
        if self.budget_deadline is not None:
            deadline = min(deadline, self.budget_deadline)
        return deadline

    def limit_error(self, deadline):
        """What running past *deadline* means: the budget's end or the request's limit."""
        if self.budget_deadline is not None and deadline >= self.budget_deadline:
            return OutOfBudget()
        return TimeLimit()

    def out_of_budget(self):
        return self.budget_deadline is not None and self.clock() >= self.budget_deadline
