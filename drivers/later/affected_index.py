"""A later build's index from the last build's and the rows its change makes (MergeDriver).

From a crawl's second cycle on, the index (drivers/later/index.py) holds one row per URL, its
current fetch's (MRCurrent), with duplicate_of from merge_map/. From one build to the
next a URL's row changes only when:

- its current fetch changed, or it had several fetches in the last build's layers (the
  first cycle's index has a row per fetch): MRCurrent ``--rows-dir`` writes the row of
  each such URL (tmp/index_rows_side);
- the group it is folded into changed: it is in the affected merge's set, or a member of
  a group that merge dropped or made. drivers/later/affected.py writes their duplicate_of
  (:func:`write_folds`, tmp/index_folds).

So, in the driver, with Arrow (no job reads current/ again):

    prev_index/ less the rows of MRCurrent's URLs, duplicate_of anew for index_folds
    + MRCurrent's rows                                                   -> index/
    the (layer, host) totals of those rows                               -> hosts/

It is made in full (MRIndexRows) instead after a full merge, a reparse or a crawl's
first build, when MRWarc archived a layer (its warc_index/ is joined by the job), when
the last index has another schema (an earlier version), and when it is over
merge.affected_max_bytes (the driver holds it in memory). :func:`build_index` makes a
build's index either way; drivers/later/index.py is the datasets' schemas and writer.
"""
import logging
import time

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from drivers.folder import layout
from drivers.later.index import (HOSTS_SCHEMA, INDEX_SCHEMA, PartitionedWriter, host_columns,
                                 layer_dirs, rows_table, rows_to_parquet, write_schema)
from drivers.later.oversize import over_affected_max
from drivers.runtime.part_files import read_lines, side_args, write_lines
from jobs.index_rows import MRIndexRows
from jobs.lib import counters as C, records as R

log = logging.getLogger('mrcrawl')


def rows_side(c):
    return c.path(layout.INDEX_ROWS_SIDE)


def folds_side(c):
    return c.path(layout.INDEX_FOLDS)


def keep(c):
    """A later build starts: the last build's index/ and hosts/ kept (both, or neither)."""
    done(c)
    if c.fs.exists(c.path(layout.INDEX)) and c.fs.exists(c.path(layout.HOSTS)):
        for name in (layout.INDEX, layout.HOSTS):
            c.fs.rename(c.path(name), c.path(layout.old(name)))


def done(c):
    for path in (c.path(layout.OLD_INDEX), c.path(layout.OLD_HOSTS), rows_side(c), folds_side(c)):
        c.fs.rm(path)


def rows_args(c):
    """MRCurrent's --rows-dir, when the last build's index is kept."""
    return side_args(c, c.path(layout.OLD_INDEX), '--rows-dir', rows_side(c))


def write_folds(c, affected_urls, dropped, made, kept):
    """tmp/index_folds: {url, duplicate_of} of every URL whose fold may have changed:
    the affected set's and the members of the groups the affected merge dropped or made.
    *dropped*, *made*, *kept*: (leader, duplicates) of the last build's groups it dropped,
    of those it made and of those it kept. duplicate_of is the smallest leader naming
    the URL, as MRIndexRows takes it."""
    urls = set(affected_urls)
    for _, dups in dropped + made:
        urls.update(dups)
    leader = {}
    for url, dups in made + kept:
        for dup in urls.intersection(dups):
            leader[dup] = min(leader.get(dup, url), url)
    write_lines(c, folds_side(c), [orjson.dumps({'url': u, 'duplicate_of': leader.get(u)})
                                   for u in sorted(urls)])


def why_full(c):
    """Why the index must be made in full, or None."""
    if not all(c.fs.exists(p) for p in (c.path(layout.OLD_INDEX), c.path(layout.OLD_HOSTS),
                                        rows_side(c))):
        return 'the last build left no index, or MRCurrent made no rows'
    if not c.fs.exists(folds_side(c)):
        return 'the merge was made in full'
    if any(n.isdigit() for n in c.fs.listdir(c.path(layout.WARC_INDEX))):
        return 'MRWarc archived a layer'
    return over_affected_max(c, c.path(layout.OLD_INDEX), layout.INDEX)


def read_index(c, root):
    """The index dataset at *root* as one table (INDEX_SCHEMA + layer), or None when a
    file has another schema."""
    tables = []
    for layer, folder in layer_dirs(c.fs, root):
        for name in c.fs.listdir(folder):
            if not name.endswith('.parquet'):
                continue
            with c.fs.open_read_binary(c.fs.join(folder, name)) as f:
                t = pq.ParquetFile(f).read()
            if not t.schema.equals(INDEX_SCHEMA):
                return None
            tables.append(t.append_column('layer', pa.array([layer] * t.num_rows,
                                                            pa.int64())))
    return pa.concat_tables(tables) if tables else None


