"""Fetching one politeness key's URLs politely: robots.txt, one connection, a delay.

``HostFetcher(conf, robots_cache, resolver).fetch(in_records, layer, key)`` yields one
doc record (see jobs.lib.records) per input record, whatever happens: nothing is lost.
The fetch job runs many HostFetchers at once in threads, one per politeness key
(jobs.lib.politeness: the host, its IP address or its registered domain), sharing one
robots.txt cache and one resolver.

The parts live by concern, as Nutch's fetcher classes and Scrapy's downloader slot and
middlewares do:

- jobs.lib.politeness: the key of a URL and the key's timing (:class:`Slot`): the
  requests of one key (robots.txt, retries and redirect hops included) go out one at a
  time, each starting at least ``delay`` seconds after the previous one ended; a
  robots.txt ``Crawl-delay`` raises that delay up to ``politeness.max_crawl_delay``;
- jobs.lib.httpio: one request (:class:`KeySession`), cut by the watchdog
  (jobs.lib.watchdog) past ``fetch.max_request_seconds``, bodies within their limits;
- jobs.lib.netpolicy: where a connection may go (private addresses refused unless
  ``security.allow_private_networks``), checked where each socket is opened;
- here: robots.txt, retries, redirects, what a response becomes, and the key's loop.

Robustness: 5xx, 429 and transient network errors are retried with exponential
backoff (``Retry-After`` honoured up to ``fetch.max_retry_after``); after
``fetch.max_consecutive_failures`` failed URLs in a row the rest of the key is deferred;
when the reducer's ``fetch.time_budget`` runs out the rest is deferred.
"""
import base64
import hashlib
import itertools
import time

from jobs.lib import content, counters as C, encoding, httpio, politeness, records as R, \
    robots, urls
from jobs.lib.sitemaps import kept_types
from jobs.lib.httpio import NETWORK_ERRORS
from jobs.lib.netpolicy import Resolver
from jobs.lib.politeness import OutOfBudget, Slot, TimeLimit, politeness_key
from jobs.lib.robotsfetch import RobotsReading
from jobs.lib.routes import Routes


def _carry(rec, doc):
    """Copy what the generator knew of the URL from its in/ record to its doc: ``prev``
    (a re-crawl's previous digest and checksum), ``score`` (its OPIC cash), ``followed``
    (the hop of a URL the fetch followed: jobs.lib.follow) and, for a secondary
    resource, ``resource_of``, ``resource_name`` and ``max_bytes``."""
    for key in ('prev', 'score', 'resource_of', 'resource_name', 'max_bytes', 'followed'):
        if rec.get(key) is not None:
            doc[key] = rec[key]
    return doc


def new_doc(rec, layer, status=None, reason=None):
    """The doc record of in/ record *rec*, before (or without) any request: with
    *status* and *reason*, the record of a URL that was not fetched (filtered,
    deferred, denied)."""
    url = rec['url']
    return _carry(rec, {
        'kind': 'doc', 'url': url, 'depth': rec.get('depth', 0), 'layer': layer,
        'status': status, 'reason': reason, 'http_status': None, 'final_url': url,
        'redirects': [], 'content_type': None, 'fetch_time': R.now_iso(),
        'elapsed': 0.0, 'length': 0, 'truncated': False, 'digest': None,
        'encoding': None, 'body': None, 'headers': {}, 'attempts': 0})


