"""MRParse (ParserDriver): turn fetched documents into parsed pages (fetch.parse = false).

Reads ``doc`` records (doc/NNN) and writes exactly one ``page`` record per doc record
(out/NNN), made by jobs.lib.parsepage.PageParser: the doc's fetch metadata without the
body, plus title, text, filtered out-links, robots directives, main text, language,
site fields and topic relevance. A map-only job: every link dropped is counted by
reason (``link_rejected_*``).

With ``fetch.parse = true`` (the default) MRFetch runs the same PageParser in its
reducer and writes out/NNN itself, and this job does not run.

Run alone::

    python -m jobs.parse --crawl-conf crawl/conf.json crawl/doc/000 -o /tmp/out
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, parsepage


class MRParse(CrawlJob):
    COUNTER_GROUP = C.PARSE

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_parse, mapper=self.mapper_parse)]

    def mapper_init_parse(self):
        """Compile the normaliser, link filters, site configs and topic once per task."""
        # count through self.count at call time (tests and the fuzzer replace it).
        self.parser = parsepage.PageParser(self.conf, lambda *a: self.count(*a))

    def mapper_parse(self, _, line):
        """doc line -> page record (body dropped, parse results added)."""
        for doc in self.records(line, 'doc'):
            yield None, self.parse_doc(doc)

    def parse_doc(self, doc):
        """One doc record -> its page record (jobs.lib.parsepage.PageParser.parse)."""
        return self.parser.parse(doc)


if __name__ == '__main__':
    MRParse.run()
