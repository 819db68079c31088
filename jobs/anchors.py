"""MRAnchors (MergeDriver), job 2 of 3: each merged page's in-link anchors (invertlinks).

Reads ``page`` records (meta/* or current/: what MRMerge read, the same pages) and
``merge_map`` records (merge_map/, MRMerge: who folds into whom). Writes one ``anchors``
record per URL of a merged page's group that has in-link anchors (anchors/): that
``member``, its leader ``url`` and the anchors ``[{from, text}, ...]`` of the links to
that member. MRMergeJoin
(jobs/merge_join.py) gathers a leader's records and keeps the distinct anchors from
outside its group, at most ``merge.max_anchors`` (jobs.lib.merging.keep_anchors).

Two shuffles, of anchors and URLs only:

1. **by link target**: each link with anchor text, under its target
   (jobs.lib.merging.inlinks; links without text are skipped, and links within a host
   when ``merge.internal_anchors`` is off, Nutch's linkdb.ignore.internal.host; a
   mapper sends a target's links as one list, combined in memory up to
   ``COMBINE_LINKS`` links, as a record costs more to write, sort and read than its
   bytes), a
   redirect's notice under the URL that redirected, and each merge_map member's
   leader under the member. The reducer gathers a target's anchors and sends them on
   to the URL it redirected to (jobs.lib.merging.gather_anchors): anchors to /old reach
   the page served at /new, also when /new was fetched in a later layer.
2. **by final URL**: a URL's anchors meet its leader notice and leave under the leader;
   anchors to a URL that is no page (never fetched, failed, noindex) are counted
   ``anchor_targets_not_pages_total`` and dropped.

Why not in MRMerge: the anchors are most of what a merge would carry (in a group's
summaries through its six shuffles, folded at every step), while only the group a URL
ends in decides where its anchors go. Here they cross two shuffles, never folded.

With ``--only FILE`` (a later build: drivers/later/affected_anchors.py) it inverts only the
links to the URLs FILE names as targets and writes only the records of the members it
names: every URL that can send anchors to such a member is a target there, so each
record written is the one a whole run would write. A link to another URL is passed
over before its text is looked at, and its inlinks_* counters count the links to the
targets only.

Run alone (after jobs.merge)::

    python -m jobs.anchors --crawl-conf crawl/conf.json crawl/meta/000 crawl/meta/001 \\
        crawl/merge_map -o /tmp/anchors
"""
import orjson
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, merging as M

#: Links a mapper holds, combined by target, before it sends them on: a bound on its
#: memory (a few hundred bytes a link).
COMBINE_LINKS = 100000


class MRAnchors(CrawlJob):
    COUNTER_GROUP = C.MERGE

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_links, mapper=self.mapper_links,
                       mapper_final=self.flush_links, reducer=self.reducer_by_target,
                       jobconf=self.wide_reduce()),
                MRStep(reducer=self.reducer_to_leader, jobconf=self.wide_reduce())]

    def configure_args(self):
        super().configure_args()
        self.add_file_arg('--only', help='JSON lines ["target", URL] and ["member", URL]: '
                          'invert only the links to these targets, write the records of '
                          'these members only. Default: every link and member.')

    def mapper_init_links(self):
        self.internal_anchors = self.conf['merge']['internal_anchors']
        self.pending, self.held = {}, 0
        self.targets = self.members = None
        if self.options.only:
            self.targets, self.members = set(), set()
            with open(self.options.only, 'rb') as f:
                for line in f:
                    if line.strip():
                        what, url = orjson.loads(line)
                        (self.targets if what == 'target' else self.members).add(url)

    def flush_links(self):
        """(target, {inlinks: [[from, text], ...]}) per target of the links held."""
        for target, links in self.pending.items():
            yield target, {'inlinks': links}
        self.pending, self.held = {}, 0

    def mapper_links(self, _, line):
        """page line -> its links with anchor text, held by target (:meth:`flush_links`),
        and (url, redirect notice); merge_map line -> (member, {leader: its url}) for the
        leader and every URL folded into it."""
        for rec in self.records(line, 'page', 'merge_map'):
            if rec['kind'] == 'page':
                targets = self.targets
                source, links = M.inlinks(rec, self.internal_anchors, self.count, targets)
                if source != rec['url'] and (targets is None or rec['url'] in targets):
                    yield rec['url'], {'redirect': source}
                pending = self.pending
                for target, text in links:
                    if target in pending:
                        pending[target].append((source, text))
                    else:
                        pending[target] = [(source, text)]
                self.held += len(links)
                if self.held >= COMBINE_LINKS:
                    yield from self.flush_links()
                continue
            members = self.members
            for member in [rec['url']] + list(rec.get('duplicates') or ()):
                if members is None or member in members:
                    yield member, {'leader': rec['url']}

    def reducer_by_target(self, url, values):
        """(URL, its inlinks, redirect notice, leader notice) -> (the URL after its
        redirect, {anchors}) and (URL, {leader}) passed on."""
        links = []
        for v in values:
            if 'leader' in v:
                yield url, v
            else:
                links.append(v)
        anchors = M.gather_anchors(url, links, self.count) if links else None
        if anchors:
            yield anchors[0], {'anchors': anchors[1]}

    def reducer_to_leader(self, url, values):
        """(final URL, its anchors + leader notice) -> anchors record under the leader."""
        leader, parts = None, []
        for v in values:
            if 'leader' in v:
                leader = v['leader']
            else:
                parts.append(v['anchors'])
        if not parts:
            return
        if leader is None:
            self.count(C.ANCHOR_TARGETS_NOT_PAGES)
            return
        # Its own anchors and those of URLs that redirected to it (gather_anchors' lists).
        yield None, {'kind': 'anchors', 'member': url, 'url': leader,
                     'anchors': M.distinct_anchors(parts)}


if __name__ == '__main__':
    MRAnchors.run()
