"""MRDelta (MergeDriver, second and later cycles, reparses): what changed since the
outputs were last built.

Reads the merged pages of the previous build (prev_merged/), those of this one
(merged/, records with ``build`` = ``--build``) and each URL's current fetch (current/,
MRCurrent; out/* in a first cycle); writes delta/BUILD: for indexers that apply only
differences,

- a ``merged`` record for every page added or changed: what its XML document carries
  differs (content, title, fields, links, anchors, duplicate groups, resources:
  DELTA_FIELDS), not merely its fetch time or layer;
- a ``deletion`` record ``{"kind": "deletion", "url", "reason", "http_status",
  "fetch_time", "duplicate_of"}`` for every page of the previous cycle that is no
  longer a page, with why: ``gone`` (404/410), ``noindex``, ``redirected`` (now
  redirects, or moved: its final URL changed), ``robots_denied``, ``filtered``,
  ``duplicate`` (folded into another page), else ``removed``; ``duplicate_of`` names
  the page it is folded into now, if any (a redirect's target, say).

Anchors and duplicate groups are those of the full merge, since both sides are full
merges. A transient failure deletes nothing: MRCurrent keeps the page's earlier fetch.

Counters: ``added_total``, ``changed_total``, ``unchanged_total``, ``deleted_total``
and ``deleted_<reason>_total``.

Run alone::

    python -m jobs.delta --crawl-conf crawl/conf.json --build 002 crawl/prev_merged \\
        crawl/merged crawl/current -o /tmp/delta
"""
import hashlib
import json

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R

#: What an index sees of a merged record: the fields its XML document carries
#: (jobs/lib/xmlpage.py page_xml) but the fetch's time and place (fetch_time, layer,
#: depth, status, http_status). A page fetched again with the same content is no change;
#: its new WARC record, OPIC score or timings are none either.
DELTA_FIELDS = ('url', 'content_type', 'encoding', 'length', 'digest', 'simhash',
                'language', 'title', 'description', 'headings', 'text', 'main_text', 'links',
                'anchors', 'duplicates', 'near_duplicates', 'canonical_duplicates', 'site',
                'fields', 'fields_checksum', 'resources')


def signature(rec):
    """Digest of what an index sees of a merged record."""
    kept = {k: rec.get(k) for k in DELTA_FIELDS}
    return hashlib.sha1(json.dumps(kept, sort_keys=True).encode('utf-8')).hexdigest()


def deletion_reason(page):
    """Why the current fetch of a URL that was a page is no page now (None: it is)."""
    status = page.get('status')
    if status == R.FETCH_HTTP_ERROR and page.get('http_status') in (404, 410):
        return 'gone'
    if status == R.FETCH_REDIRECTED or (status == R.FETCH_FETCHED and (
            page.get('final_url') or page['url']) != page['url']):
        return 'redirected'
    if status == R.FETCH_ROBOTS_DENIED:
        return 'robots_denied'
    if status == R.FETCH_FILTERED:
        return 'filtered'
    if status == R.FETCH_FETCHED and page.get('noindex'):
        return 'noindex'
    return None


class MRDelta(CrawlJob):
    COUNTER_GROUP = C.DELTA

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--build', required=True,
                              help='This build: merged records carrying it are new.')

    def steps(self):
        return [MRStep(mapper=self.mapper_sides, reducer=self.reducer_delta,
                       jobconf=self.wide_reduce())]

    def mapper_sides(self, _, line):
        for rec in self.records(line, 'merged', 'page'):
            if rec['kind'] == 'page':
                yield rec['url'], ['current', deletion_reason(rec),
                                   rec.get('http_status'), rec.get('fetch_time')]
            elif rec.get('build') == self.options.build:
                yield rec['url'], ['new', signature(rec), rec]
                for field in ('duplicates', 'near_duplicates', 'canonical_duplicates'):
                    for dup in rec.get(field) or ():
                        yield dup, ['folded', rec['url']]
            else:
                yield rec['url'], ['old', signature(rec)]

    def reducer_delta(self, url, values):
        new = old = current = folded = None
        for v in values:
            if v[0] == 'new':
                new = v
            elif v[0] == 'old':
                old = v
            elif v[0] == 'current':
                current = v
            else:
                folded = v[1]
        if new is not None:
            if old is None:
                self.count(C.DELTA_ADDED)
            elif old[1] != new[1]:
                self.count(C.DELTA_CHANGED)
            else:
                self.count(C.DELTA_UNCHANGED)
                return
            yield None, new[2]
            return
        if old is None:
            return
        reason = (current[1] if current and current[1] else None) or (
            'duplicate' if folded else 'removed')
        self.count(C.DELTA_DELETED)
        self.count(C.per('deleted', reason))
        yield None, {'kind': 'deletion', 'url': url, 'reason': reason,
                     'duplicate_of': folded,
                     'http_status': current[2] if current else None,
                     'fetch_time': current[3] if current else None}


if __name__ == '__main__':
    MRDelta.run()
