"""MergeDriver: every layer merged into one page per URL and content (the design's
MergeDriver), after each cycle or reparse.

    current   meta/* (or out/*)        -> current/    (MRCurrent: each URL's current
                                                       fetch, without its text; from
                                                       the second cycle on, shuffling
                                                       what changed: affected_current)
    merge     meta/* or current/       -> merge_map/  (MRMerge: who folds into whom, on
                                                       summaries)
    anchors   meta/* or current/       -> anchors/    (MRAnchors: the anchor texts of the
              + merge_map/                             links to each page's group, Nutch's
                                                       invertlinks, under its leader)
    index     meta/* or current/       -> index/, hosts/  (MRIndexRows, then Parquet:
              + merge_map/                             drivers/later/index.py)
    mergejoin merge_map/, anchors/     -> merged/, xml/,  (MRMergeJoin: the page text joined
              + out/* (+ prev_signatures/)  signatures/,    once; its tasks write every
                                          delta/BUILD     output themselves: the merged
                                                          records and their documents,
                                                          each page's signature, what
                                                          changed since the last build)
    mergejoin merge_map/, anchors/    -> delta/BUILD,     (a delta build, MRMergeJoin
    (delta)   + the new layers' out/     signatures/      --incremental: only what
              prev_signatures/                            changed is joined; merged/ and
                                                          xml/ stay the base)
    delta     prev_signatures/ + merged/ -> delta/BUILD  (MRDelta, only when merged/
                                                       was joined in an earlier run)

Without meta/ (a crawl of an earlier version, a reparse), out/* stands in for it.

The final outputs of the whole crawl are made as one *build* ('001' after cycle 1,
'002-reparse1' after a reparse of cycle 2): in full, or as a delta over the last full
build (:meth:`MergeDriver.incremental`, docs/data-flow.md). OUT/outputs.json names the
build they describe and the deltas to apply over merged/ and xml/, so a run that finds
them behind brings them up to date.
"""
import json
import logging

from drivers.folder import layout
from drivers.later import affected, affected_anchors, affected_current, affected_index
from drivers.later.affected_index import build_index, index_inputs
from drivers.runtime import beside
from drivers.runtime.part_files import install_side
from jobs.anchors import MRAnchors
from jobs.delta import MRDelta
from jobs.index_rows import MRIndexRows
from jobs.lib import counters as C
from jobs.merge import MRMerge
from jobs.merge_join import MRMergeJoin

log = logging.getLogger('mrcrawl')

#: Final outputs, rebuilt for the whole crawl after each cycle or reparse.
FINAL_OUTPUTS = (layout.CURRENT, layout.MERGE_MAP, layout.MERGE_KEYS, layout.ANCHORS,
                 layout.MERGED, layout.XML, layout.SIGNATURES, layout.INDEX, layout.HOSTS)


def merge_step(*steps):
    """The report's merge: MRMerge's, MRAnchors' and MRMergeJoin's counters (by group)
    and seconds."""
    counters = {}
    for step in steps:
        for group, values in step['counters'].items():
            into = counters.setdefault(group, {})
            for name, n in values.items():
                into[name] = into.get(name, 0) + n
    return {'counters': counters, 'seconds': round(sum(s['seconds'] for s in steps), 3)}


