"""Reading a politeness key's robots.txt (RFC 9309), a part of its fetcher
(jobs.lib.fetcher.HostFetcher): the request keeps the key's turn and limits, and its
answer, whatever it is, becomes rules (jobs.lib.robots.Rules)."""
from jobs.lib import httpio, politeness, robots, urls
from jobs.lib.httpio import NETWORK_ERRORS
from jobs.lib.politeness import OutOfBudget, TimeLimit


class RobotsReading:
    """HostFetcher's robots.txt methods: they use its ``slot``, ``http``, ``clock``,
    ``robots_cache``, ``obey_robots``, ``user_agent`` and ``max_body``."""

    def _fetch_robots(self, origin):
        """Steps to the rules for *origin*: RFC 9309 error handling, up to 5 redirects,
        500 KiB.

        4xx: allow all. 5xx, 429 (as Nutch and Google treat it), unreachable or a
        redirect chain longer than 5: disallow all for this layer (the URLs are deferred
        and robots.txt is tried again next layer). Its requests keep the key's delay.
        """
        if not self.obey_robots:
            return robots.Rules(allow_all=True)
        url = origin + '/robots.txt'
        try:
            for _ in range(6):
                yield from self.slot.turn()
                self.robots_fetches += 1
                deadline = self.slot.deadline()
                entry = None
                try:
                    resp, entry = self.http.get(url, deadline)
                    try:
                        rules = self._robots_answer(url, resp, deadline)
                        if isinstance(rules, robots.Rules):
                            return rules
                        url = rules
                        if url is None:
                            return robots.Rules(allow_all=True, reason='robots_bad_redirect')
                    finally:     # a small unread body (a 404's) keeps the connection
                        self.http.drain(resp, deadline)
                        resp.close()
                except NETWORK_ERRORS as e:
                    if entry is not None:
                        self.http.disarm(entry, deadline, e)
                    raise
                finally:
                    if entry is not None:
                        self.http.disarm(entry, deadline)
                    self.slot.done_request()
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_too_many_redirects')
        except OutOfBudget:
            raise
        except TimeLimit:
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_time_limit')
        except NETWORK_ERRORS as e:
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_' + httpio.error_reason(e))

    def _robots_answer(self, url, resp, deadline):
        """The response to *url* -> its Rules, or the URL it redirects to (None: bad)."""
        if resp.is_redirect:       # each answer is kept for the WARC (warc.enabled)
            self.http.keep_redirect(url, resp, self.max_body, deadline)
            return urls.normalize(urls.resolve(url, resp.headers.get('location')))
        if resp.status_code >= 400:
            self.http.keep('robots', url, resp)          # an error's body is not read
        if resp.status_code == 429 or resp.status_code >= 500:
            self.robots_failures += 1
            return robots.Rules(deny_all=True, reason='robots_%d' % resp.status_code)
        if 400 <= resp.status_code < 500:
            return robots.Rules(allow_all=True, reason='robots_%d' % resp.status_code)
        body, truncated = self.http.read_body(resp, robots.MAX_ROBOTS_BYTES, deadline)
        self.http.keep('robots', url, resp, body, truncated)
        return robots.Rules(body, self.user_agent)

    def _rules_for(self, url):
        """The robots.txt rules of *url* (None: robots.txt not obeyed), read in this
        thread (render's sub-requests)."""
        if not self.obey_robots:
            return None
        return self.robots_cache.get(urls.origin(url), lambda origin: politeness.run(
            self._fetch_robots(origin), self.clock, self.slot.sleep))

    def _rules_steps(self, url):
        """Steps to :meth:`_rules_for`'s answer: a key's own flow, which waits its turn
        as a step. An origin is of one key, so no other flow reads it meanwhile."""
        if not self.obey_robots:
            return None
        origin = urls.origin(url)
        rules = self.robots_cache.lookup(origin)
        if rules is None:
            rules = self.robots_cache.store(origin, (yield from self._fetch_robots(origin)))
        return rules