class HostFetcher(RobotsReading):
    """Fetches URLs of one politeness key, sequentially, with the configured delay.

    *resolver* (jobs.lib.netpolicy.Resolver, one per task) resolves and checks every
    connection; by default one of the settings' own. *budget_deadline* (a ``clock()``
    value or None) is when the reducer's time budget ends; *delay* the key's delay
    (default: politeness.delay; jobs.lib.politeness.SiteDelays); *media* the task's
    jobs.lib.media.Media (None: resources' bytes are not kept); *routes* the task's
    jobs.lib.routes.Routes (default: the settings' own); ``stats`` counts what
    the job reports as counters (names in jobs.lib.counters).
    """

    def __init__(self, conf, robots_cache=None, resolver=None, clock=time.monotonic,
                 sleep=time.sleep, budget_deadline=None, delay=None, media=None,
                 routes=None):
        pol, fet = conf['politeness'], conf['fetch']
        self.user_agent = pol['user_agent']
        self.obey_robots = pol['obey_robots']
        self.max_crawl_delay = pol['max_crawl_delay']
        self.key_mode = pol['key']
        self.timeout = (fet['connect_timeout'], fet['read_timeout'])
        self.ca_bundle, self.verify_tls = fet['ca_bundle'], fet['verify_tls']
        self.routes = routes or Routes(conf)
        self.max_body = fet['max_body_bytes']
        self.max_redirects = fet['max_redirects']
        self.max_retries = fet['max_retries']
        self.retry_backoff = fet['retry_backoff']
        self.max_retry_after = fet['max_retry_after']
        self.max_failures = fet['max_consecutive_failures']
        # fetch.keep_types (+ sitemap types if sitemaps.enabled), what parse.parsers read
        self.keep_types = kept_types(conf) + content.Registry.for_conf(conf).types()
        #: warc.enabled: doc records carry what the WARC writer needs (``http``, ``warc_body``)
        self.warc = conf['warc']['enabled']
        self.max_url_length = conf['filter']['max_url_length']
        self.robots_cache = robots_cache or robots.RobotsCache()
        self.resolver = resolver or Resolver.for_conf(conf)
        self.slot = Slot(pol['delay'] if delay is None else delay,
                         fet['max_request_seconds'], clock, sleep,
                         budget_deadline)
        self.clock = clock
        self.media = media          # jobs.lib.media.Media: resources' bytes kept, or None
        self.http = None
        self.key = None
        self._in_urls = set()       # this key's URLs in this layer's in/
        self._known = frozenset()   # this key's URLs requested in earlier layers (crawldb)
        self._fetched = set()       # URLs this fetcher requested (chain hops included)
        self.robots_fetches = 0     # robots.txt requests this fetcher made
        self.robots_failures = 0
        self.stats = {}

    def _stat(self, name, n=1):
        self.stats[name] = self.stats.get(name, 0) + n

    # -- one request of a chain, retried --------------------------------------------

    def _conditional_headers(self, rec):
        headers = {}
        if rec.get('etag'):
            headers['If-None-Match'] = rec['etag']
        if rec.get('last_modified'):
            headers['If-Modified-Since'] = rec['last_modified']
        if headers:
            self._stat(C.CONDITIONAL_REQUESTS)
        return headers or None

    def _retry_pause(self, resp, attempt):
        """Seconds to wait before retrying a 5xx/429 answer, or None: no retry."""
        code = resp.status_code
        if not (code == 429 or code >= 500) or attempt >= self.max_retries:
            return None
        wait = httpio.retry_after_seconds(resp.headers.get('retry-after'))
        if wait is not None and wait > self.max_retry_after:
            self._stat(C.RETRY_AFTER_OVER_CAP)
            return None
        return max(wait or 0.0, self.retry_backoff * 2 ** attempt)

    def _request(self, url, doc, headers=None):
        """Steps of one request of a chain, retried on 5xx/429/transient errors with
        backoff.

        Returns the redirect target (absolute, not yet normalised; '' for a redirect to
        nowhere), or None when *doc* holds the final answer.
        """
        attempt = 0
        while True:
            yield from self.slot.turn()
            self._fetched.add(url)
            doc['attempts'] += 1
            deadline = self.slot.deadline()
            pause = 0.0
            entry = None
            try:
                resp, entry = self.http.get(url, deadline, headers)
                try:
                    retry = self._retry_pause(resp, attempt)
                    if retry is not None:
                        pause, attempt = retry, attempt + 1
                        self._stat(C.RETRIES)
                        continue
                    if resp.is_redirect:
                        self.http.keep_redirect(url, resp, self.max_body, deadline)
                        return urls.resolve(url, resp.headers.get('location')) or ''
                    self._record_response(doc, resp, deadline, bool(headers))
                    return None
                finally:
                    self.http.drain(resp, deadline)
                    resp.close()
            except NETWORK_ERRORS as e:
                if entry is not None:
                    self.http.disarm(entry, deadline, e)
                if httpio.error_reason(e) in httpio.RETRY_REASONS and \
                        attempt < self.max_retries:
                    pause = self.retry_backoff * 2 ** attempt
                    attempt += 1
                    self._stat(C.RETRIES)
                    continue
                raise
            finally:
                if entry is not None:
                    self.http.disarm(entry, deadline)
                self.slot.done_request(pause)

    # -- what a response becomes ------------------------------------------------------

    def _record_response(self, doc, resp, deadline, conditional):
        ctype = resp.headers.get('content-type')
        mime = encoding.mime(ctype)
        doc['http_status'] = resp.status_code
        doc['tls_verified'] = self.http.tls_verified(resp.url)
        if doc['tls_verified'] is False:
            self._stat(C.TLS_UNVERIFIED_ANSWERS)
        doc['content_type'] = mime
        doc['headers'] = {k: resp.headers[k] for k in httpio.KEPT_HEADERS
                          if k in resp.headers}
        if self.warc:
            doc['http'] = httpio.http_exchange(resp, self.http.secret_headers)
        if resp.status_code == 304:
            # A page the crawl holds is "not modified" only if the request named it
            # (conditional); a 304 to any other request (RFC 9110, 15.4.5) is an error.
            doc['status'], doc['reason'] = (R.FETCH_NOT_MODIFIED, 'http_304') if \
                conditional else (R.FETCH_HTTP_ERROR, 'http_304_unconditional')
            return
        if not 200 <= resp.status_code < 300:
            doc.update(status=R.FETCH_HTTP_ERROR, reason='http_%d' % resp.status_code)
            return
        doc['status'] = R.FETCH_FETCHED
        if doc.get('resource_of') is not None:
            self._read_resource(doc, resp, deadline)   # never a body, whatever the type
            return
        html = encoding.is_html(mime)
        if not html and mime not in self.keep_types:
            # A type no parser reads (a link the extension filter could not tell):
            # metadata only, the body is never read.
            self._stat(C.TYPE_NOT_PARSED)
            return
        body, truncated = self.http.read_body(resp, self.max_body, deadline)
        doc['length'] = len(body)
        doc['truncated'] = truncated
        doc['digest'] = R.digest(body)
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

    def _read_resource(self, doc, resp, deadline):
        """A secondary resource: stream its first ``max_bytes`` (decoded) bytes through
        SHA-1 (and into the media store: jobs.lib.media), keeping length, digest,
        truncated and the declared size."""
        limit = doc.get('max_bytes')
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            limit = self.max_body
        sha, seen = hashlib.sha1(), [0]
        spool = self.media.spool() if self.media is not None else None

        def sink(chunk):
            sha.update(chunk)
            seen[0] += len(chunk)
            if spool is not None:
                spool.write(chunk)
        try:
            truncated = self.http.stream(resp, limit, deadline, sink)
        finally:
            if spool is not None:
                spool.close()
                doc['spooled'] = spool.name    # kept by _fetch_one, or left for close()
        doc['length'] = seen[0]
        doc['truncated'] = truncated
        doc['digest'] = R.sha1_form(sha)
        doc['declared_length'] = httpio.declared_length(resp.headers)
        self._stat(C.RESOURCES_FETCHED)
        if truncated:
            self._stat(C.RESOURCES_TRUNCATED)

    # -- one URL: its redirect chain ------------------------------------------------

    def _check_hop(self, doc, target):
        """Steps to (status, reason) when a redirect to *target* must not be followed, else None.

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
        if not self.same_key(target):
            self._stat(C.REDIRECT_CROSS_KEY)
            return R.FETCH_REDIRECTED, 'cross_key'
        if target in self._in_urls or target in self._fetched:
            # In this layer's in/ (its own record) or fetched here already: not twice.
            self._stat(C.REDIRECT_DEDUPLICATED)
            return R.FETCH_REDIRECTED, 'duplicate_target'
        if target in self._known:     # requested before: recorded, not fetched again
            self._stat(C.REDIRECT_KNOWN_TARGET)
            return R.FETCH_REDIRECTED, 'known_target'
        if urls.hostname(target) != urls.hostname(doc['url']):
            # Another name of this key (politeness.key = domain or ip): its address
            # passes the policy before its robots.txt is asked for.
            refusal = httpio.host_refusal(self.resolver, target)
            if refusal is not None:
                return refusal
        rules = yield from self._rules_steps(target)
        if rules is not None and not rules.allowed(target):
            if rules.deny_all:
                return R.FETCH_DEFERRED, rules.reason or 'robots_unavailable'
            return R.FETCH_ROBOTS_DENIED, 'redirect_target'
        return None

    def _follow(self, doc, headers):
        """Steps: request *doc*'s URL and follow its redirects within the limits; *doc* holds
        the answer (or why the chain stopped)."""
        current = doc['url']
        for hop in range(self.max_redirects + 1):
            if hop:
                refusal = yield from self._check_hop(doc, current)
                if refusal is not None:
                    doc.update(status=refusal[0], reason=refusal[1])
                    return
            result = yield from self._request(current, doc, headers if not hop else None)
            if result is None:
                return
            target = urls.normalize(result)
            doc['redirects'].append(target or result)
            doc['final_url'] = target or result
            if target is None:
                doc.update(status=R.FETCH_HTTP_ERROR, reason='bad_redirect')
                return
            current = target
        doc.update(status=R.FETCH_NETWORK_ERROR, reason='too_many_redirects')

    def _fetch_one(self, rec, layer):
        """Steps to one doc record for the in/ record *rec*."""
        doc = new_doc(rec, layer)
        start = self.clock()
        try:
            yield from self._follow(doc, self._conditional_headers(rec))
        except OutOfBudget:
            doc.update(status=R.FETCH_DEFERRED, reason='time_budget', final_url=doc['url'],
                       redirects=[], body=None, length=0, digest=None)
        except TimeLimit:
            doc.update(status=R.FETCH_NETWORK_ERROR, reason='time_limit')
        except NETWORK_ERRORS as e:
            reason = httpio.error_reason(e)
            doc.update(status=R.FETCH_FILTERED if reason == 'private_address'
                       else R.FETCH_NETWORK_ERROR, reason=reason)
        finally:
            doc['elapsed'] = round(self.clock() - start, 4)
            spooled = doc.pop('spooled', None)
        if spooled is not None and doc['status'] == R.FETCH_FETCHED:
            # After the request: the preview's CPU overlaps the key's delay.
            self.media.keep(doc, spooled, self._stat)
        return doc

    def _fetch_checked(self, rec, layer):
        """Steps: robots.txt first (its rules and Crawl-delay), then the fetch."""
        url = rec['url']
        rules = yield from self._rules_steps(url)
        if rules is not None:
            if not rules.allowed(url):
                return new_doc(rec, layer, R.FETCH_DEFERRED if rules.deny_all
                               else R.FETCH_ROBOTS_DENIED, rules.reason or 'disallowed')
            crawl_delay = rules.crawl_delay()
            if crawl_delay is not None:
                if crawl_delay > self.max_crawl_delay:
                    self._stat(C.ROBOTS_DENIED_MAX_CRAWL_DELAY)
                    return new_doc(rec, layer, R.FETCH_ROBOTS_DENIED, 'crawl_delay')
                if crawl_delay > self.slot.delay:
                    self._stat(C.CRAWL_DELAY_RAISED)
                    self.slot.raise_delay(crawl_delay)
        return (yield from self._fetch_one(rec, layer))

    # -- a key ------------------------------------------------------------------------

    def fetch(self, items, layer=0, key=None, known=frozenset(), more=()):
        """Yield one doc record per in/ record in *items* (all of politeness key *key*,
        whose URLs requested before are *known*), then one per followed URL record
        that *more* yields (jobs.lib.follow.Follower.items) and this fetcher requests;
        sleeps through the key's waits."""
        return politeness.waited(self.steps(items, layer, key, known, more), self.clock,
                                 self.slot.sleep)

    def steps(self, items, layer=0, key=None, known=frozenset(), more=()):
        """:meth:`fetch`'s docs and, between them, the key's waits: a float, the clock()
        time the key may go on (jobs.lib.keyqueue holds the key meanwhile, no thread)."""
        if items and key is None:
            key = politeness_key(items[0]['url'], self.key_mode, self.resolver)
        self.key = key
        self._in_urls = {rec['url'] for rec in items}
        self._known = known
        self.http = self.session(self.warc)
        try:    # each doc carries the robots.txt and redirect answers its fetch got
            for item in self._fetch_key(itertools.chain(items, more), layer):
                yield item if isinstance(item, float) else self.http.attach_kept(item)
        finally:
            for reason in self.http.unverified.values():
                self._stat(C.tls_unverified_origins(reason))
            for why, n in self.http.withheld.items():
                self._stat(C.credentials_withheld(why), n)
            self.http.close()

    def session(self, warc=False):
        """A new httpio.KeySession of this fetcher's settings."""
        return httpio.KeySession(self.user_agent, self.timeout, self.resolver, self.slot,
                                 warc, self.ca_bundle, self.verify_tls, self.routes)

    def same_key(self, url):
        """Is *url* of this fetcher's politeness key (its delay and robots.txt)?"""
        return politeness_key(url, self.key_mode, self.resolver) == self.key

    def requested(self, url):
        """Did this fetcher request *url* (a listed URL, a followed one or a hop)?"""
        return url in self._fetched

    def _fetch_key(self, items, layer):
        refusals = {}        # host name -> (status, reason) or None, checked once each
        failures = 0
        cut = None           # (status, reason) for every URL left once the key is cut
        for rec in items:
            if cut is None and self.slot.out_of_budget():
                cut = (R.FETCH_DEFERRED, 'time_budget')
                self._stat(C.KEYS_HIT_BY_TIME_BUDGET)
            name = urls.hostname(rec['url'])
            if rec.get('followed') and (cut is not None or refusals.get(name)):
                # Not one of in/'s URLs: left unrequested, it stays a link of its page.
                self._stat(C.FOLLOW_LEFT)
                continue
            if cut is not None:
                yield new_doc(rec, layer, *cut)
                continue
            if name not in refusals:
                refusals[name] = httpio.host_refusal(self.resolver, rec['url'])
            if refusals[name] is not None:
                yield new_doc(rec, layer, *refusals[name])
                continue
            try:
                doc = yield from self._fetch_checked(rec, layer)
            except OutOfBudget:
                doc = new_doc(rec, layer, R.FETCH_DEFERRED, 'time_budget')
            if doc['status'] == R.FETCH_DEFERRED and doc['reason'] == 'time_budget':
                cut = (R.FETCH_DEFERRED, 'time_budget')
                self._stat(C.KEYS_HIT_BY_TIME_BUDGET)
            elif _is_failure(doc):
                failures += 1
                if self.max_failures and failures >= self.max_failures:
                    # Nutch's fetcher.max.exceptions.per.queue: a host that keeps
                    # failing would only spend the layer's time; try it next layer.
                    cut = (R.FETCH_DEFERRED, 'host_failures')
                    self._stat(C.KEYS_ABOVE_FAILURE_THRESHOLD)
            elif doc['status'] in (R.FETCH_FETCHED, R.FETCH_NOT_MODIFIED,
                                   R.FETCH_HTTP_ERROR, R.FETCH_REDIRECTED):
                failures = 0
            yield doc


def _is_failure(doc):
    """A network error, or an answer that says the server is failing (429, 5xx)."""
    if doc['status'] == R.FETCH_NETWORK_ERROR:
        return True
    return doc['status'] == R.FETCH_HTTP_ERROR and (doc['http_status'] or 0) in \
        (429,) + tuple(range(500, 600))
