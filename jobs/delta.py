"""MRDelta (MergeDriver, second and later cycles, reparses): what changed since the
outputs were last built.

Reads the signatures of the previous build's merged pages (prev_signatures/, else the
pages themselves: prev_merged/), the merged pages of this one
(merged/, records with ``build`` = ``--build``) and each URL's current fetch (current/,
MRCurrent; out/* in a first cycle); writes delta/BUILD: for indexers that apply only
differences,

- a ``merged`` record for every page added or changed: what its XML document carries
  differs (content, title, fields, links, anchors, duplicate groups, resources:
  jobs.lib.deltas.DELTA_FIELDS), not merely its fetch time or layer;
- a ``deletion`` record ``{"kind": "deletion", "url", "reason", "http_status",
  "fetch_time", "duplicate_of"}`` for every page of the previous cycle that is no
  longer a page, with why: ``gone`` (404/410), ``noindex``, ``redirected`` (now
  redirects, or moved: its final URL changed), ``robots_denied``, ``filtered``,
  ``duplicate`` (folded into another page), else ``removed``; ``duplicate_of`` names
  the page it is folded into now, if any (a redirect's target, say).

Anchors and duplicate groups are those of the full merge, since both sides are full
merges. A transient failure deletes nothing: MRCurrent keeps the page's earlier fetch.

MRMergeJoin writes the same delta itself (--delta-dir, from the previous build's
signatures/), so this job runs only when merged/ was joined in an earlier run.

Counters: ``added_total``, ``changed_total``, ``unchanged_total``, ``deleted_total``
and ``deleted_<reason>_total``.

Run alone::

    python -m jobs.delta --crawl-conf crawl/conf.json --build 002 crawl/prev_signatures \\
        crawl/merged crawl/current -o /tmp/delta
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, deltas as D


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
        for rec in self.records(line, 'merged', 'page', 'signature'):
            if rec['kind'] == 'page':
                yield rec['url'], ['current', D.current(rec)]
            elif rec['kind'] == 'merged' and rec.get('build') == self.options.build:
                yield rec['url'], ['new', D.signature(rec), rec]
                for dup, leader in D.folded_into(rec):
                    yield dup, ['folded', leader]
            else:                                # prev_signatures/ or prev_merged/
                yield rec['url'], ['old', D.old_signature(rec)]

    def reducer_delta(self, url, values):
        new = new_sig = old = cur = folded = None
        for v in values:
            if v[0] == 'new':
                new_sig, new = v[1], v[2]
            elif v[0] == 'old':
                old = v[1]
            elif v[0] == 'current':
                cur = v[1]
            else:
                folded = v[1]
        what, rec = D.outcome(url, new, new_sig, old, cur, folded)
        for name in D.counter_names(what, rec):
            self.count(name)
        if rec is not None:
            yield None, rec


if __name__ == '__main__':
    MRDelta.run()
