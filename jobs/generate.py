"""MRGenerate (OptimizerDriver, second half): pick the next layer from the crawl database.

Reads ``db`` records (crawldb/NNN) and writes a ``url`` record (in/NNN+1) for every URL
that is unfetched (new, or deferred by an earlier layer) and within ``--max-depth``.
The others stay in crawldb for later; those past the depth limit are counted.

The mapper keys the candidates by host and a reducer sees all of one host's candidates,
so ``filter.max_urls_per_host`` (when not 0) caps the URLs one host gets in one layer:
the host's best candidates are generated (linked from on-topic pages first, then
shallower, then more in-links, then by URL), the rest stay ``unfetched`` in crawldb and
come back in later layers (counter ``over_host_cap_total``). Only the cap's worth of
records is held in memory per host.

Re-crawl mode (``--recrawl-at TIME``, used by ``mrcrawl recrawl``): instead of unfetched
URLs, select the fetched ones whose last fetch + ``fetch_interval`` is not after TIME,
with what a conditional request needs (``etag``, ``last_modified``) and what the page
was (``prev``: digest, fields checksum) so that changes can be told apart.

Run alone::

    python -m jobs.generate --crawl-conf crawl/conf.json --max-depth 3 crawl/crawldb/000 -o /tmp/in
"""
import heapq
from datetime import datetime, timezone

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R, urls


def candidate_order(cand):
    """Sort key of a host's candidates: the first ones are generated under a cap."""
    depth, url, inlinks, topic_inlinks = cand[:4]
    return (not topic_inlinks, depth, -inlinks, url)


class MRGenerate(CrawlJob):
    COUNTER_GROUP = C.GENERATE

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--max-depth', type=int, default=3,
                              help='Deepest layer to generate (link hops from a seed). '
                                   'Default: %(default)s')
        self.add_passthru_arg('--recrawl-at', metavar='TIME', default=None,
                              help='Re-crawl mode: select fetched URLs due at TIME '
                                   '(ISO-8601 UTC). Default: off.')

    def steps(self):
        return [MRStep(mapper=self.mapper_select, reducer=self.reducer_cap_host)]

    def mapper_select(self, _, line):
        """db line -> (host, candidate), for unfetched URLs within the depth limit."""
        if self.options.recrawl_at:
            yield from self.mapper_due(line)
            return
        for db in self.records(line, 'db'):
            if db['status'] != R.DB_UNFETCHED:
                continue
            if db['depth'] > self.options.max_depth:
                self.count(C.BEYOND_DEPTH)
                continue
            yield urls.host(db['url']), [db['depth'], db['url'], db.get('inlinks') or 0,
                                         db.get('topic_inlinks') or 0]

    def mapper_due(self, line):
        """db line -> (host, candidate), for fetched URLs due for a re-fetch."""
        now = _parse_time(self.options.recrawl_at)
        default_interval = self.conf['recrawl']['interval']
        for db in self.records(line, 'db'):
            if db['status'] not in (R.DB_FETCHED, R.DB_REDIRECTED) or not db.get('last_fetch'):
                continue
            if db.get('reason') == 'redirect_target':
                continue     # known only as a redirect's end: its source is re-fetched
            interval = db.get('fetch_interval') or default_interval
            if (now - _parse_time(db['last_fetch'])).total_seconds() < interval:
                self.count(C.RECRAWL_NOT_DUE)
                continue
            self.count(C.RECRAWL_DUE)
            extra = {'prev': {'digest': db.get('digest'),
                              'fields_checksum': db.get('fields_checksum'),
                              'status': db['status'], 'last_fetch': db['last_fetch']}}
            for key in ('etag', 'last_modified'):
                if db.get(key):
                    extra[key] = db[key]
            yield urls.host(db['url']), [db['depth'], db['url'], db.get('inlinks') or 0,
                                         db.get('topic_inlinks') or 0, extra]

    def reducer_cap_host(self, host, candidates):
        """(host, candidates) -> url records, at most filter.max_urls_per_host of them."""
        cap = self.conf['filter'].get('max_urls_per_host', 0)
        if cap:
            n = 0
            best = []
            for cand in candidates:
                n += 1
                item = (candidate_order(cand), cand)
                if len(best) < cap:
                    heapq.heappush(best, _Neg(item))
                elif item < best[0].item:
                    heapq.heapreplace(best, _Neg(item))
            self.count(C.OVER_HOST_CAP, n - len(best))
            candidates = [neg.item[1] for neg in best]
        for cand in candidates:
            self.count(C.GENERATED)
            rec = {'kind': 'url', 'url': cand[1], 'depth': cand[0]}
            if len(cand) > 4:
                rec.update(cand[4])
            yield None, rec


def _parse_time(text):
    """``2026-11-30T08:00:00Z`` -> aware datetime (UTC)."""
    return datetime.strptime(text, '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=timezone.utc)


class _Neg:
    """Reverses the order of *item*, so heapq's min-heap keeps the *cap* smallest items."""
    __slots__ = ('item',)

    def __init__(self, item):
        self.item = item

    def __lt__(self, other):
        return other.item < self.item


if __name__ == '__main__':
    MRGenerate.run()