def refold(table, folds):
    """*table* with duplicate_of set from *folds* (URL -> leader or None) on its rows of
    those URLs: the leader on a fetched row, null on any other (MRIndexRows' rule)."""
    if not folds:
        return table
    at = pc.indices_nonzero(pc.is_in(table['url'], value_set=pa.array(
        sorted(folds), pa.string()))).to_pylist()
    if not at:
        return table
    values = table['duplicate_of'].to_pylist()
    urls, statuses = table['url'], table['status']
    for i in at:
        values[i] = folds[urls[i].as_py()] if statuses[i].as_py() == R.FETCH_FETCHED else None
    column = table.schema.get_field_index('duplicate_of')
    return table.set_column(column, 'duplicate_of', pa.array(values, pa.string()))


def host_totals(table):
    """The host_layer records (as MRIndexRows writes them) of the index rows *table*."""
    fetched = pc.equal(table['status'], R.FETCH_FETCHED)
    t = pa.table({
        'layer': table['layer'], 'host': table['host'],
        'status': pc.fill_null(table['status'], 'unknown'), 'reason': table['reason'],
        'elapsed': pc.fill_null(pc.cast(table['elapsed'], pa.float64()), 0.0),
        'bytes': pc.if_else(pc.fill_null(fetched, False),
                            pc.fill_null(table['length'], 0), 0)})
    totals = {}
    for g in t.group_by(['layer', 'host']).aggregate([
            ('elapsed', 'sum'), ('bytes', 'sum'), ('status', 'count')]).to_pylist():
        totals[g['layer'], g['host']] = {
            'kind': 'host_layer', 'layer': g['layer'], 'host': g['host'],
            'urls': g['status_count'], 'elapsed': round(g['elapsed_sum'], 3),
            'bytes': g['bytes_sum'], 'statuses': {}, 'reasons': {}}
    for g in t.group_by(['layer', 'host', 'status']).aggregate(
            [('bytes', 'count')]).to_pylist():
        totals[g['layer'], g['host']]['statuses'][g['status']] = g['bytes_count']
    given = t.filter(pc.fill_null(pc.not_equal(t['reason'], ''), False))
    for g in given.group_by(['layer', 'host', 'reason']).aggregate(
            [('bytes', 'count')]).to_pylist():
        totals[g['layer'], g['host']]['reasons'][g['reason']] = g['bytes_count']
    return [totals[k] for k in sorted(totals, key=lambda k: (k[0], k[1] or ''))]


def unlike_current(c, table):
    """Why the spliced *table* cannot be this build's index, or None: it must hold one
    row per URL, as many as MRCurrent wrote (a last index that does not match the
    fetches MRCurrent took as old leaves a URL twice or not at all)."""
    urls = pc.count_distinct(table['url']).as_py()
    if urls != table.num_rows:
        return '%d row(s) for %d URL(s)' % (table.num_rows, urls)
    current = c.report.load_step('current')['counters'].get(C.CURRENT, {})
    if current.get(C.CURRENT_PAGES, urls) != urls:
        return '%d row(s) for the %d URL(s) of current/' % (urls, current[C.CURRENT_PAGES])
    return None


def splice(c, old, made):
    """The last index *old* less the rows of the URLs of *made*, plus *made*, both
    refolded (tmp/index_folds)."""
    folds = {r['url']: r['duplicate_of'] for r in map(
        orjson.loads, read_lines(c, folds_side(c)))}
    mine = pc.is_in(old['url'], value_set=made['url'])
    # A made row's URL outside the folds keeps its fold: the one on its old rows.
    prior = {}
    for r in old.filter(mine).select(['url', 'duplicate_of']).to_pylist():
        if r['url'] not in folds:
            prior[r['url']] = prior.get(r['url']) or r['duplicate_of']
    return pa.concat_tables([refold(old.filter(pc.invert(mine)), folds),
                             refold(made, dict(prior, **folds))])


