"""A later build's in-link anchors for the URLs its change affects only (MergeDriver).

anchors/ (MRAnchors) holds one record per member URL of a merged page's group with
in-link anchors. A member's record is made of its leader (merge_map/) and the anchors
of the links to every URL that ends at it (itself, and the URLs that redirect to it).
From one build to the next that record changes only when:

- its group changes: the member is a final URL of the affected merge's pages
  (drivers/later/affected.py writes them, tmp/merge_affected);
- a link to it, or to a URL that ends at it, appears or goes: a changed page's link
  (with its anchor text) that only its old or only its new fetch has (MRCurrent
  ``--links-dir`` names their targets; every link's when the two ended at other
  URLs, each then the source of its anchors), or the page's own final
  URL moves (the changed page's old and new final URLs, also named there);
- a URL starts or stops ending at it: that URL's fetch changed (the same rows).

So the driver takes those URLs as members, adds, round by round, every URL that ends
at a member (MRCurrent's rows name each redirect of the crawl) and the URL each of
them ends at, and runs MRAnchors with ``--only``: it inverts the links to those URLs
from every page and writes their members' records, each the one a whole run would
write. The last build's records of the other members are kept:

    prev_anchors/ less the members' records + MRAnchors --only -> anchors/

The URLs a delta build's join takes then (tmp/join_only, MRMergeJoin --only): the
affected merge's, every changed URL and where it ends, and the leaders of every record
dropped or made. Any other page has the same fetch, folds and anchors, so its merged
record and signature stand: the driver keeps its signature (:func:`splice_signatures`).

It is made in full instead in a crawl's first build, after a full merge (a reparse,
changed merge settings...), when merge.internal_anchors changed, and when anchors/
is over merge.affected_max_bytes (the driver reads every record's member).
"""
import json
import time

import orjson

from drivers.folder import layout
from drivers.later.oversize import over_affected_max
from drivers.runtime.part_files import part_names, read_lines, side_args, write_lines
from jobs.anchors import MRAnchors
from jobs.lib import BUFFER_BYTES, counters as C, records as R

#: What the last build's anchors were made with, beside them (anchors/ is MRMergeJoin's
#: input, so this sits in the crawl folder).
META = 'anchors_meta.json'
PREFIX = R.ANCHORS_START
TAIL = b'","url":'


def links_side(c):
    return c.path(layout.LINKS_SIDE)


def merged_side(c):
    """The final URLs of the affected merge's pages (drivers/later/affected.py)."""
    return c.path(layout.MERGE_AFFECTED)


def join_only(c):
    """The URLs a delta build's join must join again (MRMergeJoin --only), written
    with anchors/ when it followed the change (:func:`write_urls`)."""
    return c.fs.join(c.path(layout.JOIN_ONLY), 'part-00000')


def write_urls(c, folder, urls):
    """*urls* as JSON lines into *folder*/part-00000, made afresh."""
    write_lines(c, folder, [orjson.dumps(u) for u in sorted(urls)])


def settings(c):
    return {'internal_anchors': c.conf['merge']['internal_anchors']}


def keep(c):
    """A later build starts: the last build's anchors/ kept as prev_anchors/."""
    done(c)
    c.fs.rm(c.path(layout.JOIN_ONLY))
    if c.fs.exists(c.path(layout.ANCHORS)) and c.fs.exists(c.path(META)):
        c.fs.rename(c.path(layout.ANCHORS), c.path(layout.OLD_ANCHORS))


def done(c):
    for path in (c.path(layout.OLD_ANCHORS), links_side(c), merged_side(c)):
        c.fs.rm(path)


def links_args(c):
    """MRCurrent's --links-dir, when the last build's anchors are kept."""
    return side_args(c, c.path(layout.OLD_ANCHORS), '--links-dir', links_side(c))


def write_merged(c, finals):
    write_urls(c, merged_side(c), finals)


