"""MRDbStats: counts of a crawl database by status, depth and host (``mrcrawl db stats``).

Reads ``db`` records (crawldb/NNN) and writes ``{"kind": "stat", "dim": "status" |
"depth" | "host", "value": ..., "urls": N}`` records, one per distinct value. The
counting is a MapReduce sum, so the database is never loaded into one process; the
output holds one line per status, depth and host.

Run alone::

    python -m jobs.dbstats crawl/crawldb/003 -o /tmp/stats
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import urls


class MRDbStats(CrawlJob):
    COUNTER_GROUP = 'dbstats'

    def steps(self):
        return [MRStep(mapper=self.mapper_dimensions, combiner=self.reducer_sum,
                       reducer=self.reducer_to_record)]

    def mapper_dimensions(self, _, line):
        """db line -> ([dim, value], 1) for status, depth and host."""
        for db in self.records(line, 'db'):
            yield ['status', db.get('status')], 1
            yield ['depth', db.get('depth')], 1
            yield ['host', urls.host(db['url'])], 1

    def reducer_sum(self, key, counts):
        yield key, sum(counts)

    def reducer_to_record(self, key, counts):
        yield None, {'kind': 'stat', 'dim': key[0], 'value': key[1], 'urls': sum(counts)}


if __name__ == '__main__':
    MRDbStats.run()
