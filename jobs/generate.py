"""MRGenerate (OptimizerDriver, second half): pick the next layer from the crawl database.

Reads ``db`` records (crawldb/NNN) and writes a ``url`` record (in/NNN+1) for every URL
that is unfetched (new, or deferred by an earlier layer) and within ``--max-depth``.
The others stay in crawldb for later; those past the depth limit are counted.
A map-only job: breadth-first order needs no sort.

Run alone::

    python -m jobs.generate --crawl-conf crawl/conf.json --max-depth 3 crawl/crawldb/000 -o /tmp/in
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R


class MRGenerate(CrawlJob):
    COUNTER_GROUP = C.GENERATE

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--max-depth', type=int, default=3,
                              help='Deepest layer to generate (link hops from a seed). '
                                   'Default: %(default)s')

    def steps(self):
        return [MRStep(mapper=self.mapper_select)]

    def mapper_select(self, _, line):
        """db line -> url record, for unfetched URLs within the depth limit."""
        for db in self.records(line, 'db'):
            if db['status'] != R.DB_UNFETCHED:
                continue
            if db['depth'] > self.options.max_depth:
                self.count(C.BEYOND_DEPTH)
                continue
            self.count(C.GENERATED)
            yield None, {'kind': 'url', 'url': db['url'], 'depth': db['depth']}


if __name__ == '__main__':
    MRGenerate.run()
