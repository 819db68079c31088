"""MRChanges: what a re-crawl changed, for indexers that process only differences.

Reads the ``page`` records of one re-crawl round (recrawl/RRR/out) and writes:

- a ``merged`` record for every page that was re-fetched and changed: its content
  digest differs from the one before (or, for pages of a site configuration, its
  extracted-fields checksum does), so html_to_xml writes a new document for it;
- a ``deletion`` record ``{"kind": "deletion", "url", "http_status", "fetch_time"}`` for
  every page that is gone now (404 or 410), so indexers drop it.

Unchanged pages (304, or the same digest/checksum) and other failures write nothing:
they are counted. A map-only job.

Run alone::

    python -m jobs.changes --crawl-conf crawl/conf.json crawl/recrawl/001/out -o /tmp/changes
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R


def page_changed(page):
    """True when a re-fetched page differs from what the crawl had (``prev``)."""
    prev = page.get('prev') or {}
    if prev.get('fields_checksum') and page.get('fields_checksum'):
        return prev['fields_checksum'] != page['fields_checksum']
    return prev.get('digest') != page.get('digest')


class MRChanges(CrawlJob):
    COUNTER_GROUP = 'changes'

    def steps(self):
        return [MRStep(mapper=self.mapper_changes)]

    def mapper_changes(self, _, line):
        """page line -> merged record if it changed, deletion record if it is gone."""
        for page in self.records(line, 'page'):
            status = page.get('status')
            if status == R.FETCH_HTTP_ERROR and page.get('http_status') in (404, 410):
                self.count('deleted_total')
                yield None, {'kind': 'deletion', 'url': page['url'],
                             'http_status': page['http_status'],
                             'fetch_time': page.get('fetch_time')}
            elif status == R.FETCH_NOT_MODIFIED:
                self.count('not_modified_total')
            elif status == R.FETCH_FETCHED and page.get('digest') is not None:
                if page.get('noindex'):
                    self.count('skipped_noindex_total')
                elif page_changed(page):
                    self.count('changed_total')
                    page['kind'] = 'merged'
                    page.setdefault('duplicates', [])
                    page['url'] = page.get('final_url') or page['url']
                    yield None, page
                else:
                    self.count('unchanged_total')
            else:
                self.count(C.status('changes', 'skipped', status))


if __name__ == '__main__':
    MRChanges.run()