def build(c, tmp_index, tmp_hosts):
    """index/ and hosts/ of this build into *tmp_index* and *tmp_hosts* from the last
    build's: the step's counts, or None when they must be made in full (why told)."""
    start = time.monotonic()
    why = why_full(c)
    old = None if why else read_index(c, c.path(layout.OLD_INDEX))
    if not why and old is None:
        why = 'the last index has another schema'
    if not why:
        made = rows_table(read_lines(c, rows_side(c)))
        table = splice(c, old, made)
        why = unlike_current(c, table)
    if why:
        c.progress('index: %s: indexing every URL' % why)
        done(c)
        return None
    counts = {'rows': table.num_rows, 'hosts': 0, 'row_groups': 0, 'bad_lines': 0}
    index = PartitionedWriter(c.fs, tmp_index, table.schema.remove(
        table.schema.get_field_index('layer')), counts)
    index.start('part-00000')
    c.fs.mkdirs(tmp_index)
    layers = table['layer']
    for layer in sorted(pc.unique(layers).to_pylist()):
        index.add_table(layer, table.filter(pc.equal(layers, layer)).sort_by('url')
                        .drop_columns(['layer']))
    index.close()
    write_schema(c.fs, tmp_index)
    hosts = PartitionedWriter(c.fs, tmp_hosts, HOSTS_SCHEMA, counts)
    hosts.start('part-00000')
    c.fs.mkdirs(tmp_hosts)
    for rec in host_totals(table):
        hosts.add(rec['layer'], host_columns(rec))
        counts['hosts'] += 1
    hosts.close()
    warc = table['warc_filename']
    counts.update(files=index.files, counters={
        C.INDEX_ROWS: table.num_rows, C.INDEX_HOST_LAYERS: counts['hosts'],
        C.INDEX_DUPLICATE_ROWS: table.num_rows - table['duplicate_of'].null_count,
        C.INDEX_WARC_ROWS: pc.sum(pc.fill_null(pc.not_equal(warc, ''), False)).as_py() or 0,
        C.INDEX_ROWS_MADE: made.num_rows, C.INDEX_ROWS_KEPT: table.num_rows - made.num_rows},
        seconds=round(time.monotonic() - start, 3))
    done(c)
    return counts


def index_inputs(crawl, outs):
    """MRIndexRows' inputs: *outs*, the folds (merge_map/, else merged/) and every
    layer's warc_index/ (from a crawl's second cycle on, *outs* is current/: MRCurrent)."""
    fs = crawl.fs
    warc = [crawl.path(layout.WARC_INDEX, n) for n in fs.listdir(crawl.path(layout.WARC_INDEX))
            if n.isdigit()]
    folds = crawl.path(layout.MERGE_MAP)
    if not fs.exists(folds):
        folds = crawl.path(layout.MERGED)
    return list(outs) + [folds] + warc


def build_index(crawl, outs):
    """Run MRIndexRows over *outs* + merge_map/ (merged/ when a crawl's merge left no
    merge_map/: the folds are the same, merged/ is the page text besides), write OUT/index
    and OUT/hosts. Skipped when OUT/index exists (a resumed crawl). Returns the step dict
    saved as steps/index.json."""
    fs = crawl.fs
    final, hosts_final = crawl.path(layout.INDEX), crawl.path(layout.HOSTS)
    if fs.exists(final):
        return crawl.report.load_step('index')
    rows_dir = crawl.path(layout.INDEX_ROWS)
    tmp_index, tmp_hosts = crawl.path(layout.INDEX_TMP), crawl.path(layout.HOSTS_TMP)
    fs.rm(tmp_index)
    fs.rm(tmp_hosts)
    counts = build(crawl, tmp_index, tmp_hosts)
    if counts:
        # Its rows came from MRCurrent: the last full build's job step is not this one's.
        fs.rm(crawl.report.step_path('indexrows'))
        job, seconds = counts['counters'], counts['seconds']
    else:
        rows_step = crawl.run_step('indexrows', MRIndexRows, index_inputs(crawl, outs),
                                   rows_dir)
        start = time.monotonic()
        counts = rows_to_parquet(fs, rows_dir, tmp_index, tmp_hosts)
        job = rows_step['counters'].get(C.INDEX, {})
        seconds = rows_step['seconds'] + time.monotonic() - start
    step = {'counters': {C.INDEX: job}, 'rows': counts['rows'], 'hosts': counts['hosts'],
            'files': counts['files'], 'row_groups': counts['row_groups'],
            'bad_lines': counts['bad_lines'], 'seconds': round(seconds, 3)}
    if counts['bad_lines']:
        log.warning('index: %d line(s) of %s were not index records', counts['bad_lines'],
                    rows_dir)
    crawl.report.save_step('index', step)
    # hosts/ first: index/ existing is what marks the whole step done.
    fs.rm(hosts_final)
    fs.rename(tmp_hosts, hosts_final)
    fs.rename(tmp_index, final)
    fs.rm(rows_dir)
    return step