class MergeDriver:
    def __init__(self, crawl):
        self.crawl = crawl

    def outputs(self):
        """OUT/outputs.json: which build the final outputs describe and how they are
        laid out (docs/data-flow.md): {build, mode ('full' or 'delta'), base (the build
        merged/ and xml/ hold), deltas (the builds whose delta/BUILD apply over them, in
        order), layers (the last layer they cover), store (1: signatures/ name where
        each merged record is), base_pages, changes (delta documents since the base)}.
        {} before the first build."""
        c = self.crawl
        path = c.path(layout.OUTPUTS)
        return json.loads(c.fs.read_text(path)) if c.fs.exists(path) else {}

    def record_outputs(self, **fields):
        c = self.crawl
        c.fs.write_text(c.path(layout.OUTPUTS), json.dumps(dict(self.outputs(), **fields),
                                                            sort_keys=True))

    def built(self):
        """The build the final outputs describe: '001' (cycle 1, or a folder from before
        builds were recorded), '002' (cycle 2), '002-reparse1' (its first reparse)."""
        done = self.outputs()
        if not done:
            return '001'
        return done.get('build') or '%03d' % done['cycle']

    def incremental(self, build):
        """Can *build* be made as a delta over the last one (only what changed joined,
        merged/ and xml/ kept as its base)? When the last build recorded where its
        merged records are, the build is a crawl cycle's (a reparse changes every page),
        and the deltas since the base are below merge.compact_ratio of its pages: past
        that, the build is made in full (a compaction), as when the ratio is 0."""
        c = self.crawl
        done, ratio = self.outputs(), c.conf['merge']['compact_ratio']
        return bool(ratio > 0 and done.get('store') == 1 and 'reparse' not in build and
                    done.get('base_pages') is not None and
                    done.get('changes', 0) < ratio * max(1, done['base_pages']) and
                    all(c.fs.exists(c.path(n)) for n in (layout.MERGED, layout.XML,
                                                          layout.SIGNATURES)))

    def start_build(self, build, layers):
        """Outputs of an earlier build are behind: signatures/ is kept as
        prev_signatures/ for the delta (merged/ as prev_merged/ when a build has no
        signatures/: a crawl of an earlier version), the rest removed to be rebuilt;
        merged/ and xml/ stay when the build is a delta over them (:meth:`incremental`).
        Returns the build's mode, 'full' or 'delta'."""
        c = self.crawl
        done = self.outputs()
        built = self.built()
        top = max([int(n) for n in layers] or [-1])
        if built == build and done:
            return done.get('mode', 'full')
        if not done:                      # the crawl's first build
            self.record_outputs(build=build, mode='full', base=build, deltas=[], layers=top)
            return 'full'
        mode = 'delta' if self.incremental(build) else 'full'
        c.progress('outputs of build %s are behind: %s' % (built, (
            'adding build %s as a delta over them' if mode == 'delta' else
            'rebuilding them as %s') % build))
        self.keep_current(build, done)
        if 'reparse' in build:      # a reparse changes pages without a newer fetch
            affected.done(c)
            affected_anchors.done(c)
            affected_index.done(c)
        else:
            affected.keep(c)
            affected_anchors.keep(c)
            affected_index.keep(c)
        if not self.previous():
            for name in (layout.SIGNATURES, layout.MERGED):
                if c.fs.exists(c.path(name)):
                    c.fs.rename(c.path(name), c.path(layout.old(name)))
                    break
        for name in FINAL_OUTPUTS:
            if mode == 'full' or name not in (layout.MERGED, layout.XML):
                c.fs.rm(c.path(name))
        current_since = done.get('layers') if c.fs.exists(c.path(layout.OLD_CURRENT)) else None
        if mode == 'delta':
            self.record_outputs(build=build, mode=mode, deltas=done.get('deltas', []) + [
                build], since=done['layers'], layers=top, changes_before=done['changes'],
                current_since=current_since)
        else:
            c.fs.write_text(c.path(layout.OUTPUTS), json.dumps(
                {'build': build, 'mode': mode, 'base': build, 'deltas': [], 'layers': top,
                 'since': done.get('layers'), 'current_since': current_since}))
        return mode

    def keep_current(self, build, done):
        """The last build's current/ kept as prev_current/ for this one's MRCurrent,
        which then reads it and the layers new since it (:meth:`summaries`); not for a
        reparse, whose page records are all new, nor when the last build recorded no
        top layer."""
        c = self.crawl
        c.fs.rm(c.path(layout.OLD_CURRENT))
        if 'reparse' not in build and done.get('layers') is not None and \
                c.fs.exists(c.path(layout.CURRENT)):
            c.fs.rename(c.path(layout.CURRENT), c.path(layout.OLD_CURRENT))

    def merge(self, cycle, build, draw=None):
        """out/* -> merged/ (and index/, hosts/) for *build*: (the report's merge step,
        the index step, what the merge read of the pages: the summaries MRDelta reads
        each URL's current fetch from, and *draw*'s value to come: a drivers.runtime.beside
        Beside or Done, or None). *draw*, report.html's charts, runs once index/ and
        hosts/ are written, in a child beside the join. So does the index, when it runs
        in the driver's process (:meth:`index_beside`). A delta build joins only the
        layers new since the last build (:meth:`merge_delta`)."""
        c = self.crawl
        layers = sorted(name for name in c.fs.listdir(c.path(layout.PAGES)) if name.isdigit())
        mode = self.start_build(build, layers)
        sources = [c.path(layout.PAGES, name) for name in layers]
        c.progress('merge: %d layer(s)' % len(sources))
        group, summaries = self.merge_group(cycle, self.meta_sources(layers), sources,
                                            mode == 'full')
        side = self.index_beside(summaries) and beside.start(
            lambda: (build_index(c, summaries), draw and draw()), 'mrcrawl-index')
        if not side:
            index, drawn = self.index_here(summaries, draw)
        try:
            group = merge_step(group, self.anchors(summaries))
            if mode == 'delta':
                since = self.outputs()['since']
                new = [c.path(layout.PAGES, n) for n in layers if int(n) > since]
                join = self.merge_delta(new, sources, group, build)
            else:
                join = self.merge_join(sources, group, build)
        except BaseException:
            beside.cancel([side] if side else [drawn])
            raise
        if side:
            try:
                index, pngs = side.result()
                drawn = beside.Done(pngs)
            except beside.Failed as e:
                log.warning('index beside the merge join: %s; building it here', e)
                index, drawn = self.index_here(summaries, draw)
        return join, index, summaries, drawn

    def index_here(self, summaries, draw):
        """The index built in this process, and *draw* started in a child beside what
        follows: (its step dict, a Beside or None)."""
        return (build_index(self.crawl, summaries),
                draw and beside.start(draw, 'mrcrawl-report-charts'))

    def index_beside(self, summaries):
        """Build the index in a child beside the join? When its job would run in the
        driver's process (inline, on the local runner): then the join and it each have a
        core. A job of the local runner's own tasks, or one on Hadoop, keeps its turn."""
        c = self.crawl
        return c.runner in ('local', 'inline') and not c.fs.exists(c.path(layout.INDEX)) and \
            c.runner_for(MRIndexRows, index_inputs(c, summaries)) == 'inline'

    def meta_sources(self, layers):
        """meta/L for every one of *layers*, when the fetch wrote each whole
        (CrawlerDriver.meta_whole): what merge and index read of the pages, without their
        text, a twentieth of the bytes. Else None (an older crawl, a separate parse job,
        a reparse)."""
        metas = [self.crawl.crawler.meta_whole(name) for name in layers]
        return metas if metas and all(metas) else None

    def summaries(self, cycle, inputs, again=False):
        """What MRMerge and the index read of the pages (*inputs*: meta/* or out/*): in
        the first cycle the inputs themselves (each URL fetched once); from the second
        on, each URL's current fetch (MRCurrent -> current/), from meta/* when whole,
        so that no job copies every page's text; from the last build's current/ and the
        layers new since it when it was kept (prev_current/). *again*: current/ made
        afresh from every layer of *inputs*."""
        c = self.crawl
        if cycle == 1:
            return inputs
        prev, done = c.path(layout.OLD_CURRENT), self.outputs()
        since, last = done.get('current_since'), done.get('since')
        if again:
            c.fs.rm(c.path(layout.CURRENT))
            c.fs.rm(prev)
            c.fs.rm(affected_index.rows_side(c))
        elif since is not None and c.fs.exists(prev):
            inputs = [prev] + [i for i in inputs if int(i.rstrip('/').rsplit('/', 1)[1]) > since]
        step = affected_current.run(
            c, inputs, ['--since', str(last)] + ([] if again else affected.changed_args(c)
                                                 + affected_anchors.links_args(c)
                                                 + affected_index.rows_args(c))
            if last is not None else [], None if again else last,
            prev if inputs[:1] == [prev] else None)
        n = step['counters'].get(C.CURRENT, {})
        if last is not None:
            c.progress('current: %d of %d URL(s) have a fetch newer than the last build' % (
                n.get(C.CURRENT_NEW, 0), n.get(C.CURRENT_PAGES, 0)))
        c.fs.rm(prev)
        return [c.path(layout.CURRENT)]

    def merge_group(self, cycle, metas, sources, full=True):
        """MRMerge: the pages' summaries -> merge_map/: (its step dict, the summaries it
        read: :meth:`summaries` of *metas*, meta/* when whole, else of *sources*,
        out/*). SimHashes made with another merge.shingle_words are not in meta/: only
        the text gives them, and the merge is made again from out/*. The merge is two
        jobs, so that mrjob drops this one's intermediate files before MRMergeJoin
        shuffles whole pages."""
        c = self.crawl
        summaries = self.summaries(cycle, metas or sources)
        if full and c.fs.exists(c.path(layout.MERGED)) and \
                not c.fs.exists(c.path(layout.MERGE_MAP)):
            return c.report.load_step('merge'), summaries   # merged/ by a one-job merge
        if not c.fs.exists(c.path(layout.MERGE_MAP)) and affected.ready(c):
            step = affected.merge(c)
            if step:
                return step, summaries
        step = self.merge_all(summaries)
        stale = step['counters'].get(C.MERGE, {}).get(C.NEAR_TEXT_IN_OUT, 0)
        if stale and metas:
            c.progress('merge: %d page(s) need their text hashed again: merging from out/'
                       % stale)
            c.fs.rm(c.path(layout.MERGE_MAP))
            c.fs.rm(c.path(layout.MERGE_KEYS))
            summaries = self.summaries(cycle, sources, again=True)
            step = self.merge_all(summaries)
        return step, summaries

    def merge_all(self, summaries):
        """MRMerge over every page: merge_map/, and merge_keys/ for a later build's
        affected merge (drivers/later/affected.py)."""
        c = self.crawl
        if not c.fs.exists(c.path(layout.MERGE_MAP)):
            c.fs.rm(affected.keys_side(c))
        step = c.run_step('merge', MRMerge, summaries, c.path(layout.MERGE_MAP),
                          c.task_path_args('--keys-dir', affected.keys_side(c)))
        affected.commit_full(c, step)
        return step

    def anchors(self, summaries):
        """MRAnchors: the pages' links (*summaries*, what MRMerge read) + merge_map/ ->
        anchors/, each group's in-link anchors under its leader: its step dict."""
        c = self.crawl
        if c.fs.exists(c.path(layout.MERGED)) and not c.fs.exists(c.path(layout.MERGE_MAP)):
            return {'counters': {}, 'seconds': 0.0}     # merged/ by a one-job merge
        if not c.fs.exists(c.path(layout.ANCHORS)) and affected_anchors.ready(c):
            step = affected_anchors.anchors(c, summaries)
            if step:
                return step
        affected_anchors.done(c)
        step = c.run_step('anchors', MRAnchors, list(summaries) + [c.path(layout.MERGE_MAP)],
                          c.path(layout.ANCHORS))
        affected_anchors.commit_full(c)
        return step

    def previous(self):
        """The previous build's signatures/ (else its merged/, from an earlier version)
        while its delta is not written: prev_signatures/ or prev_merged/, else None."""
        for name in (layout.OLD_SIGNATURES, layout.OLD_MERGED):
            if self.crawl.fs.exists(self.crawl.path(name)):
                return self.crawl.path(name)
        return None

    def merge_join(self, sources, group, build):
        """MRMergeJoin: merge_map/ + pages -> merged/, and beside it xml/, signatures/
        and the delta since the previous build (delta/BUILD); one step dict for the
        report's merge: both jobs' counters (groups merge, merge_join), their seconds.
        The join's tasks write every output as side files (--merged-dir, --xml-dir,
        --signature-dir, --delta-dir: jobs/merge_join.py), so that each merged record's
        place is known and no job reads every merged page again: they move into place,
        merged/ last, once the join has succeeded (tmp/joined, its empty output, says
        so to a resumed run)."""
        c = self.crawl
        if c.fs.exists(c.path(layout.MERGED)):       # joined and moved in an earlier run
            return merge_step(group, c.report.load_step('mergejoin'))
        args = ['--build', build, '--store-name', layout.MERGED, '--pages-name',
                layout.store(build)]
        inputs = [c.path(layout.MERGE_MAP), c.path(layout.ANCHORS)] + sources
        sides = self.sides('merged', 'xml', 'signatures', 'delta', 'pages')
        previous = self.previous()
        delta = c.path(layout.DELTA, build)
        with_delta = bool(previous and not c.fs.exists(delta))
        for name, option in (('merged', '--merged-dir'), ('signatures', '--signature-dir'),
                             ('pages', '--pages-dir')):
            args += c.task_path_args(option, sides[name])
        args += c.html_to_xml.join_args(sides['xml'])
        if with_delta:
            args += c.task_path_args('--delta-dir', sides['delta'])
            inputs.append(previous)
        fresh, join = self.run_join(inputs, args, sides)
        moves = [('pages', c.path(layout.store(build))), ('signatures', c.path(layout.SIGNATURES))]
        if with_delta:
            moves.append(('delta', delta))
        if fresh:
            xml = join['counters'].pop(C.XML, {})    # the documents' counters: xml's
            changes = {'seconds': 0.0, 'made_by': 'mergejoin',
                       'counters': {C.DELTA: join['counters'].pop(C.DELTA, {})}}
            c.report.save_step('mergejoin', join)
            c.html_to_xml.joined(xml)
            if with_delta:
                c.report.save_step('delta-' + build, changes)
                self.delta_progress(changes)
        self.move_sides(sides, moves)
        c.html_to_xml.install(sides['xml'])
        self.move_sides(sides, [('merged', c.path(layout.MERGED))])     # last: the join is done
        for name in c.fs.listdir(c.path(layout.STORE)):
            if name != build:       # no signature names an earlier build's store now
                c.fs.rm(c.path(layout.STORE, name))
        if fresh:
            self.record_outputs(store=1, base_pages=join['counters'].get(
                C.MERGE_JOIN, {}).get(C.JOIN_MERGED, 0), changes=0)
        return merge_step(group, join)

    def merge_delta(self, new_sources, sources, group, build):
        """A delta build's join (MRMergeJoin --incremental): merge_map/, the previous
        build's signatures and the pages of the layers new since it (*new_sources*) ->
        delta/BUILD (records/ and xml/: what changed) and signatures/ for every page.
        merged/ and xml/ stay the base. A page whose merge_map record and fetch did not
        change is not read at all; one with new folds or anchors is read back from where
        its signature says its merged record is. If a page now leads from a fetch of
        which no merged record is stored, the build is made in full instead."""
        c = self.crawl
        delta = c.path(layout.DELTA, build)
        if c.fs.exists(delta) and c.fs.exists(c.path(layout.SIGNATURES)):
            return merge_step(group, c.report.load_step('mergejoin'))
        sides = self.sides('signatures', 'delta', 'pages')
        args = ['--build', build, '--incremental', '--store-name',
                layout.delta_part(build, layout.DELTA_RECORDS), '--pages-name',
                layout.store(build)] + \
            c.task_path_args('--crawl-root', c.out) + \
            c.task_path_args('--delta-dir', sides['delta']) + \
            c.task_path_args('--signature-dir', sides['signatures']) + \
            c.task_path_args('--pages-dir', sides['pages'])
        previous = self.previous()
        # Only the URLs the change affects, when the anchors followed it too.
        only = previous.endswith(layout.OLD_SIGNATURES) and \
            c.fs.exists(affected_anchors.join_only(c)) and affected_anchors.join_only(c)
        fresh, join = self.run_join([c.path(layout.MERGE_MAP), c.path(layout.ANCHORS), previous] +
                                    new_sources, args + (['--only', only] if only else []),
                                    sides)
        missing = join['counters'].get(C.MERGE_JOIN, {}).get(C.JOIN_NOT_STORED, 0)
        if missing:
            c.progress('merge: %d page(s) lead with a fetch whose merged record is not '
                       'stored: building the outputs in full' % missing)
            c.fs.rm(c.path(layout.JOINED))
            for name in (layout.MERGED, layout.XML):
                c.fs.rm(c.path(name))
            done = self.outputs()
            self.record_outputs(mode='full', base=build, deltas=[], layers=done['layers'])
            return self.merge_join(sources, group, build)
        if only:
            affected_anchors.complete_join(c, previous, sides['signatures'],
                                           join if fresh else None)
        if fresh:
            changes = {'seconds': 0.0, 'made_by': 'mergejoin',
                       'counters': {C.DELTA: join['counters'].pop(C.DELTA, {})}}
            c.report.save_step('mergejoin', join)
            c.report.save_step('delta-' + build, changes)
            self.delta_progress(changes)
        self.move_sides(sides, [('pages', c.path(layout.store(build))),
                                ('signatures', c.path(layout.SIGNATURES)), ('delta', delta)])
        n = c.report.load_step('delta-' + build)['counters'].get(C.DELTA, {})
        self.record_outputs(changes=self.outputs()['changes_before'] + sum(
            n.get(k, 0) for k in (C.DELTA_ADDED, C.DELTA_CHANGED, C.DELTA_DELETED)))
        return merge_step(group, join)

    def sides(self, *names):
        """The join's side folders (OUT/tmp/NAME_side), cleared unless the join that
        writes them is done (tmp/joined): a failed join's files go."""
        c = self.crawl
        sides = {name: c.path(layout.side(name)) for name in names}
        if not c.fs.exists(c.path(layout.JOINED)):
            for side in sides.values():
                c.fs.rm(side)
        return sides

    def run_join(self, inputs, args, sides):
        """MRMergeJoin, whose output (tmp/joined) is empty: it writes side files. (Run
        now, not in an earlier run; its step dict.)"""
        c = self.crawl
        joined = c.path(layout.JOINED)
        fresh = not c.fs.exists(joined)
        return fresh, c.run_step('mergejoin', MRMergeJoin, inputs, joined, args)

    def move_sides(self, sides, moves):
        """Each side folder into its place (one no task wrote: empty), in order; one
        already moved by an interrupted run is left."""
        c = self.crawl
        for name, final in moves:
            if name == 'delta' and not c.fs.exists(final):
                for sub in (layout.DELTA_RECORDS, layout.DELTA_XML):
                    c.fs.mkdirs(c.fs.join(sides[name], sub))
            install_side(c, sides[name], final)

    def delta(self, build, sources):
        """prev_signatures/ + merged/ -> delta/BUILD/records, when there is an earlier
        build to compare with and the join did not write its delta (it was done in an
        earlier run): the records' folder, else None."""
        c = self.crawl
        previous = self.previous()
        if not previous or c.fs.exists(c.path(layout.delta_part(build, layout.DELTA_XML))):
            return None
        records = c.path(layout.delta_part(build, layout.DELTA_RECORDS))
        step = c.run_step('delta-' + build, MRDelta, [previous, c.path(layout.MERGED)] + sources,
                          records, ['--build', build])
        self.delta_progress(step)
        return records

    def delta_progress(self, step):
        n = step['counters'].get(C.DELTA, {})
        self.crawl.progress('delta: %d added, %d changed, %d deleted' % (
            n.get(C.DELTA_ADDED, 0), n.get(C.DELTA_CHANGED, 0), n.get(C.DELTA_DELETED, 0)))

    def delta_done(self):
        """The delta's documents are written: the previous build goes."""
        for name in (layout.OLD_SIGNATURES, layout.OLD_MERGED):
            self.crawl.fs.rm(self.crawl.path(name))

    def unchanged(self, cycle):
        """A cycle that found nothing new or due: the outputs still describe the crawl;
        its delta is empty. (The report's merge, xml and index steps.)"""
        c = self.crawl
        n = cycle['cycle']
        c.progress('cycle %d: nothing new or due; outputs unchanged' % n)
        c.fs.mkdirs(c.path(layout.DELTA, '%03d' % n, layout.DELTA_XML))
        done = self.outputs()
        if done.get('mode') == 'delta' or 'deltas' in done:
            self.record_outputs(build='%03d' % n, deltas=done['deltas'] + ['%03d' % n])
        else:
            c.fs.write_text(c.path(layout.OUTPUTS), json.dumps({'build': '%03d' % n}))
        return {'merge': merge_step(*(c.report.load_step(name) for name in
                                      ('merge', 'anchors', 'mergejoin'))),
                'xml': c.report.load_step('xml'), 'index': c.report.load_step('index')}
