"""MRInvertLinks (Nutch's invertlinks / LinkDb): the anchor texts of links to each URL.

Reads ``page`` records of every layer (out/*) and writes ``anchors`` records (anchors/):
for each URL that pages link to, the linking pages and the anchor texts they use. MRMerge
joins them to the merged pages, so the XML's ``<anchors>`` (what other pages call this
one) can be indexed: it is what makes anchor text searchable.

Links without anchor text are skipped (counted); links from the same host are skipped
when ``merge.internal_anchors`` is off (Nutch's ``linkdb.ignore.internal.host``). A link to
a URL that redirected (its page record has another final_url) is moved to the final URL
in the same reduce group, so anchors to ``/old`` reach the page served at ``/new``.

Run alone::

    python -m jobs.invert_links --crawl-conf crawl/conf.json crawl/out/000 crawl/out/001 \\
        -o /tmp/anchors
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, urls

#: Anchors kept per target URL before the merge's own cap (a bound on reducer memory).
MAX_ANCHORS_PER_TARGET = 1000


class MRInvertLinks(CrawlJob):
    COUNTER_GROUP = C.INVERTLINKS

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_invert, mapper=self.mapper_invert,
                       reducer=self.reducer_anchors)]

    def mapper_init_invert(self):
        self.internal = self.conf.get('merge', {}).get('internal_anchors', True)

    def mapper_invert(self, _, line):
        """page line -> (link target, {from, text}) per link; (url, {redirect: final})."""
        for page in self.records(line, 'page'):
            source = page.get('final_url') or page['url']
            if page['url'] != source:
                yield page['url'], {'redirect': source}
            if page.get('noindex') and page.get('sitemap'):
                continue      # a sitemap's or robots.txt's list of URLs has no anchors
            host = urls.host(source) if not self.internal else None
            for link in page.get('links') or ():
                text = ' '.join((link.get('text') or '').split())
                if not text:
                    self.count(C.INLINKS_EMPTY_SKIPPED)
                    continue
                if host is not None and urls.host(link['url']) == host:
                    self.count(C.INLINKS_INTERNAL_SKIPPED)
                    continue
                self.count(C.INLINKS)
                yield link['url'], {'from': source, 'text': text}

    def reducer_anchors(self, target, values):
        """(target url, anchors and maybe its redirect) -> anchors record."""
        anchors, final = set(), None
        for v in values:
            if 'redirect' in v:
                final = v['redirect']
            elif len(anchors) < MAX_ANCHORS_PER_TARGET:
                anchors.add((v['from'], v['text']))
        if not anchors:
            return
        if final is not None and final != target:
            self.count(C.INLINKS_REDIRECTED, len(anchors))
            target = final
        self.count(C.ANCHOR_TARGETS)
        yield None, {'kind': 'anchors', 'url': target,
                     'anchors': [{'from': f, 'text': t} for f, t in sorted(anchors)]}


if __name__ == '__main__':
    MRInvertLinks.run()