def ready(c):
    """Is there a last build's anchors/ to start from (prev_anchors/, MRCurrent's rows)?"""
    return all(c.fs.exists(p) for p in (c.path(layout.OLD_ANCHORS), links_side(c)))


def commit_full(c):
    """After a whole MRAnchors: what its records were made with."""
    c.fs.write_text(c.path(META), json.dumps(settings(c)))


def why_full(c):
    """Why anchors/ must be made in full although :func:`ready`, or None."""
    if not c.fs.exists(merged_side(c)):
        return 'the merge was made in full'
    if json.loads(c.fs.read_text(c.path(META))) != settings(c):
        return 'merge.internal_anchors changed since the last build'
    return over_affected_max(c, c.path(layout.OLD_ANCHORS), layout.ANCHORS)


def closure(merged, rows):
    """(targets, members): the URLs whose links MRAnchors inverts and those whose
    records it writes. *merged*: final URLs of the affected merge; *rows*: MRCurrent's
    --links-dir rows."""
    ends = {}                                   # URL -> the URL its fetch ended at
    members = set(merged)
    for r in rows:
        if 'final' in r:
            ends[r['url']] = r['final']
        else:
            members.add(r['url'])
            members.update(r['finals'])
            members.update(r['targets'])
    into = {}                                   # final URL -> URLs that end at it
    for url, final in ends.items():
        into.setdefault(final, []).append(url)
    targets, todo = set(), list(members)
    while todo:
        member = todo.pop()
        for url in [member] + into.get(member, []):
            if url in targets:
                continue
            targets.add(url)
            final = ends.get(url, url)
            if final not in members:
                members.add(final)
                todo.append(final)
    return targets, members


def splice_signatures(c, previous, side):
    """A join of the --only URLs (*side*: their signature records) completed with the
    last build's signatures/ (*previous*) of every other URL, whose page the join did
    not touch: (the URLs joined, the records kept, how many of them name a merged
    page)."""
    joined = {orjson.loads(line) for line in read_lines(c, c.path(layout.JOIN_ONLY))}
    kept = pages = 0
    c.fs.mkdirs(side)
    with c.fs.open_write_binary(c.fs.join(side, 'part-kept'), BUFFER_BYTES) as f:
        for name in part_names(c, previous):
            for line in c.fs.iter_lines(c.fs.join(previous, name)):
                if not line.strip():
                    continue
                keys = R.line_keys(line)        # read from the line's bytes when it can
                if keys is None:
                    rec = orjson.loads(line)
                    url, page = rec['url'], rec['kind'] == 'signature'
                else:
                    url, page = keys.pop(), line.startswith(R.SIGNATURE_START)
                if url not in joined:
                    f.write(line if line.endswith(b'\n') else line + b'\n')
                    kept += 1
                    pages += page
    return len(joined), kept, pages


def complete_join(c, previous, side, join):
    """After a join of the --only URLs: :func:`splice_signatures`, counted in the *join*
    step (when it ran now, else None): its seconds, and the pages kept as the join's
    unread ones."""
    start = time.monotonic()
    joined, kept, pages = splice_signatures(c, previous, side)
    if join is None:
        return
    join['seconds'] = round(join['seconds'] + time.monotonic() - start, 3)
    n = join['counters'].setdefault(C.MERGE_JOIN, {})
    n[C.JOIN_REUSED] = n.get(C.JOIN_REUSED, 0) + pages
    n[C.JOIN_AFFECTED] = joined
    n[C.JOIN_SIGNATURES_KEPT] = kept
    d = join['counters'].setdefault(C.DELTA, {})
    d[C.DELTA_UNCHANGED] = d.get(C.DELTA_UNCHANGED, 0) + pages
    c.progress('merge: joined %d URL(s) the change affects, %d signature(s) kept' % (
        joined, kept))


