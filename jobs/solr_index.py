"""MRSolrIndex: post one build of a crawl to Solr (``mrcrawl index OUT --solr URL``).

Reads a base (merged/: ``merged`` records) or a delta (delta/D/records: ``merged`` and
``deletion`` records) and, map-only, posts each ``merged`` record as a Solr document
(jobs.lib.solr.document) and each ``deletion`` as a delete by id, in batches of
``solr.batch_docs``: adds and changes overwrite by id, so posting a build twice gives
the same index. The driver commits once every task is done and records what it applied
(drivers/export/solr.py). Writes no output; counts under ``solr``.

Run alone::

    python -m jobs.solr_index --solr http://127.0.0.1:8983/solr/mrcrawl \\
        --build 001 --crawl /path/to/crawl crawl/merged -o /tmp/solr-out
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, solr


class MRSolrIndex(CrawlJob):
    COUNTER_GROUP = C.SOLR

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--solr', required=True,
                              help='URL of the Solr core or collection.')
        self.add_passthru_arg('--build', required=True,
                              help='The build these records are (the base or a delta).')
        self.add_passthru_arg('--crawl', required=True,
                              help='The crawl (its folder), each document\'s crawl field.')
        self.add_passthru_arg('--crawl-started', default=None,
                              help='When the crawl\'s first cycle started (ISO-8601 UTC).')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_post, mapper=self.mapper_post,
                       mapper_final=self.mapper_final_post)]

    def mapper_init_post(self):
        self.settings = self.conf['solr']
        self.types = solr.site_types(self.conf)
        self.poster = solr.Poster(self.options.solr, self.settings, self.count,
                                  lambda line: self.stderr.write(line.encode() + b'\n'))
        self.adds, self.deletes = [], []

    def mapper_post(self, _, line):
        for rec in self.records(line, 'merged', 'deletion'):
            if rec['kind'] == 'deletion':
                self.deletes.append(rec['url'])
            else:     # every merged record is a page: one document each, as xml/ has
                self.adds.append(solr.document(rec, self.options.build, self.options.crawl,
                                               self.types, self.options.crawl_started))
        if len(self.adds) >= self.settings['batch_docs']:
            self.poster.add(self.adds)
            self.adds = []
        if len(self.deletes) >= self.settings['batch_docs']:
            self.poster.delete(self.deletes)
            self.deletes = []

    def mapper_final_post(self):
        self.poster.add(self.adds)
        self.poster.delete(self.deletes)
        self.adds = self.deletes = []


if __name__ == '__main__':
    MRSolrIndex.run()
