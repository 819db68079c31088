"""MergeDriver: every layer merged into one page per URL and content (the design's
MergeDriver), after each cycle or reparse.

    current   meta/* (or out/*)        -> current/    (MRCurrent: each URL's current
                                                       fetch, without its text; from
                                                       the second cycle on)
    merge     meta/* or current/       -> merge_map/  (MRMerge: who folds into whom, on
                                                       summaries; the anchor texts of the
                                                       links to each page, Nutch's
                                                       invertlinks, in its first shuffle)
    index     meta/* or current/       -> index/, hosts/  (MRIndexRows, then Parquet:
              + merge_map/                             drivers/index.py)
    mergejoin merge_map/ + out/*       -> merged/     (MRMergeJoin: the page text joined
              (+ prev_signatures/)        + xml/, signatures/, delta/BUILD  once; its
                                                       tasks also write the documents,
                                                       each page's signature and what
                                                       changed since the last build)
    delta     prev_signatures/ + merged/ -> delta/BUILD  (MRDelta, only when merged/
                                                       was joined in an earlier run)

Without meta/ (a crawl of an earlier version, a reparse), out/* stands in for it.

The final outputs of the whole crawl are rebuilt as one *build* ('001' after cycle 1,
'002-reparse1' after a reparse of cycle 2); OUT/outputs.json names the build they
describe, so a run that finds them behind rebuilds them.
"""
import json
import logging

from drivers import beside
from jobs.lib import counters as C

log = logging.getLogger('mrcrawl')

#: Final outputs, rebuilt for the whole crawl after each cycle or reparse.
FINAL_OUTPUTS = ('current', 'merge_map', 'merged', 'xml', 'signatures', 'index', 'hosts')


def merge_step(group, join):
    """The report's merge: MRMerge's and MRMergeJoin's counters and seconds."""
    return {'counters': dict(group['counters'], **join['counters']),
            'seconds': round(group['seconds'] + join['seconds'], 3)}


