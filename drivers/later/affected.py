"""A later build's merge of its affected set only (MergeDriver, jobs.lib.affected).

A full MRMerge writes each page's key row beside its output (``--keys-dir``):
OUT/merge_keys/, with _meta.json (the merge.* settings the keys were made with and
the duplicate totals). When a later build starts (not a reparse) the last build's
merge_map/ and merge_keys/ are kept as prev_merge_map/ and prev_merge_keys/, and
MRCurrent writes the key row of each URL whose current fetch changed
(``--changed-dir``). Then:

    prev_merge_keys/ + changed rows -> the affected set (Closure, below)
    its rows                        -> MRMerge -> their groups' merge_map records
    prev_merge_map/ less the set's old groups + those records -> merge_map/
    prev_merge_keys/ less the changed URLs' rows + their new rows -> merge_keys/

merge_keys/ is written before merge_map/, which a resumed run takes as done. The
merge is made in full instead when the keys were made with other settings, a
changed page's SimHash needs its text, a band bucket of the set would be cut
(merge.max_bucket_pages), merge_keys/ is over merge.affected_max_bytes, or a kept
group names a URL of the set.

The driver reads the key rows (about 550 bytes a page, by Arrow's JSON reader) and
merge_map/; the pages' records are not read.
"""
import json
import time

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from drivers.folder import layout
from drivers.later import affected_anchors, affected_index
from drivers.later.oversize import over_affected_max
from drivers.runtime.part_files import read_lines, side_args, write_lines
from jobs.lib import affected as A, counters as C, merging as M, simhash
from jobs.merge import MRMerge

KEYS, META = layout.MERGE_KEYS, '_meta.json'

ROW_SCHEMA = pa.schema([('url', pa.string()), ('keys', pa.list_(pa.string())),
                        ('simhash', pa.string())])     # and rec, read by orjson


def keys_side(c):
    return c.path(layout.KEYS_SIDE)


def changed_side(c):
    return c.path(layout.CHANGED_SIDE)


def keep(c):
    """A later build starts: the last build's merge_map/ and merge_keys/ kept for the
    affected merge (both, or neither)."""
    for name in (layout.MERGE_MAP, KEYS):
        c.fs.rm(c.path(layout.old(name)))
    if c.fs.exists(c.path(layout.MERGE_MAP)) and c.fs.exists(c.fs.join(c.path(KEYS), META)):
        for name in (layout.MERGE_MAP, KEYS):
            c.fs.rename(c.path(name), c.path(layout.old(name)))


def ready(c):
    """Can this build merge its affected set only? (prev_* kept, MRCurrent's rows.)"""
    return all(c.fs.exists(p) for p in (c.path(layout.OLD_MERGE_MAP),
                                        c.path(layout.OLD_MERGE_KEYS), changed_side(c)))


def changed_args(c):
    """MRCurrent's --changed-dir, when the last build's keys are kept."""
    return side_args(c, c.path(layout.OLD_MERGE_KEYS), '--changed-dir', changed_side(c))


def meta(c, totals):
    return json.dumps({'settings': A.key_settings(c.conf['merge']), 'totals': totals},
                      sort_keys=True)


def commit_full(c, step):
    """After a full MRMerge: its key rows (tmp/keys_side) become merge_keys/."""
    side = keys_side(c)
    if c.fs.exists(c.path(KEYS)) or not c.fs.exists(side):
        return
    n = step['counters'].get(C.MERGE, {})
    c.fs.write_text(c.fs.join(side, META), meta(c, {
        k: n.get(k, 0) for k in (C.MERGED_PAGES, C.EXACT_DUPLICATES, C.NEAR_DUPLICATES,
                                 C.CANONICAL_DUPLICATES)}))
    c.fs.rename(side, c.path(KEYS))


def done(c):
    for name in (layout.MERGE_MAP, KEYS):
        c.fs.rm(c.path(layout.old(name)))
    c.fs.rm(changed_side(c))


