"""MRFetch (CrawlerDriver): fetch one layer's URLs politely.

Reads ``url`` records (in/NNN) and writes exactly one ``doc`` record per input URL
(doc/NNN), with status fetched, http_error, network_error, robots_denied, filtered or
deferred (see jobs.lib.records).

The mapper keys each URL by its politeness key (the host); a reducer owns each host, so
there is one connection per host with ``politeness.delay`` between its requests, while
``fetch.threads`` hosts are fetched at once inside each reducer.

Run alone::

    python -m jobs.fetch --crawl-conf crawl/conf.json --layer 0 crawl/in/000 -o /tmp/doc
"""
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, fetcher, records as R, urls

_INVALID_KEY = ''   # politeness key of URLs that cannot be fetched at all
_STATUS_EVERY = 20.0  # seconds between task status updates (keeps Hadoop from killing us)


class MRFetch(CrawlJob):
    COUNTER_GROUP = C.FETCH

    def steps(self):
        return [MRStep(mapper=self.mapper_key_by_host,
                       reducer_init=self.reducer_init_pool,
                       reducer=self.reducer_fetch_host,
                       reducer_final=self.reducer_final_drain,
                       jobconf={'mapreduce.job.reduces': self.conf['fetch']['reducers']})]

    def mapper_key_by_host(self, _, line):
        """in/ line -> (politeness key, url record)."""
        for rec in self.records(line, 'url'):
            self.count(C.URLS_IN)
            url = urls.normalize(rec['url'])
            if url is None or len(url) > self.conf['filter']['max_url_length']:
                yield _INVALID_KEY, rec
            else:
                rec['url'] = url
                yield urls.host(url), rec

    # -- reducer: hosts in a thread pool, results streamed back through a queue ------

    def reducer_init_pool(self):
        self.threads = self.conf['fetch']['threads']
        self.pool = ThreadPoolExecutor(self.threads)
        self.results = queue.Queue(maxsize=4 * self.threads)
        self.active = 0
        self.robots_cache = fetcher.RobotsCache()
        self.last_status = time.monotonic()
        self.stats_lock = threading.Lock()
        self.robots_fetches = self.robots_failures = 0

    def reducer_fetch_host(self, key, values):
        """(host, url records) -> doc records of hosts that have finished so far."""
        items = list(values)
        if key == _INVALID_KEY:
            for rec in items:
                yield from self._emit(fetcher.HostFetcher._unfetched(
                    rec, self.options.layer, R.FETCH_FILTERED, 'bad_url'))
            return
        self.count(C.HOSTS)
        while self.active >= self.threads:
            yield from self._drain(block=True)
        self.active += 1
        self.pool.submit(self._run_host, items)
        yield from self._drain(block=False)

    def reducer_final_drain(self):
        """Wait for the hosts still running and emit their records."""
        while self.active:
            yield from self._drain(block=True)
        self.pool.shutdown()
        self.count(C.ROBOTS_FETCHED, self.robots_fetches)
        self.count(C.ROBOTS_ERROR, self.robots_failures)

    def _run_host(self, items):
        """Worker thread: fetch one host; every input record yields one output record."""
        n_done = 0
        hf = fetcher.HostFetcher(self.conf, self.robots_cache)
        try:
            for doc in hf.fetch(items, self.options.layer):
                n_done += 1
                self.results.put(('doc', doc))
        except Exception as e:   # a bug must not lose the host's URLs
            reason = 'internal_' + type(e).__name__
            for rec in items[n_done:]:
                self.results.put(('doc', fetcher.HostFetcher._unfetched(
                    rec, self.options.layer, R.FETCH_NETWORK_ERROR, reason)))
            self.results.put(('error', reason))
        finally:
            with self.stats_lock:
                self.robots_fetches += hf.robots_fetches
                self.robots_failures += hf.robots_failures
            self.results.put(('done', None))

    def _drain(self, block):
        while True:
            try:
                what, item = self.results.get(block=block, timeout=_STATUS_EVERY)
            except queue.Empty:
                if not block:
                    return
                self._status()
                continue
            if what == 'done':
                self.active -= 1
                return
            if what == 'error':
                self.count(C.INTERNAL_ERROR)
                continue
            yield from self._emit(item)
            block = False

    def _emit(self, doc):
        self.count(C.status(C.FETCH, doc['status'], None if doc['status'] == R.FETCH_FETCHED
                            else doc['reason']))
        self.count(C.BYTES, doc['length'])
        if time.monotonic() - self.last_status > _STATUS_EVERY:
            self._status()
        yield None, doc

    def _status(self):
        self.last_status = time.monotonic()
        self.set_status('fetching: %d hosts running' % self.active)


if __name__ == '__main__':
    MRFetch.run()