class MergeDriver:
    def __init__(self, crawl):
        self.crawl = crawl

    def built(self):
        """The build the final outputs describe: '001' (cycle 1, or a folder from before
        builds were recorded), '002' (cycle 2), '002-reparse1' (its first reparse)."""
        c = self.crawl
        path = c.path('outputs.json')
        if not c.fs.exists(path):
            return '001'
        done = json.loads(c.fs.read_text(path))
        return done.get('build') or '%03d' % done['cycle']

    def start_build(self, build):
        """Outputs of an earlier build are behind: signatures/ is kept as
        prev_signatures/ for the delta (merged/ as prev_merged/ when a build has no
        signatures/: a crawl of an earlier version), the rest removed to be rebuilt."""
        c = self.crawl
        built = self.built()
        if built == build:
            return
        c.progress('outputs of build %s are behind: rebuilding them as %s' % (built, build))
        if not self.previous():
            for name in ('signatures', 'merged'):
                if c.fs.exists(c.path(name)):
                    c.fs.rename(c.path(name), c.path('prev_' + name))
                    break
        for name in FINAL_OUTPUTS:
            c.fs.rm(c.path(name))
        c.fs.write_text(c.path('outputs.json'), json.dumps({'build': build}))

    def merge(self, cycle, build, draw=None):
        """out/* -> merged/ (and index/, hosts/) for *build*: (the report's merge step,
        the index step, what the merge read of the pages: the summaries MRDelta reads
        each URL's current fetch from, and *draw*'s value to come: a drivers.beside
        Beside or Done, or None). *draw*, report.html's charts, runs once index/ and
        hosts/ are written, in a child beside the join. So does the index, when it runs
        in the driver's process (:meth:`index_beside`)."""
        from drivers.index import build_index
        c = self.crawl
        self.start_build(build)
        layers = [name for name in c.fs.listdir(c.path('out')) if name.isdigit()]
        sources = [c.path('out', name) for name in layers]
        c.progress('merge: %d layer(s)' % len(sources))
        group, summaries = self.merge_group(cycle, self.meta_sources(layers), sources)
        side = self.index_beside(summaries) and beside.start(
            lambda: (build_index(c, summaries), draw and draw()), 'mrcrawl-index')
        if not side:
            index, drawn = self.index_here(summaries, draw)
        join = self.merge_join(sources, group, build)
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
        from drivers.index import build_index
        return (build_index(self.crawl, summaries),
                draw and beside.start(draw, 'mrcrawl-report-charts'))

    def index_beside(self, summaries):
        """Build the index in a child beside the join? When its job would run in the
        driver's process (inline, on the local runner): then the join and it each have a
        core. A job of the local runner's own tasks, or one on Hadoop, keeps its turn."""
        from drivers.index import index_inputs
        from jobs.index_rows import MRIndexRows
        c = self.crawl
        return c.runner in ('local', 'inline') and not c.fs.exists(c.path('index')) and \
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
        so that no job copies every page's text. *again*: current/ made afresh."""
        from jobs.current import MRCurrent
        c = self.crawl
        if cycle == 1:
            return inputs
        if again:
            c.fs.rm(c.path('current'))
        c.run_step('current', MRCurrent, inputs, c.path('current'))
        return [c.path('current')]

    def merge_group(self, cycle, metas, sources):
        """MRMerge: the pages' summaries -> merge_map/: (its step dict, the summaries it
        read: :meth:`summaries` of *metas*, meta/* when whole, else of *sources*,
        out/*). SimHashes made with another merge.shingle_words are not in meta/: only
        the text gives them, and the merge is made again from out/*. The merge is two
        jobs, so that mrjob drops this one's intermediate files before MRMergeJoin
        shuffles whole pages."""
        from jobs.merge import MRMerge
        c = self.crawl
        summaries = self.summaries(cycle, metas or sources)
        if c.fs.exists(c.path('merged')) and not c.fs.exists(c.path('merge_map')):
            return c.report.load_step('merge'), summaries   # merged/ by a one-job merge
        step = c.run_step('merge', MRMerge, summaries, c.path('merge_map'))
        stale = step['counters'].get(C.MERGE, {}).get(C.NEAR_TEXT_IN_OUT, 0)
        if stale and metas:
            c.progress('merge: %d page(s) need their text hashed again: merging from out/'
                       % stale)
            c.fs.rm(c.path('merge_map'))
            summaries = self.summaries(cycle, sources, again=True)
            step = c.run_step('merge', MRMerge, summaries, c.path('merge_map'))
        return step, summaries

    def previous(self):
        """The previous build's signatures/ (else its merged/, from an earlier version)
        while its delta is not written: prev_signatures/ or prev_merged/, else None."""
        for name in ('prev_signatures', 'prev_merged'):
            if self.crawl.fs.exists(self.crawl.path(name)):
                return self.crawl.path(name)
        return None

    def merge_join(self, sources, group, build):
        """MRMergeJoin: merge_map/ + pages -> merged/, and beside it xml/, signatures/
        and the delta since the previous build (delta/BUILD); one step dict for the
        report's merge: both jobs' counters (groups merge, merge_join), their seconds.
        The join's tasks write the side files (--xml-dir, --signature-dir, --delta-dir),
        so no job reads every merged page again for them: they move into place once the
        join has succeeded, and the xml and delta steps are recorded from its counters.
        A join done in an earlier run left none: HtmlToXmlDriver.xml and
        :meth:`delta` make them."""
        from jobs.merge_join import MRMergeJoin
        c = self.crawl
        args, inputs = ['--build', build], [c.path('merge_map')] + sources
        sides = {name: c.path('tmp', name + '_side') for name in ('xml', 'signatures',
                                                                   'delta')}
        fresh = not c.fs.exists(c.path('merged')) and not c.fs.exists(c.path('xml'))
        previous = self.previous()
        delta = c.path('delta', build)
        with_delta = bool(fresh and previous and not c.fs.exists(delta))
        if fresh:
            for side in sides.values():
                c.fs.rm(side)      # an interrupted join's files
            args += c.task_path_args('--xml-dir', sides['xml'])
            args += c.task_path_args('--signature-dir', sides['signatures'])
        if with_delta:
            args += c.task_path_args('--delta-dir', sides['delta'])
            inputs.append(previous)
        join = c.run_step('mergejoin', MRMergeJoin, inputs, c.path('merged'), args)
        if fresh:
            folders = [sides['xml'], sides['signatures']]
            if with_delta:
                folders += [c.fs.join(sides['delta'], 'records'),
                            c.fs.join(sides['delta'], 'xml')]
            for folder in folders:
                c.fs.mkdirs(folder)   # no merged page or no change: no task wrote a file
            c.fs.rename(sides['xml'], c.path('xml'))
            c.fs.rename(sides['signatures'], c.path('signatures'))
            made = {'seconds': 0.0, 'made_by': 'mergejoin'}
            xml = dict(made, counters={C.XML: join['counters'].pop(C.XML, {})})
            changes = dict(made, counters={C.DELTA: join['counters'].pop(C.DELTA, {})})
            c.report.save_step('mergejoin', join)
            c.report.save_step('xml', xml)
            if with_delta:
                c.fs.mkdirs(c.path('delta'))
                c.fs.rename(sides['delta'], delta)
                c.report.save_step('delta-' + build, changes)
                self.delta_progress(changes)
        return merge_step(group, join)

    def delta(self, build, sources):
        """prev_signatures/ + merged/ -> delta/BUILD/records, when there is an earlier
        build to compare with and the join did not write its delta (it was done in an
        earlier run): the records' folder, else None."""
        from jobs.delta import MRDelta
        c = self.crawl
        previous = self.previous()
        if not previous or c.fs.exists(c.fs.join(c.path('delta', build), 'xml')):
            return None
        records = c.fs.join(c.path('delta', build), 'records')
        step = c.run_step('delta-' + build, MRDelta, [previous, c.path('merged')] + sources,
                          records, ['--build', build])
        self.delta_progress(step)
        return records

    def delta_progress(self, step):
        n = step['counters'].get(C.DELTA, {})
        self.crawl.progress('delta: %d added, %d changed, %d deleted' % (
            n.get(C.DELTA_ADDED, 0), n.get(C.DELTA_CHANGED, 0), n.get(C.DELTA_DELETED, 0)))

    def delta_done(self):
        """The delta's documents are written: the previous build goes."""
        for name in ('prev_signatures', 'prev_merged'):
            self.crawl.fs.rm(self.crawl.path(name))

    def unchanged(self, cycle):
        """A cycle that found nothing new or due: the outputs still describe the crawl;
        its delta is empty. (The report's merge, xml and index steps.)"""
        c = self.crawl
        n = cycle['cycle']
        c.progress('cycle %d: nothing new or due; outputs unchanged' % n)
        c.fs.mkdirs(c.fs.join(c.path('delta', '%03d' % n), 'xml'))
        c.fs.write_text(c.path('outputs.json'), json.dumps({'build': '%03d' % n}))
        return {'merge': merge_step(c.report.load_step('merge'),
                                    c.report.load_step('mergejoin')),
                'xml': c.report.load_step('xml'), 'index': c.report.load_step('index')}
