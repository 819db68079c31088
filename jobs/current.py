"""MRCurrent (MergeDriver, from a crawl's second cycle on): each URL's current fetch.

Reads the ``page`` records of every layer of every cycle (meta/*: the records without
their text, jobs.lib.sidefile; else out/*) and writes one per fetched URL (current/):
its latest definitive fetch (jobs.lib.merging.definitive: a
page, gone, a redirect, robots.txt's or a filter's no), else its latest fetch of any
kind. A page fetched in cycle 1 that is 404, noindex or redirected in cycle 2 is then
no longer a page for the merge, the index or the anchors; one that failed transiently
(5xx, network) or answered 304 keeps its earlier page. A 304 answered over a page (its
``prev``: the crawl database's fetched page) is dropped as it is read, unshuffled: a
refresh's 304s are most of its fetches. ``body`` and ``raw_body`` are
dropped (the merge never reads them; WARC files and doc/ keep them). MRMerge and the
index read current/; MRMergeJoin takes each page's text from out/*, the fetch MRMerge
chose (its merge_map record's ``fetch``).

In a crawl's first cycle each URL is fetched once and the merge reads out/* directly:
this job runs only when a URL can have fetches from several cycles. From the third on
it reads the last build's current/ and the layers new since it only (MergeDriver
.summaries): a URL's current fetch is the greatest of its fetches in one order
(jobs.lib.merging.current_key), so the greatest of the old greatest and the new fetches
is the same, and the job's cost follows the crawl's size, not its number of cycles.

With ``--keys`` and ``--pass-dir`` (a later build: drivers/later/affected_current.py) only
the fetches of the URLs the keys name are shuffled: a fetch up to ``--since`` of any
other URL is that URL's only fetch there and none is newer (but a 304 over its page),
so the mapper writes it into the pass folder as it read it; the driver moves those
files into current/. Counter ``current_unshuffled_total``.

With ``--since``, side files name what a later build's affected steps follow:
``--changed-dir`` the merge's (drivers/later/affected.py), ``--links-dir`` the anchors'
(drivers/later/affected_anchors.py), ``--rows-dir`` the index rows made anew
(drivers/later/affected_index.py).

Counters: ``current_total`` (URLs), ``superseded_total`` (fetches replaced by a later
one of the same URL), ``current_read_total`` (fetches read), ``current_new_total`` (with
``--since L``: URLs whose current fetch is from a layer after L, the last build's: what
changed for the merge, out of ``current_total``).

Run alone::

    python -m jobs.current --crawl-conf crawl/conf.json crawl/meta/000 crawl/meta/001 \\
        -o /tmp/current
"""
import orjson
from mrjob.step import MRStep

from jobs.base import CrawlJob, JSONKeyRawValueProtocol, RawLineProtocol
from jobs.index_rows import index_row
from jobs.lib import affected, counters as C, merging as M, records as R

#: A record holding these is parsed and written again without them.
_BODY, _RAW_BODY = b'"body":', b'"raw_body":'