def merge(c):
    """The affected set merged and spliced in: merge_map/ and merge_keys/, and the
    report's merge step; None when the merge must be made in full (the reason told)."""
    start = time.monotonic()
    why, plan = plan_merge(c)
    if why:
        c.progress('merge: %s: merging every page' % why)
        done(c)
        return None
    rows, affected_urls, old_recs, new_recs, totals = plan
    into = c.path(layout.AFFECTED_IN)
    write_lines(c, c.fs.join(into, 'in'), [orjson.dumps(r) for r in new_recs])
    job = c.run_step('merge-affected', MRMerge, [c.fs.join(into, 'in')],
                     c.fs.join(into, 'map'))
    # Its seconds are the merge step's, which also holds the closure and the splice.
    c.report.save_step('merge-affected', dict(job, made_by='merge'))
    made = read_lines(c, c.fs.join(into, 'map'))
    finals = {M.final_url(r) for r in old_recs + new_recs if not r.get('resource_of')}
    kept, counts = [], {C.MERGED_PAGES: 0, C.NEAR_DUPLICATES: 0, C.CANONICAL_DUPLICATES: 0}

    def count(rec):
        counts[C.MERGED_PAGES] += 1
        counts[C.NEAR_DUPLICATES] += len(rec['near_duplicates'])
        counts[C.CANONICAL_DUPLICATES] += len(rec['canonical_duplicates'])
    folds = ([], [])              # (url, duplicates) of the groups dropped, and kept
    for line in read_lines(c, c.path(layout.OLD_MERGE_MAP)):
        rec = orjson.loads(line)
        if rec['url'] in finals:
            folds[0].append((rec['url'], rec.get('duplicates') or ()))
            continue
        if affected_urls.intersection(rec.get('duplicates') or ()):
            c.progress('merge: a kept group names an affected URL: merging every page')
            done(c)
            return None
        kept.append(line)
        count(rec)
        if rec.get('duplicates'):
            folds[1].append((rec['url'], rec['duplicates']))
    made_recs = [orjson.loads(line) for line in made]
    for rec in made_recs:
        count(rec)
    counts[C.EXACT_DUPLICATES] = totals[C.EXACT_DUPLICATES] - A.exact_duplicates(
        old_recs) + A.exact_duplicates(new_recs)
    write_lines(c, c.path(layout.MERGE_KEYS_TMP), rows)
    c.fs.write_text(c.fs.join(c.path(layout.MERGE_KEYS_TMP), META), meta(c, counts))
    c.fs.rm(c.path(KEYS))
    c.fs.rename(c.path(layout.MERGE_KEYS_TMP), c.path(KEYS))
    step = {'counters': {C.MERGE: dict(counts, **{C.MERGE_AFFECTED: len(affected_urls),
                                                  C.MERGE_AFFECTED_GROUPS: len(made)})},
            'seconds': round(time.monotonic() - start, 3), 'runner': job.get('runner')}
    # What the anchors follow (drivers/later/affected_anchors.py), with the step: before merge_map/,
    # which marks the step done.
    affected_anchors.write_merged(c, {M.final_url(r) for r in old_recs + new_recs}
                                  | affected_urls)
    affected_index.write_folds(c, affected_urls, folds[0], [
        (r['url'], r.get('duplicates') or ()) for r in made_recs], folds[1])
    c.report.save_step('merge', step)
    write_lines(c, c.path(layout.MERGE_MAP_TMP), kept + made)
    c.fs.rename(c.path(layout.MERGE_MAP_TMP), c.path(layout.MERGE_MAP))
    c.fs.rm(into)
    done(c)
    c.progress('merge: %d URL(s) affected by the change, %d group(s) merged again, '
               '%d kept' % (len(affected_urls), len(made), len(kept)))
    return step


def plan_merge(c):
    """(why the merge must be made in full, or None; else (the new key rows as lines,
    the affected URLs, the cut records of their old rows and of their new rows, the
    last build's totals))."""
    kept_meta = json.loads(c.fs.read_text(c.fs.join(c.path(layout.OLD_MERGE_KEYS), META)))
    if kept_meta['settings'] != A.key_settings(c.conf['merge']):
        return 'merge settings changed since the last build', None
    over = over_affected_max(c, c.path(layout.OLD_MERGE_KEYS), layout.MERGE_KEYS)
    if over:
        return over, None
    changed_lines = read_lines(c, changed_side(c))
    changed = [orjson.loads(line) for line in changed_lines]
    if any(r.get('stale') for r in changed):
        return 'a changed page has no SimHash of this version', None
    old_lines = read_lines(c, c.path(layout.OLD_MERGE_KEYS))
    old = read_rows(b'\n'.join(old_lines))
    new_lines = [line for line, r in zip(changed_lines, changed) if r['rec'] is not None]
    new = read_rows(b'\n'.join(new_lines))
    m = c.conf['merge']
    closure = Closure(old, new, {r['url'] for r in changed}, m['max_hamming_distance'],
                        m['max_bucket_pages'])
    if closure.overflow:
        return 'band bucket %s holds more than merge.max_bucket_pages pages' % (
            closure.overflow), None
    every = old_lines + new_lines
    live = closure.live_rows()
    mine = set(closure.rows_of(closure.urls))
    old_recs = [orjson.loads(every[i])['rec'] for i in sorted(mine) if i < closure.n_old]
    new_recs = [orjson.loads(every[i])['rec'] for i in live if i in mine]
    return None, ([every[i] for i in live], closure.urls, old_recs, new_recs,
                  kept_meta['totals'])


