"""MRMergeJoin (MergeDriver), step 2 of 2: the merged records, each page's text joined once.

Reads ``merge_map`` records (merge_map/, MRMerge: one per distinct page, naming what
folds into it) and the ``page`` records of every layer (out/*) again. Writes ``merged``
records (merged/): for each merge_map record, its URL's latest fetch (the fetch MRMerge
ranked: jobs.lib.merging.latest_key) with all its page fields, plus the map's
duplicates, near_duplicates, canonical_duplicates, simhash, anchors and resources, and
the build of the outputs it belongs to (``build``: the crawl cycle, or a reparse of it).

One step, keyed by URL after redirects. This is the only shuffle of whole page records
in the merge: a URL folded into another page, and a leader URL's earlier fetches, end
here (counted ``fetches_not_kept_total``); the mapper already drops fields no merged
record carries (``body``, ``raw_body``). Secondary resources a leader's page names but
that have no fetched record are listed with status null, reason ``not_fetched``.

With ``--xml-dir`` each reduce task also writes the XML documents of its merged
records (jobs.lib.xmlpage.xml_key_value: MRHtmlToXml's lines, counted in the ``xml``
group) to one file of that folder: the crawl's xml/ without a job that reads every
merged page again (MergeDriver.merge_join).

Run alone (after jobs.merge)::

    python -m jobs.merge_join --crawl-conf crawl/conf.json crawl/merge_map \\
        crawl/out/000 crawl/out/001 -o /tmp/merged
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, merging as M

#: What MRMerge's map record adds to (or puts in place of) the page's own fields.
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
        self.add_webhdfs_args('--xml-dir')

    def steps(self):
        return [MRStep(mapper=self.mapper_by_url, reducer_init=self.reducer_init_xml,
                       reducer=self.reducer_join, reducer_final=self.reducer_final_xml,
                       jobconf=self.wide_reduce())]

    def reducer_init_xml(self):
        self.xml = None
        o = self.options
        if o.xml_dir:
            import os
            from jobs.lib import sidefile, xmlpage
            part = int(os.environ.get('mapreduce_task_partition') or 0)
            self.xml = sidefile.LineSink(o.xml_dir, 'part-%05d' % part, o.webhdfs_url,
                                         o.hdfs_user)
            self.xml_key_value = xmlpage.xml_key_value

    def reducer_final_xml(self):
        if self.xml is not None:
            self.count(C.XML_DOCS, self.xml.commit()[0], C.XML)
        return ()

    def mapper_by_url(self, _, line):
        """merge_map line -> (url, map); page line -> (final url, page without body)."""
        for rec in self.records(line, 'page', 'merge_map'):
            if rec['kind'] == 'merge_map':
                yield rec['url'], {'map': rec}
            elif M.classify(rec) != M.PAGE:
                self.count(C.JOIN_NOT_CANDIDATES)
            else:
                for field in M.DROPPED_FIELDS:
                    rec.pop(field, None)
                yield M.final_url(rec), {'page': rec}

    def reducer_join(self, url, values):
        """(url, its map record if it leads + its fetches) -> merged record."""
        found, pages = None, []
        for v in values:
            if 'map' in v:
                found = v['map']
            else:
                pages.append(v['page'])
        if found is None:
            self.count(C.JOIN_FETCHES_DROPPED, len(pages))
            return
        if not pages:
            self.count(C.JOIN_MAP_WITHOUT_PAGE)
            return
        page = max(pages, key=M.latest_key)
        self.count(C.JOIN_FETCHES_DROPPED, len(pages) - 1)
        named = page.get('resources') or ()
        page['url'] = url
        for field in MAP_FIELDS:
            page[field] = found.get(field) or ([] if field != 'simhash' else None)
        page['resources'] = self.list_resources(found.get('resources') or [], named)
        page['kind'] = 'merged'
        page['build'] = self.options.build
        self.count(C.JOIN_MERGED)
        if self.xml is not None:
            self.xml.add_line(b'\t'.join(self.xml_key_value(page)))
        yield None, page

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