class MRCurrent(CrawlJob):
    COUNTER_GROUP = C.CURRENT
    # The records pass as the bytes they were read as: a current fetch is one of them.
    INTERNAL_PROTOCOL = JSONKeyRawValueProtocol
    OUTPUT_PROTOCOL = RawLineProtocol
    #: The URLs whose fetches must be shuffled (--keys: mapper_init_keys); None: all.
    keys = None

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--since', type=int, default=None,
                              help='The last layer the previous build covered: count the '
                              'URLs whose current fetch is newer (current_new_total). '
                              'Default: not counted.')
        self.add_passthru_arg('--changed-dir', default=None,
                              help='With --since: also write, into this folder (one file '
                              'per reduce task), the key row (jobs.lib.affected) of each '
                              'such URL\'s current fetch: {url, keys: [] and rec: null '
                              'when MRMerge leaves it out, stale: true when its SimHash '
                              'needs its text}. Default: off.')
        self.add_passthru_arg('--links-dir', default=None,
                              help='With --since: also write, into this folder (one file '
                              'per reduce task), what the anchors of a later build '
                              'follow (drivers/later/affected_anchors.py): {url, final} for '
                              'each URL whose current fetch ended at another URL, and '
                              '{url, finals, targets} for each URL whose current fetch '
                              'changed: the URLs its old and new fetch ended at and the '
                              'targets of the links with anchor text that came or went '
                              '(of every such link when they end apart). Default: off.')
        self.add_passthru_arg('--rows-dir', default=None,
                              help='With --since: also write, into this folder (one file '
                              'per reduce task), the index row (jobs.index_rows) of each '
                              'URL whose current fetch changed or that had several '
                              'fetches up to --since (the last index has a row for each): '
                              'the rows drivers/later/affected_index.py makes anew. Default: off.')
        self.add_file_arg('--keys', help='With --since and --pass-dir: JSON lines, the URLs '
                          'whose fetches must meet in the shuffle (drivers/'
                          'affected_current.py). A fetch up to --since of any other URL '
                          'is its current one, written into --pass-dir as it is read.')
        self.add_passthru_arg('--pass-dir', default=None,
                              help='With --keys: the folder of the current fetches written '
                              'unshuffled, one file per map task. Default: off.')
        self.add_webhdfs_args('--changed-dir, --links-dir, --rows-dir and --pass-dir')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_keys, mapper=self.mapper_by_url,
                       mapper_final=self.mapper_final_keys,
                       reducer_init=self.reducer_init_changed,
                       reducer=self.reducer_current, reducer_final=self.reducer_final_changed,
                       jobconf=self.wide_reduce())]

    def reducer_init_changed(self):
        o = self.options
        self.changed = o.changed_dir and o.since is not None and self.side_sink(o.changed_dir)
        self.links = o.links_dir and o.since is not None and self.side_sink(o.links_dir)
        self.rows = o.rows_dir and o.since is not None and self.side_sink(o.rows_dir)

    def reducer_final_changed(self):
        for sink in (self.changed, self.links, self.rows):
            if sink:
                sink.commit()
        return ()

    def link_rows(self, best, old, changed):
        """--links-dir rows of a URL whose current fetch is *best* (*old*: the last
        build's, or None; *changed*: is *best* newer than it)."""
        # Where it ends, as jobs.lib.merging.inlinks names it; its links only if changed.
        final = best.get('final_url') or best['url']
        if final != best['url']:
            self.links.add({'url': best['url'], 'final': final})
        if changed:
            internal = self.conf['merge']['internal_anchors']
            _, links = M.inlinks(best, internal, _uncounted)
            finals, targets = [final], {target for target, _ in links}
            if old is not None:
                old_final, old_links = M.inlinks(old, internal, _uncounted)
                finals.append(old_final)
                if old_final == final:
                    # The same source: only the anchors that came or went change a
                    # target's (jobs.lib.merging.gather_anchors keeps a set of them).
                    targets = {target for target, _ in set(links) ^ set(old_links)}
                else:
                    targets.update(target for target, _ in old_links)
            self.links.add({'url': best['url'], 'finals': finals,
                            'targets': sorted(targets)})

    def changed_row(self, rec):
        """*rec*'s key row for --changed-dir."""
        merge, what = self.conf['merge'], M.classify(rec)
        if what == M.RESOURCE:
            return affected.row(rec, None, None)
        if what != M.PAGE:
            return {'url': rec['url'], 'keys': [], 'simhash': None, 'rec': None}
        fp, event = affected.compared_simhash(rec, merge)
        out = affected.row(rec, fp, merge['max_hamming_distance'])
        if event == affected.TEXT_ELSEWHERE:
            out['stale'] = True
        return out

    def mapper_init_keys(self):
        o = self.options
        self.passed = self.passed_links = None
        if o.keys and o.pass_dir and o.since is not None:
            with open(o.keys, 'rb') as f:
                self.keys = {orjson.loads(line) for line in f if line.strip()}

    def mapper_final_keys(self):
        for sink in (self.passed, self.passed_links):
            if sink:
                sink.commit()
        return ()

    def mapper_by_url(self, _, line):
        """page line -> (url, the line): as it is when it holds no body, the common
        case (meta/*), else parsed and written again without it. A 304 over a page
        goes no further: that page's fetch, which the crawl holds, stays current. With
        --keys, neither does the only fetch of a URL: :meth:`pass_on`."""
        line = line.rstrip()
        if R.not_modified_over_page(line):
            self.count(C.CURRENT_READ)
            self.count(C.SUPERSEDED)
            return
        if self.keys is not None and self.pass_on(line):
            return
        if not (_BODY in line or _RAW_BODY in line):
            url = R.page_url(line)
            if url is not None:
                yield url, line
                return
        for rec in self.records(line, 'page'):
            rec.pop('body', None)
            rec.pop('raw_body', None)
            yield rec['url'], orjson.dumps(rec)

    def pass_on(self, line):
        """Write *line* into --pass-dir, unshuffled, if it is a fetch up to --since of a
        URL --keys does not name (the URL's only fetch, its current one, as the
        reducer would write it: no body, whole); whether it did. Counted as the reducer
        counts it, and its --links-dir row (a redirect's) written here."""
        at = R.page_url_layer(line)
        if at is None or at[1] > self.options.since or at[0] in self.keys or \
                not line.endswith(b'}') or _BODY in line or _RAW_BODY in line:
            return False
        ends = R.line_keys(line)
        if ends is None:
            return False
        if self.passed is None:
            self.passed = self.side_sink(self.options.pass_dir, 'part-m')
        self.passed.add_line(line)
        for name in (C.CURRENT_PAGES, C.CURRENT_READ, C.CURRENT_UNSHUFFLED):
            self.count(name)
        if self.options.links_dir and len(ends) > 1:
            if self.passed_links is None:
                self.passed_links = self.side_sink(self.options.links_dir, 'part-m')
            self.passed_links.add({'url': at[0], 'final': (ends - {at[0]}).pop()})
        return True

    def reducer_current(self, url, lines):
        best = old = best_key = old_key = None
        n, n_old, since = 0, 0, self.options.since
        for line in lines:
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:      # a line the mapper did not parse
                self.count(C.MALFORMED_RECORD)
                continue
            n += 1
            key = M.current_key(rec)
            if best is None or key > best_key:
                best, best_key, best_line = rec, key, line
            if since is not None and (rec.get('layer') or 0) <= since:
                n_old += 1
                if old is None or key > old_key:
                    old, old_key = rec, key
        if best is None:
            return
        self.count(C.CURRENT_PAGES)
        self.count(C.CURRENT_READ, n)
        changed = since is not None and (best.get('layer') or 0) > since
        if changed:
            self.count(C.CURRENT_NEW)
            if self.changed:
                fingerprint = best.get('fingerprint')
                self.changed.add(self.changed_row(best))
                if best.get('fingerprint') is not fingerprint:   # hashed from its text
                    best_line = orjson.dumps(best)
        if self.links:
            self.link_rows(best, old, changed)
        if self.rows and (changed or n_old > 1):
            self.rows.add(index_row(best))
        if n > 1:
            self.count(C.SUPERSEDED, n - 1)
        yield None, best_line


def _uncounted(name, amount=1):
    """MRAnchors counts the links it inverts; the rows here only name them."""


if __name__ == '__main__':
    MRCurrent.run()