def member_of(line):
    """The JSON-escaped member URL of an anchors/ line, as bytes, or None for a record
    without one (an earlier version's)."""
    if line.startswith(PREFIX):
        end = line.find(TAIL, len(PREFIX))
        if end > 0 and b'\\' not in line[len(PREFIX):end]:
            return line[len(PREFIX):end]
    member = orjson.loads(line).get('member')
    return None if member is None else orjson.dumps(member)[1:-1]


def splice(c, into, members, leaders):
    """prev_anchors/ less the records of *members*, plus tmp/anchors_new/, into *into*:
    the records kept, or None if one is of an earlier version (no member). The leaders
    of the records dropped and added go into *leaders*."""
    escaped = {orjson.dumps(m)[1:-1] for m in members}
    kept, member = 0, b''
    c.fs.rm(into)
    c.fs.mkdirs(into)
    names = part_names(c, c.path(layout.OLD_ANCHORS)) or ['part-00000']
    for i, name in enumerate(names):
        with c.fs.open_write_binary(c.fs.join(into, name), BUFFER_BYTES) as f:
            path = c.fs.join(c.path(layout.OLD_ANCHORS), name)
            for line in c.fs.iter_lines(path) if c.fs.exists(path) else ():
                if not line.strip():
                    continue
                member = member_of(line)
                if member is None:
                    break
                if member not in escaped:
                    f.write(line if line.endswith(b'\n') else line + b'\n')
                    kept += 1
                else:
                    leaders.add(orjson.loads(line)['url'])
            if member is not None and i == len(names) - 1:
                for line in read_lines(c, c.path(layout.ANCHORS_NEW)):
                    f.write(line + b'\n')
                    leaders.add(orjson.loads(line)['url'])
        if member is None:
            c.fs.rm(into)
            return None
    return kept


def anchors(c, summaries):
    """anchors/ for this build from the affected members only, and the report's
    anchors step; None when it must be made in full (the reason told)."""
    start = time.monotonic()
    why = why_full(c)
    if why:
        c.progress('anchors: %s: inverting every link' % why)
        done(c)
        return None
    merged = [orjson.loads(line) for line in read_lines(c, merged_side(c))]
    rows = [orjson.loads(line) for line in read_lines(c, links_side(c))]
    targets, members = closure(merged, rows)
    only = c.path(layout.ANCHORS_ONLY)
    part = c.fs.join(only, 'part-00000')
    write_lines(c, only, [orjson.dumps([what, url]) for what, urls in (
        ('target', targets), ('member', members)) for url in sorted(urls)])
    job = c.run_step('anchors-affected', MRAnchors,
                     list(summaries) + [c.path(layout.MERGE_MAP)],
                     c.path(layout.ANCHORS_NEW), ['--only', part])
    c.report.save_step('anchors-affected', dict(job, made_by='anchors'))
    # The join's URLs: the merge's, every changed URL and where it ends, and the leaders
    # of every anchors record made again, old and new (:func:`splice`).
    leaders = set(merged)
    for r in rows:
        if 'finals' in r:
            leaders.add(r['url'])
            leaders.update(r['finals'])
    into = c.path(layout.ANCHORS_SPLICED)
    kept = splice(c, into, members, leaders)
    if kept is None:
        c.progress('anchors: a record of an earlier version: inverting every link')
        done(c)
        return None
    n = dict(job['counters'].get(C.MERGE, {}))
    n.update({C.ANCHORS_AFFECTED: len(members), C.ANCHORS_KEPT: kept})
    step = {'counters': {C.MERGE: n}, 'seconds': round(time.monotonic() - start, 3),
            'runner': job.get('runner')}
    c.report.save_step('anchors', step)
    write_urls(c, c.path(layout.JOIN_ONLY), leaders)
    c.fs.rename(into, c.path(layout.ANCHORS))
    c.fs.rm(c.path(layout.ANCHORS_NEW))
    c.fs.rm(only)
    done(c)
    c.progress('anchors: %d URL(s) affected by the change, %d record(s) kept' % (
        len(members), kept))
    return step
