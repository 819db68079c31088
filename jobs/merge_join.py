"""MRMergeJoin (MergeDriver), job 3 of 3: the merged records, each page's text joined once.

Reads ``merge_map`` records (merge_map/, MRMerge: one per distinct page, naming what
folds into it), ``anchors`` records (anchors/, MRAnchors: the in-link anchors of each
URL of its group, under the leader's URL) and the ``page`` records of every layer
(out/*) again. Writes ``merged`` records (merged/): for each merge_map record, its URL's
latest fetch (the fetch MRMerge ranked: jobs.lib.merging.latest_key) with all its page
fields, plus the map's duplicates, near_duplicates, canonical_duplicates, simhash and
resources, its group's anchors (jobs.lib.merging.keep_anchors: distinct, from outside
the group, at most ``merge.max_anchors``), and
the build of the outputs it belongs to (``build``: the crawl cycle, or a reparse of it).

One step, keyed by URL after redirects. This is the only shuffle of whole page records
in the merge: a URL folded into another page, and a leader URL's earlier fetches, end
here (counted ``fetches_not_kept_total``); the mapper already drops fields no merged
record carries (``body``, ``raw_body``). Secondary resources a leader's page names but
that have no fetched record are listed with status null, reason ``not_fetched``.

With ``--xml-dir`` each reduce task also writes the XML documents of its merged
records (jobs.lib.xmlpage.xml_key_value: MRHtmlToXml's lines, counted in the ``xml``
group) to one file of that folder: the crawl's xml/ without a job that reads every
merged page again (MergeDriver.merge_join). With ``--signature-dir`` they write each
merged record's ``signature`` record (jobs.lib.deltas: its URL and the digest of what
its document carries); with ``--delta-dir`` they compare it with the previous build's
(prev_signatures/ among the inputs) and write the delta, jobs/delta.py's records and
their documents, without that job's passes over both builds' pages. With
``--merged-dir`` they write the merged records themselves too, so each signature
names where its record is (file, offset, length).

``--incremental`` (a later cycle's delta build, drivers/merge_driver.py): the inputs
are merge_map/, anchors/, the previous build's signatures/ and only the new layers'
out/. Per URL: a page whose chosen fetch is new is joined from it; one whose fetch and
merge_map record are unchanged keeps its stored record, unread
(``stored_reused_total``); one whose fetch is unchanged but whose folds or anchors changed is read back from its
place and the map applied again (``stored_reread_total``); a URL that leads no page
now is a deletion. The records that changed go to the delta's records/ (which is then
where the next build finds them), every page's signature to --signature-dir.

Run alone (after jobs.merge)::

    python -m jobs.merge_join --crawl-conf crawl/conf.json crawl/merge_map \\
        crawl/anchors crawl/out/000 crawl/out/001 -o /tmp/merged
"""
import orjson
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, deltas as D, merging as M, records as R, taskfiles

#: What MRMerge's map record adds to (or puts in place of) the page's own fields (its
#: ``anchors`` are MRAnchors', set by :meth:`MRMergeJoin.gather`).
MAP_FIELDS = ('duplicates', 'near_duplicates', 'canonical_duplicates', 'simhash', 'anchors')


