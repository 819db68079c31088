"""MRDbGet: the crawl database records of some URLs (``mrcrawl db get``).

Reads ``db`` records (crawldb/NNN) and writes those whose URL is one of ``--url``
(normalised first, so any spelling of a URL finds it). A map-only scan.

Run alone::

    python -m jobs.dbget --url http://example.com/ crawl/crawldb/003 -o /tmp/get
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import urls


class MRDbGet(CrawlJob):
    COUNTER_GROUP = 'dbget'

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--url', action='append', default=[],
                              help='URL to look up (repeatable).')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_wanted, mapper=self.mapper_match)]

    def mapper_init_wanted(self):
        self.wanted = {urls.normalize(u) or u for u in self.options.url}

    def mapper_match(self, _, line):
        """db line -> the record, if its URL is wanted."""
        for db in self.records(line, 'db'):
            if db['url'] in self.wanted:
                yield None, db


if __name__ == '__main__':
    MRDbGet.run()
