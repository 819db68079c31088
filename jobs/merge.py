"""MRMerge (MergeDriver): all layers' pages, one record per URL, exact duplicates folded.

Reads ``page`` records of every layer (out/*; they carry doc/'s fetch metadata and the
parse results, without the raw body) and writes ``merged`` records (merged/): one per
distinct HTML page content.

Step 1 keys pages by final URL (after redirects): a URL fetched more than once keeps
its latest fetch; the URLs that redirected to it become its aliases.
Step 2 keys by content digest: pages with the same digest under different URLs are one
page. The canonical URL is chosen by this order: https before http, then the shorter
URL, then the earliest fetch, then the URL's text order. The others are listed in
``duplicates``. Pages marked noindex (meta robots or X-Robots-Tag) are left out.

Run alone::

    python -m jobs.merge --crawl-conf crawl/conf.json crawl/out/000 crawl/out/001 -o /tmp/merged
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R


def canonical_order(page):
    """Sort key: the first page in this order is the canonical one of its group."""
    url = page['url']
    return (not url.startswith('https:'), len(url), page.get('fetch_time') or '', url)


class MRMerge(CrawlJob):
    COUNTER_GROUP = C.MERGE

    def steps(self):
        return [MRStep(mapper=self.mapper_by_final_url, reducer=self.reducer_latest),
                MRStep(reducer=self.reducer_fold_duplicates)]

    def mapper_by_final_url(self, _, line):
        """page line -> (final url, page), for fetched HTML pages."""
        for page in self.records(line, 'page'):
            if page.get('status') != R.FETCH_FETCHED or page.get('digest') is None:
                self.count(C.NOT_A_PAGE)
                continue
            if page.get('noindex'):
                self.count('skipped_noindex_total')
                continue
            yield page.get('final_url') or page['url'], page

    def reducer_latest(self, final_url, pages):
        """(final url, its fetches) -> (digest, latest fetch with aliases)."""
        pages = list(pages)
        pages.sort(key=lambda p: p.get('fetch_time') or '')
        latest = pages[-1]
        aliases = {p['url'] for p in pages} - {final_url}
        latest['url'] = final_url
        latest['duplicates'] = sorted(aliases)
        yield latest['digest'], latest

    def reducer_fold_duplicates(self, digest, pages):
        """(digest, pages) -> one merged record naming the others as duplicates."""
        pages = sorted(pages, key=canonical_order)
        best = pages[0]
        dups = set(best['duplicates'])
        for other in pages[1:]:
            dups.add(other['url'])
            dups.update(other['duplicates'])
        dups.discard(best['url'])
        self.count(C.EXACT_DUPLICATES, len(pages) - 1)
        self.count(C.MERGED_PAGES)
        best['kind'] = 'merged'
        best['duplicates'] = sorted(dups)
        yield None, best


if __name__ == '__main__':
    MRMerge.run()
