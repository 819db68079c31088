"""MRIndexRows: the rows of the crawl's columnar index and each host's totals per layer.

Reads ``page`` records of every layer (out/*), ``merge_map`` records (merge_map/, MRMerge;
``merged`` records of merged/ serve as well, for a crawl whose merge left no merge_map/)
and, when WARC files were written, ``warc_index`` records (warc_index/*, MRWarc). Writes
two kinds of records (index_rows/, which drivers/later/index.py turns into Parquet, OUT/index/
and OUT/hosts/, then removes):

- ``index_row``: one per page record, i.e. one per URL of every layer's in/ whatever its
  status (a URL deferred in one layer and fetched in the next has a row in each), with
  ``duplicate_of`` joined from merge_map/: the canonical URL of the merged page this URL
  was folded into (same digest, redirect source, near duplicate, rel=canonical), set on
  its ``fetched`` row only, else null; and warc_filename, warc_record_offset,
  warc_record_length joined from warc_index/ by URL and layer (null when not archived).
- ``host_layer``: one per (layer, host): URLs, summed fetch seconds, bytes, URLs by
  status and by reason (why deferred, denied, failed). The report takes each layer's
  politeness lower bound (largest host x delay) and its slowest hosts from these, so it
  never has to hold a per-host table in one process.

One shuffle: the joins are keyed by URL, the host totals by (layer, host) with a combiner.
The tasks need nothing beyond what the other jobs import (no pyarrow on the nodes).

**Why merge_map/, not merged/**: both name the same folds. MRMergeJoin copies each
merge_map record's ``duplicates`` into the merged record of its URL, and every merge_map
URL has a merged record (MRMerge makes one only for the final URL of a fetched page of
out/*, which the join keys its pages by: ``map_without_page_total`` counts an exception),
so duplicate_of comes out the same, from a few hundred bytes per page instead of the
page's whole text.

Run alone::

    python -m jobs.index_rows --crawl-conf crawl/conf.json crawl/out/000 crawl/out/001 \\
        crawl/merge_map -o /tmp/index_rows
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R, urls
from jobs.lib.filters import registered_domain

#: Page fields copied to an index row as they are.
ROW_FIELDS = ('url', 'status', 'reason', 'http_status', 'fetch_time', 'content_type',
              'length', 'digest', 'depth', 'layer', 'title', 'language', 'final_url',
              'elapsed', 'attempts', 'tls_verified')


#: warc_index fields copied to the index row of the same URL and layer.
WARC_FIELDS = ('warc_filename', 'warc_record_offset', 'warc_record_length')


def index_row(page):
    """The index row of a page record (duplicate_of still unknown)."""
    row = {k: page.get(k) for k in ROW_FIELDS}
    row['kind'] = 'index_row'
    try:
        row['host'] = urls.host(page['url'])
    except (IndexError, AttributeError):
        row['host'] = None
    try:
        name = urls.hostname(page['url'])
    except (TypeError, ValueError):
        name = None
    row['registered_domain'] = registered_domain(name) if name else None
    row['duplicate_of'] = None
    for field in WARC_FIELDS:     # a fetch that archived it points at its record
        row[field] = page.get(field)
    return row


def _add_totals(into, part):
    into['urls'] += part['urls']
    into['elapsed'] += part['elapsed']
    into['bytes'] += part['bytes']
    for field in ('statuses', 'reasons'):
        for k, v in part[field].items():
            into[field][k] = into[field].get(k, 0) + v
    return into


def _empty_totals():
    return {'urls': 0, 'elapsed': 0.0, 'bytes': 0, 'statuses': {}, 'reasons': {}}


class MRIndexRows(CrawlJob):
    COUNTER_GROUP = C.INDEX

    def steps(self):
        return [MRStep(mapper=self.mapper_rows, combiner=self.combiner_host_totals,
                       reducer=self.reducer_join, jobconf=self.wide_reduce())]

    def mapper_rows(self, _, line):
        """page line -> (['u', url], row) and (['h', layer, host], its totals);
        merge_map (or merged) line -> (['u', duplicate], {dup_of: canonical url}) per
        duplicate;
        warc_index line -> (['u', url], {warc: its file, offset, length, layer})."""
        for rec in self.records(line, 'page', 'merge_map', 'merged', 'warc_index'):
            if rec['kind'] == 'warc_index':
                yield ['u', rec['url']], {'warc': dict(
                    {k: rec.get(k) for k in WARC_FIELDS}, layer=rec.get('layer'))}
                continue
            if rec['kind'] in ('merge_map', 'merged'):
                for dup in rec.get('duplicates') or ():
                    yield ['u', dup], {'dup_of': rec['url']}
                continue
            row = index_row(rec)
            yield ['u', row['url']], {'row': row}
            status, reason = row['status'], row['reason']
            yield ['h', row['layer'], row['host']], {
                'urls': 1, 'elapsed': float(row['elapsed'] or 0.0),
                'bytes': int(row['length'] or 0) if status == R.FETCH_FETCHED else 0,
                'statuses': {status or 'unknown': 1},
                'reasons': {reason: 1} if reason else {}}

    def combiner_host_totals(self, key, values):
        """Partial (layer, host) totals summed; URL keys passed through."""
        if key[0] != 'h':
            for v in values:
                yield key, v
            return
        totals = _empty_totals()
        for v in values:
            _add_totals(totals, v)
        yield key, totals

    def reducer_join(self, key, values):
        """(['u', url], rows + canonical URL) -> index_row records with duplicate_of;
        (['h', layer, host], totals) -> one host_layer record."""
        if key[0] == 'h':
            totals = _empty_totals()
            for v in values:
                _add_totals(totals, v)
            totals['elapsed'] = round(totals['elapsed'], 3)
            self.count(C.INDEX_HOST_LAYERS)
            yield None, dict(totals, kind='host_layer', layer=key[1], host=key[2])
            return
        rows, canonical, warc = [], set(), {}
        for v in values:
            if 'row' in v:
                rows.append(v['row'])
            elif 'warc' in v:
                warc[v['warc'].pop('layer')] = v['warc']
            else:
                canonical.add(v['dup_of'])
        if len(canonical) > 1:      # merge folds a URL into one page; say so if not
            self.count(C.INDEX_DUPLICATE_CONFLICT)
        dup_of = min(canonical) if canonical else None
        placed = False
        for row in rows:
            if dup_of is not None and row['status'] == R.FETCH_FETCHED:
                row['duplicate_of'] = dup_of
                placed = True
                self.count(C.INDEX_DUPLICATE_ROWS)
            archived = warc.pop(row['layer'], None)
            if archived is not None:
                row.update(archived)
            if row['warc_filename']:
                self.count(C.INDEX_WARC_ROWS)
            self.count(C.INDEX_ROWS)
            yield None, row
        if dup_of is not None and not placed:
            self.count(C.INDEX_DUPLICATE_NOT_A_ROW)
        if warc:      # an archived URL of a layer with no page record for it
            self.count(C.INDEX_WARC_NOT_A_ROW, len(warc))


if __name__ == '__main__':
    MRIndexRows.run()
