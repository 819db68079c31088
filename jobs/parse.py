"""MRParse (ParserDriver): turn fetched documents into parsed pages.

Reads ``doc`` records (doc/NNN) and writes exactly one ``page`` record per doc record
(out/NNN): the doc's fetch metadata without the body, plus title, text, out-links with
anchor text (resolved against the page and ``<base href>``, normalised, http(s) only),
the canonical link and the page's robots directives. A map-only job.

Run alone::

    python -m jobs.parse --crawl-conf crawl/conf.json crawl/doc/000 -o /tmp/out
"""
from jobs.base import CrawlJob
from jobs.lib import counters as C, html, records as R, urls
from mrjob.step import MRStep


class MRParse(CrawlJob):
    COUNTER_GROUP = C.PARSE

    def steps(self):
        return [MRStep(mapper=self.mapper_parse)]

    def mapper_parse(self, _, line):
        """doc line -> page record (body dropped, parse results added)."""
        for doc in self.records(line, 'doc'):
            yield None, self.parse_doc(doc)

    def parse_doc(self, doc):
        body = doc.pop('body', None)
        page = dict(doc, kind='page', title=None, text='', links=[], canonical=None,
                    noindex=False, nofollow=False)
        if doc.get('status') != R.FETCH_FETCHED or body is None:
            return page
        limits = self.conf['parse']
        base = doc.get('final_url') or doc['url']
        try:
            parsed = html.parse(body, base, limits['max_text_chars'])
        except Exception as e:   # a parser failure costs the links, not the record
            self.count(C.PARSE_ERROR)
            page['parse_error'] = type(e).__name__
            return page
        self.count(C.PAGES_PARSED)
        x_robots = (doc.get('headers') or {}).get('x-robots-tag', '').lower()
        page.update(title=parsed['title'], text=parsed['text'],
                    canonical=urls.normalize(parsed['canonical']),
                    noindex=parsed['noindex'] or 'noindex' in x_robots or 'none' in x_robots,
                    nofollow=parsed['nofollow'] or 'nofollow' in x_robots or 'none' in x_robots)
        page['links'] = self.keep_links(parsed['links']) if not page['nofollow'] else []
        return page

    def keep_links(self, found):
        """Normalise, filter and de-duplicate a page's links; count each rejection."""
        self.count(C.LINKS_FOUND, len(found))
        max_links = self.conf['parse']['max_links_per_page']
        max_len = self.conf['filter']['max_url_length']
        kept, seen = [], set()
        for link in found:
            if 'nofollow' in link['rel'].split():
                self.count(C.link_rejected('nofollow'))
                continue
            url = urls.normalize(link['url'])
            if url is None:
                self.count(C.link_rejected('scheme'))
                continue
            if len(url) > max_len:
                self.count(C.link_rejected('url_too_long'))
                continue
            if url in seen:
                continue
            if len(kept) >= max_links:
                self.count(C.link_rejected('over_cap'))
                continue
            seen.add(url)
            kept.append({'url': url, 'text': link['text'], 'rel': link['rel']})
        self.count(C.LINKS_KEPT, len(kept))
        return kept


if __name__ == '__main__':
    MRParse.run()