def read_rows(data):
    """Key rows (JSON lines, bytes) -> an Arrow table of ROW_SCHEMA."""
    if not data.strip():
        return ROW_SCHEMA.empty_table()
    return pajson.read_json(pa.BufferReader(data), parse_options=pajson.ParseOptions(
        explicit_schema=ROW_SCHEMA, unexpected_field_behavior='ignore'))


class Closure:
    """The affected set of a refresh: :attr:`urls` (raw URLs whose rows merge again),
    or :attr:`overflow` (a band bucket the merge of the affected set would cut: merge
    in full)."""

    def __init__(self, old, new, changed, k, cap):
        """*old*: the last build's key rows (Arrow); *new*: the changed URLs' new rows
        (Arrow; a URL that is no longer a merged page has none); *changed*: every URL
        whose current fetch changed; *k*: merge.max_hamming_distance; *cap*:
        merge.max_bucket_pages."""
        both = pa.concat_tables([old, new])
        self.n_old, self.k = old.num_rows, k
        self.url = both['url'].to_pylist()
        self.sims = both['simhash'].to_pylist()
        self.url_array = both['url'].combine_chunks()
        keys = self.all_keys = both['keys'].combine_chunks()
        self.flat = pc.list_flatten(keys)
        self.parent = pc.list_parent_indices(keys)
        kept = pc.invert(pc.is_in(old['url'].combine_chunks(),
                                  value_set=pa.array(sorted(changed), pa.string())))
        self.live = pa.concat_arrays([kept, pa.array([True] * new.num_rows, pa.bool_())])
        self.urls = self._close(set(changed))
        self.overflow = self._overflow(cap)

    def rows_of(self, urls):
        mask = pc.is_in(self.url_array, value_set=pa.array(sorted(urls), pa.string()))
        return pc.indices_nonzero(mask).to_pylist()

    def _close(self, urls):
        """Add, round by round, the URLs tied to a row of the set, until none is."""
        done = set(urls)
        frontier = self.rows_of(urls)
        while frontier:
            asked = {}                    # key -> SimHashes of the rows asking (bands)
            for i in frontier:
                for key in self.all_keys[i].as_py():
                    asked.setdefault(key, []).append(self.sims[i])
            hit = pc.is_in(self.flat, value_set=pa.array(sorted(asked), pa.string()))
            found = set()
            for i, key in zip(pc.filter(self.parent, hit).to_pylist(),
                              pc.filter(self.flat, hit).to_pylist()):
                if self.url[i] in done or self.url[i] in found:
                    continue
                if key.startswith('b:') and not any(
                        simhash.distance(simhash.from_hex(self.sims[i]),
                                         simhash.from_hex(s)) <= self.k
                        for s in asked[key]):
                    continue
                found.add(self.url[i])
            done |= found
            frontier = self.rows_of(found) if found else []
        return done

    def _overflow(self, cap):
        """A band key of the set's live rows shared by more than *cap* live rows, else
        None."""
        mine = {key for i in self.rows_of(self.urls) if self.live[i].as_py()
                for key in self.all_keys[i].as_py() if key.startswith('b:')}
        if not mine:
            return None
        hit = pc.and_(pc.is_in(self.flat, value_set=pa.array(sorted(mine), pa.string())),
                      pc.take(self.live, self.parent))
        counts = pc.value_counts(pc.filter(self.flat, hit))
        for entry in counts.to_pylist():
            if entry['counts'] > cap:
                return entry['values']
        return None

    def live_rows(self):
        """Indices of the rows of the new build (the old rows of unchanged URLs, the
        changed URLs' new rows)."""
        return pc.indices_nonzero(self.live).to_pylist()