class MRMergeJoin(CrawlJob):
    COUNTER_GROUP = C.MERGE_JOIN

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--build', default='001',
                              help='The outputs these merged records belong to (their '
                                   '``build`` field, which jobs/delta.py compares): the '
                                   'cycle, e.g. 002, or a reparse, 002-reparse1. '
                                   'Default: %(default)s')
        self.add_passthru_arg('--xml-dir', default=None,
                              help='Also write each merged record as its xml/ line into '
                              'this folder (local path or hdfs:// URI), one file per '
                              'reduce task. Default: off.')
        self.add_passthru_arg('--signature-dir', default=None,
                              help='Also write each merged record\'s ``signature`` record '
                              '(jobs.lib.deltas) into this folder, one file per reduce '
                              'task: what the next build\'s delta compares. Default: off.')
        self.add_passthru_arg('--delta-dir', default=None,
                              help='Also write the delta since the previous build into '
                              'this folder: records/ (jobs/delta.py\'s records) and xml/ '
                              '(their documents), one file per reduce task. The inputs '
                              'then include the previous build\'s signatures/ (or its '
                              'merged/). Default: off.')
        self.add_passthru_arg('--merged-dir', default=None,
                              help='Write the merged records into this folder, one file '
                              'per reduce task, instead of the job\'s output, so that each '
                              'one\'s place is known: the signature records name it (with '
                              '--signature-dir). Default: off.')
        self.add_passthru_arg('--pages-dir', default=None,
                              help='Also keep the page record of each URL that leads no '
                              'page (folded into another) in this folder, one file per '
                              'reduce task, named by a ``stored`` record among the '
                              'signatures: a later build where it leads reads it back. '
                              'Default: off.')
        self.add_passthru_arg('--pages-name', default='store',
                              help='The folder, relative to --crawl-root, that '
                              '--pages-dir ends up in. Default: %(default)s')
        self.add_passthru_arg('--store-name', default='merged',
                              help='The folder, relative to --crawl-root, that the merged '
                              'records (--merged-dir, or the delta\'s records/ when '
                              '--incremental) end up in: what the signatures name. '
                              'Default: %(default)s')
        self.add_passthru_arg('--incremental', action='store_true',
                              help='Join only what changed since the previous build: the '
                              'inputs are merge_map/, the previous build\'s signatures/ and '
                              'the new layers\' pages only. A page whose fetch is not among '
                              'them is read back from where its signature says it is '
                              '(--crawl-root), or not read at all when its merge_map record '
                              'is the same. Writes the delta (--delta-dir, whose records/ '
                              'are then the store) and every page\'s signature '
                              '(--signature-dir); no merged/ or xml/.')
        self.add_file_arg('--only', help='JSON lines, one URL each: with --incremental, '
                          'join only these URLs (a value keyed by another is dropped), '
                          'and write only their signatures: the driver keeps the other '
                          'pages\' (drivers/later/affected_anchors.py). Default: every URL.')
        self.add_passthru_arg('--crawl-root', default=None,
                              help='The crawl folder the signatures\' record places are '
                              'relative to (local path or hdfs:// URI).')
        self.add_webhdfs_args('--xml-dir, --signature-dir, --delta-dir or --merged-dir')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_only, mapper=self.mapper_by_url,
                       reducer_init=self.reducer_init_xml,
                       reducer=self.reducer_join, reducer_final=self.reducer_final_xml,
                       jobconf=self.wide_reduce())]

    def reducer_init_xml(self):
        """The side files this reduce task writes: xml/, signatures/, delta/."""
        o = self.options
        # lazy: the XML writer (and lxml) only in the reduce tasks that write documents
        from jobs.lib.xmlpage import doc_key_value
        self.doc_key_value = doc_key_value
        self.xml = self.signatures = self.delta_records = self.delta_xml = None
        self.store = self.store_file = self.pages = None
        if o.pages_dir:
            self.pages = self.side_sink(o.pages_dir)
            self.pages_file = '%s/%s' % (o.pages_name.strip('/'), self.pages.name)
        if o.merged_dir:
            self.store = self.side_sink(o.merged_dir)
        if o.xml_dir:
            self.xml = self.side_sink(o.xml_dir)
        if o.signature_dir:
            self.signatures = self.side_sink(o.signature_dir)
        if o.delta_dir:
            self.delta_records = self.side_sink(o.delta_dir.rstrip('/') + '/records')
            self.delta_xml = self.side_sink(o.delta_dir.rstrip('/') + '/xml')
            if o.incremental:
                self.store = self.delta_records
        if self.store is not None:
            self.store_file = '%s/%s' % (o.store_name.strip('/'), self.store.name)

    def reducer_final_xml(self):
        if self.xml is not None:
            self.count(C.XML_DOCS, self.xml.commit()[0], C.XML)
        for sink in (self.signatures, self.delta_records, self.delta_xml):
            if sink is not None:
                sink.commit()
        if self.options.merged_dir:
            self.store.commit()
        if self.pages is not None:
            self.pages.commit()
        return ()

    def mapper_init_only(self):
        self.only = None
        if self.options.only:
            with open(self.options.only, 'rb') as f:
                self.only = {orjson.loads(line) for line in f if line.strip()}

    def mapper_by_url(self, _, line):
        """:meth:`values_by_url`, those of the URLs ``--only`` names."""
        only = self.only
        if only is not None:        # most lines of anchors/ and out/* are of other URLs
            keys = R.line_keys(line)
            if keys is not None and keys.isdisjoint(only):
                return
        for key, value in self.values_by_url(line):
            if only is None or key in only:
                yield key, value

    def values_by_url(self, line):
        """merge_map line -> (url, map); anchors line -> (its leader's url, its anchors);
        page line -> (final url, page without body).
        For the delta (--delta-dir) also: (URL folded into a page, its page), (url, its
        fetch: deltas.current) and (url, its old signature)."""
        delta = self.options.delta_dir
        for rec in self.records(line, 'page', 'merge_map', 'anchors', 'signature', 'merged',
                                'stored'):
            kind = rec['kind']
            if kind == 'anchors':
                yield rec['url'], {'anchors': rec['anchors']}
                continue
            if kind == 'merge_map':
                yield rec['url'], {'map': rec}
                if delta:
                    for dup, leader in D.folded_into(rec):
                        yield dup, {'folded': leader}
                continue
            if kind != 'page':           # the previous build's: prev_signatures/ or
                if self.options.incremental:     # prev_merged/
                    yield rec['url'], {'old': rec}
                elif delta and kind != 'stored':
                    yield rec['url'], {'old': D.old_signature(rec)}
                else:
                    self.count(C.UNEXPECTED_RECORD)
                continue
            if delta:
                yield rec['url'], {'current': [M.current_key(rec), D.current(rec)]}
            if M.classify(rec) != M.PAGE:
                self.count(C.JOIN_NOT_CANDIDATES)
            else:
                for field in M.DROPPED_FIELDS:
                    rec.pop(field, None)
                yield M.final_url(rec), {'page': rec}

    def reducer_join(self, url, values):
        """(url, its map record if it leads + its fetches) -> merged record; and the
        side files' lines."""
        if self.options.incremental:
            yield from self.reducer_incremental(url, values)
            return
        found, pages, old, cur, folded = self.sorted_values(url, values)
        if found is None and pages and self.pages is not None:
            self.keep_page(url, pages)
        page, named = self.join(url, found, pages)
        new_signature = None
        if page is not None:
            if self.xml is not None:
                self.xml.add_line(b'\t'.join(self.doc_key_value(page)))
            at = self.stored_at(self.store.add(page)) if self.store is not None else None
            if self.signatures is not None or self.delta_records is not None:
                sig = D.signature_record(page, self.options.build, found.get('fetch'),
                                         D.map_signature(found), at, named)
                new_signature = sig['signature']
                if self.signatures is not None:
                    self.signatures.add(sig)
            if self.store is None:
                yield None, page
        if self.delta_records is not None:
            self.delta(url, page, new_signature, old, cur and cur[1], folded)

    def sorted_values(self, url, values):
        """A URL's values by kind: (its map record with its group's anchors
        (:meth:`gather`), its page records, its previous signature, its current fetch
        ([key, delta.current]), the leader it is folded into)."""
        found, pages, old, cur, folded, anchors = None, [], None, None, None, []
        for v in values:
            if 'page' in v:
                pages.append(v['page'])
            elif 'map' in v:
                found = v['map']
            elif 'anchors' in v:
                anchors.append(v['anchors'])
            elif 'current' in v:     # its fetches: the current one counts (MRCurrent)
                if cur is None or v['current'][0] > cur[0]:
                    cur = v['current']
            elif 'old' in v:
                old = v['old']
            else:
                folded = v['folded']
        self.gather(url, found, anchors)
        return found, pages, old, cur, folded

    def gather(self, url, found, anchors):
        """*found* (the map record of *url*, None if it leads no page) with its group's
        anchors (MRAnchors' lists for it) in place of the map's own."""
        if found is not None:
            found['anchors'] = M.keep_anchors(url, found.get('duplicates'), anchors,
                                              self.conf['merge']['max_anchors'],
                                              lambda n, k: self.count(n, k, C.MERGE))
        elif anchors:
            self.count(C.ANCHOR_TARGETS_NOT_PAGES, 1, C.MERGE)

    def stored_at(self, place):
        return [self.store_file, place[0], place[1]]

    def keep_page(self, url, pages):
        """The latest of the page records of *url*, which leads no page now, into the
        page store (--pages-dir), named by a ``stored`` record: the fetch MRMerge
        takes for it on the day it leads."""
        page = max(pages, key=M.latest_key)
        named = [{'name': n.get('name'), 'url': n['url']}
                 for n in page.get('resources') or () if n.get('url')]
        at = self.pages.add(page)
        self.count(C.JOIN_PAGES_KEPT)
        self.signatures.add(D.stored_record(url, list(M.latest_key(page)),
                                            [self.pages_file, at[0], at[1]], named))

    def reducer_incremental(self, url, values):
        """--incremental: (url, its map record, its previous signature record, this
        build's new fetches) -> its delta record and its signature; the merged record
        made again only when its fetch or its map record changed."""
        found, pages, old, cur, folded = self.sorted_values(url, values)
        cur = cur and cur[1]
        if found is None:
            self.count(C.JOIN_FETCHES_DROPPED, len(pages))
            self.delta(url, None, None, old and old.get('signature'), cur, folded)
            if pages:
                self.keep_page(url, pages)
            elif old and old.get('at'):
                self.signatures.add(D.as_stored(old))
            return
        fetch = found.get('fetch')
        mine = [p for p in pages if list(M.latest_key(p)) == list(fetch or ())]
        how = None if mine else D.stored(old, found)
        if how == D.REUSE:
            # The same fetch and the same folds: the stored record stands, unread.
            self.count(C.JOIN_REUSED)
            self.count(C.DELTA_UNCHANGED, 1, C.DELTA)
            self.signatures.add(old)
            return
        if mine:
            page, named = self.join(url, found, mine)
        elif how == D.REREAD:
            page, named = self.reread(url, found, old)
        else:
            # Its fetch is in no new layer and no stored record is of it (a page that
            # leads a group now and did not before): the driver builds in full.
            self.count(C.JOIN_NOT_STORED)
            return
        sig = D.signature(page)
        if old and old.get('signature') == sig:
            self.count(C.DELTA_UNCHANGED, 1, C.DELTA)
            self.signatures.add(dict(old, fetch=fetch, map=D.map_signature(found)))
            return
        at = self.stored_at(self.store.add(page))   # the delta's records/: its record
        self.delta_xml.add_line(b'\t'.join(self.doc_key_value(page)))
        self.count(C.DELTA_CHANGED if old and old.get('signature') else C.DELTA_ADDED, 1,
                   C.DELTA)
        self.signatures.add(D.signature_record(page, self.options.build, fetch,
                                               D.map_signature(found), at, named))
        yield from ()

    def reread(self, url, found, old):
        """The previous build's merged record of *url*, read back from its place, with
        *found*'s folds, anchors and resources: (merged record, its named resources)."""
        o = self.options
        name, offset, length = old['at']
        page = orjson.loads(taskfiles.read_range(o.crawl_root, name, offset, length,
                                                 o.webhdfs_url, o.hdfs_user))
        self.count(C.JOIN_REREAD)
        named = old.get('named') or []
        return self.attach(url, found, page, named), named

    def delta(self, url, page, new_signature, old, cur, folded):
        what, rec = D.outcome(url, page, new_signature, old, cur, folded)
        for name in D.counter_names(what, rec):
            self.count(name, 1, C.DELTA)
        if rec is not None:
            self.delta_records.add(rec)
            self.delta_xml.add_line(b'\t'.join(self.doc_key_value(rec)))

    def join(self, url, found, pages):
        """The merged record of *url* (None: it leads no page) and the resources its
        page names."""
        if found is None:
            self.count(C.JOIN_FETCHES_DROPPED, len(pages))
            return None, None
        if not pages:
            self.count(C.JOIN_MAP_WITHOUT_PAGE)
            return None, None
        page = self.chosen(found, pages)
        self.count(C.JOIN_FETCHES_DROPPED, len(pages) - 1)
        named = [{'name': n.get('name'), 'url': n['url']}
                 for n in page.get('resources') or () if n.get('url')]
        return self.attach(url, found, page, named), named

    def attach(self, url, found, page, named):
        """*page*'s fields with *found*'s (its merge_map record): the merged record."""
        page['url'] = url
        for field in MAP_FIELDS:
            page[field] = found.get(field) or ([] if field != 'simhash' else None)
        page['resources'] = self.list_resources(found.get('resources') or [], named)
        page['kind'] = 'merged'
        page['build'] = self.options.build
        self.count(C.JOIN_MERGED)
        return page

    def chosen(self, found, pages):
        """The fetch MRMerge chose for the page (its map's ``fetch``: a URL's latest
        fetch among those it merged, which from the second cycle on are the URLs'
        current fetches only, while out/* also holds fetches they replaced); else the
        latest (a map written before it named its fetch)."""
        want = found.get('fetch')
        if want is not None:
            for page in pages:
                if list(M.latest_key(page)) == list(want):
                    return page
            self.count(C.JOIN_FETCH_NOT_FOUND)
        return max(pages, key=M.latest_key)

    def list_resources(self, fetched, named):
        """The fetched resources, then those the page names that were never fetched."""
        have = {(r.get('name'), r['url']) for r in fetched}
        missing = []
        for n in named:
            if n.get('url') and (n.get('name'), n['url']) not in have:
                entry = {'name': n.get('name'), 'url': n['url']}
                entry.update({f: None for f in M.RESOURCE_FIELDS})
                entry['reason'] = M.NOT_FETCHED
                missing.append(entry)
        self.count(C.RESOURCES_NOT_FETCHED, len(missing))
        return fetched + missing


if __name__ == '__main__':
    MRMergeJoin.run()
