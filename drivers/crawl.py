"""The crawl loop (Nutch's bin/crawl), calling the design's five drivers.

    seeds -> in/000                                     (inject)
    for each layer L = 0 .. depth:
        CrawlerDriver.fetch      in/L  -> doc/L             drivers/crawler_driver.py
        ParserDriver.parse       doc/L -> out/L             drivers/parser_driver.py
        OptimizerDriver.update   out/L -> crawldb/L         drivers/optimizer_driver.py
        OptimizerDriver.generate crawldb/L -> in/L+1
        stop when L = depth, when in/L+1 is empty, or when OUT/STOP exists
    MergeDriver.merge            out/* -> merged/, index/   drivers/merge_driver.py
    HtmlToXmlDriver.xml          merged/ -> xml/            drivers/html_to_xml_driver.py
    finish: report.json, report.html (drivers/reports/summary.py, drivers/reports/html.py)

Each driver owns its folders and decisions, even where its work runs fused inside
another's job. By default (fetch.parse) the fetch parses each page as it arrives and
writes out/L itself: ParserDriver decides so and names the fetch's output. The merge
join's tasks write each page's XML document beside its merged record: HtmlToXmlDriver
records that step and installs xml/. A cycle (drivers/folder/cycles.py) is this loop
once.

Each step writes to OUT/tmp/<step> (with the files its tasks passed), renamed into place
once it succeeded and its counters are in OUT/steps/<step>.json. A step whose output
exists is done, a layer whose row is saved is skipped: a rerun after a crash goes on.
"""
import contextlib
import json
import logging
import os
import tempfile
import time

from drivers.crawler_driver import CrawlerDriver
from drivers.folder import layout, settings
from drivers.folder.cycles import Cycles, FolderError, layer_name, layer_rows
from drivers.html_to_xml_driver import HtmlToXmlDriver
from drivers.merge_driver import MergeDriver
from drivers.optimizer_driver import OptimizerDriver
from drivers.parser_driver import ParserDriver
from drivers.reports.charts import preload_libraries
from drivers.reports.html import chart_drawer, write_report_html
from drivers.reports.progress import FetchProgress, TaskLogCounters, Ticker, Watch, YarnCounters
from drivers.reports.status import Status
from drivers.reports.summary import Report
from drivers.runtime import beside, fs as fslib, hadoop_locate, launch
from drivers.runtime.hdfs import webhdfs_address
from drivers.runtime.steps import CrawlError, StepRunner
from drivers.seeds import NO_CRAWL, NoSeeds, gather
from jobs.lib import counters as C, media, render, routes, secretref, urls
from jobs.lib.sites import entry_urls

log = logging.getLogger('mrcrawl')


class Stopped(Exception):
    """The STOP file ended the layer after the step it names."""


class Crawl(StepRunner):
    def __init__(self, out, conf, runner='local', depth=3, progress=print, runner_args=(),
                 settings_changes=(), live=None):
        """*progress*: told each line of the run's output; *live*: the text stream for a
        fetch's progress line (drivers/reports/progress.py; None: none)."""
        self.out = out.rstrip('/') if out != '/' else out
        self.conf = conf
        self.runner = runner
        self.depth = depth
        self.progress = progress
        self.live = live
        self.fetch_watch = None      # (FetchProgress, Ticker) while a fetch runs
        self.user_args = list(runner_args)
        self.runner_args = launch.runner_args(runner, conf) + self.user_args
        self.fs = fslib.for_path(self.out)
        self.report = Report(self.out, self.fs, conf, depth, runner, settings_changes)
        self.status = Status(self.fs, self.out)
        self._conf_file = None
        self._seeds = None            # (path, SeedReport) once read
        self.crawler = CrawlerDriver(self)
        self.parser = ParserDriver(self)
        self.optimizer = OptimizerDriver(self)
        self.merger = MergeDriver(self)
        self.html_to_xml = HtmlToXmlDriver(self)

    # -- paths ----------------------------------------------------------------------

    def path(self, *parts):
        return self.fs.join(self.out, *parts)

    # -- setup ----------------------------------------------------------------------

    def prepare(self, existing=False):
        """Refuse a folder that is not a crawl's (drivers/folder/settings.py), or not new unless
        *existing*; mark it, make its folders, write the settings."""
        for where, text in routes.secret_settings(self.conf):
            try:     # before the folder is touched: a missing password stops the run
                secretref.check(text, where)
            except secretref.SecretError as e:
                raise CrawlError(str(e))
        try:
            settings.check_folder(self.out, existing)
            self.fs.check_writable(self.out)
            settings.mark(self.fs, self.out)
            for sub in (layout.IN, layout.CRAWLDB, layout.STEPS) + self.parser.folders():
                self.fs.mkdirs(self.path(sub))
        except (settings.FolderRefused, OSError) as e:
            raise CrawlError(str(e) if isinstance(e, settings.FolderRefused) else
                             'cannot write the crawl output folder %s: %s' % (
                                 self.out, e.strerror or e))
        for line in media.tool_warnings(self.conf) + render.tool_warnings(self.conf):
            log.warning('%s', line)
        text = json.dumps(self.conf, indent=1, sort_keys=True)
        self.fs.write_text(self.path(layout.SETTINGS), text)
        fd, self._conf_file = tempfile.mkstemp(prefix='mrcrawl-conf-', suffix='.json')
        with os.fdopen(fd, 'w') as f:
            f.write(text)

    def site_entries(self):
        """The entry URLs of the configured sites (``[site] entry``): seeds too."""
        return entry_urls(self.conf.get('sites'))

    def parse_seeds(self, seeds_path):
        """The seeds file (if any) and the sites' entry URLs (drivers.seeds.gather), read
        once per run: before a new crawl's folder is made, so a failed start leaves none."""
        if self._seeds is None or self._seeds[0] != seeds_path:
            try:
                self._seeds = (seeds_path, gather(seeds_path, self.conf))
            except NoSeeds as e:
                raise CrawlError(str(e))
        return self._seeds[1]

    def read_seeds(self, seeds_path):
        """The seeds (parse_seeds), their bad lines reported."""
        seeds = self.parse_seeds(seeds_path)
        for line in seeds.problems():
            self.progress(line)
        return seeds

    def inject(self, seeds_path):
        """Seeds file -> in/000 (skipped if in/000 exists: a resumed crawl)."""
        final = self.path(layout.IN, layer_name(0))
        if self.fs.exists(final):
            return self.report.load_step('inject')
        if not seeds_path and not self.site_entries():
            raise CrawlError(NO_CRAWL % self.out)
        seeds, tmp = self.read_seeds(seeds_path), self.path(layout.INJECT_TMP)
        text = self.optimizer.seed_lines(seeds.good)
        self.fs.rm(tmp)
        self.fs.mkdirs(tmp)
        self.fs.write_text(self.fs.join(tmp, 'part-00000'), text)
        step = {'counters': {C.INJECT: {
                    C.SEEDS: len(seeds.good), C.SEEDS_BAD: sum(seeds.bad.values()),
                    C.SEED_HOSTS: len({urls.host(u) for u in seeds.good})}},
                'seeds': seeds.as_dict(), 'seconds': 0.0}
        self.report.save_step('inject', step)
        self.fs.rename(tmp, final)
        self.optimizer.seeds_injected(text)
        return step

    # -- the loop -------------------------------------------------------------------

    def stop_requested(self):
        return self.fs.exists(self.path(layout.STOP))

    def run(self, seeds_path=None, at=None):
        """One crawl cycle (drivers/folder/cycles.py), then the final outputs for the whole
        crawl. The first cycle starts from *seeds_path*; a later one from what the
        crawl database holds that is new within the depth or due at *at* (default:
        now), plus the seeds it does not know. An unfinished cycle is resumed."""
        if not self.fs.exists(self.out):
            if seeds_path is None and not self.site_entries():
                raise CrawlError(NO_CRAWL % self.out)
            self.parse_seeds(seeds_path)
        with self.locked(existing=seeds_path is None and not self.site_entries()) as cycles:
            try:
                return self._cycle(cycles, seeds_path, at)
            except Exception as e:
                self.status.end('failed', ' '.join(str(e).split()) or type(e).__name__)
                raise
            except BaseException as e:       # Ctrl-C, kill (drivers/runtime/interrupts.py)
                self.status.end('interrupted', type(e).__name__)
                raise

    @contextlib.contextmanager
    def locked(self, existing=False):
        """Prepare the folder and hold its lock (drivers/folder/cycles.py) while the body runs;
        yields its Cycles. Another run's lock, or a folder of an incompatible layout,
        is a CrawlError."""
        self.prepare(existing)
        try:
            with Cycles(self.fs, self.out).held(self.progress) as cycles:
                yield cycles
        except FolderError as e:
            raise CrawlError(str(e))
        finally:
            # The jobs' settings file goes with the lock, also when interrupted.
            os.remove(self._conf_file)
            self._conf_file = None

    def _cycle(self, cycles, seeds_path, at):
        # report.html's plotting library loads while the first layer waits on the network.
        beside.preload(preload_libraries)
        cycle, new = cycles.begin(self.depth, seeds_path, at, on_new=self._new_cycle,
                                  changes=self.report.settings_changes)
        if self.depth is None:          # `mrcrawl recrawl`: the last cycle's depth
            self.depth = self.report.depth = cycle['depth'] = self._last_depth(cycles)
            cycles.save(cycle)
        elif cycle['depth'] != self.depth:
            cycle['depth'] = self.depth
            cycles.save(cycle)
        first = cycle['first_layer']
        self.status.start(cycle['cycle'], self.depth, first)
        self.progress('cycle %d%s: from layer %03d, depth %d' % (
            cycle['cycle'], '' if new else ' (resumed)', first, self.depth))
        if cycle['cycle'] == 1:
            start = self.inject(seeds_path)['counters']['inject']
            urls_in, hosts_in = start[C.SEEDS], start.get(C.SEED_HOSTS)
        else:
            start = self.optimizer.cycle_generate(cycle, seeds_path)
            urls_in, hosts_in = self.optimizer.generated(start)
            c = start['counters'].get(C.GENERATE, {})
            self.progress('cycle %d: %d URL(s) new or due (%d due again, %d new seed(s))' % (
                cycle['cycle'], urls_in, c.get(C.RECRAWL_DUE, 0), c.get(C.INJECTED_NEW, 0)))
        layer, done = first, {r['layer'] for r in cycle['layers']}
        # Sites that name secondary resources: the resources the last layer's pages name
        # are fetched in one more layer of resources only (no new page).
        resources = any(s.get('resources') for s in self.conf.get('sites') or ())
        while urls_in:
            hops = layer - first
            more = 'pages' if hops < self.depth else \
                'resources' if hops == self.depth and resources else None
            if more == 'resources' and layer in done and not self.names_resources(layer):
                more = None
            nxt = self.path(layout.IN, layer_name(layer + 1))
            if layer in done and (not more or self.fs.exists(nxt)):
                # Finished in an earlier run (its row is saved): nothing to load or redo.
                self.progress('layer %s: done in an earlier run' % layer_name(layer))
                generate = self.report.load_step('generate-' + layer_name(layer + 1)) \
                    if more else None
            else:
                steps, stopped = self.run_layer(layer, urls_in, hosts_in, more)
                if stopped:
                    return self.finish(cycles, stopped=True)
                row = self.report.layer_row(layer, urls_in, steps)
                cycle['layers'] = [r for r in cycle['layers'] if r['layer'] != layer] + [row]
                cycles.save(cycle)
                self.status.layer_done(row)
                self.report_so_far(cycles)
                self.progress(self.report.format_header())     # the row's column names
                self.progress(self.report.format_row(row))
                generate = steps.get('generate')
            if generate is None:
                break
            urls_in, hosts_in = self.optimizer.generated(generate)
            layer += 1
            if not urls_in and more == 'pages':
                self.progress('layer %s: no URL to fetch; stopping' % layer_name(layer))
        if cycle['cycle'] > 1 and not cycle['layers']:
            result = self.merger.unchanged(cycle)
        else:
            result = self.final_outputs(cycles, cycle)
        cycle['finished'] = True
        cycles.save(cycle)
        return self.finish(cycles, **result)

    def reparse(self):
        """`mrcrawl reparse`: every layer's pages parsed again from their stored bodies
        with this run's settings (MRReparse: nothing is fetched), then the outputs
        rebuilt as build CCC-reparseK, with the delta they make (delta/CCC-reparseK)."""
        with self.locked(existing=True) as cycles:
            done = cycles.all()
            if not done or not done[-1]['finished']:
                raise CrawlError('%s has no finished crawl cycle to parse again: run or '
                                 'resume `mrcrawl crawl` first' % self.out)
            cycle = done[-1]
            self.depth = self.report.depth = cycle['depth'] or self._last_depth(cycles)
            state = self.path(layout.REPARSE)
            if self.fs.exists(state):           # an interrupted reparse: same build
                build = json.loads(self.fs.read_text(state))['build']
            else:
                prefix = '%03d-reparse' % cycle['cycle']
                last = self.merger.built()
                build = prefix + str(int(last[len(prefix):]) + 1 if last.startswith(prefix)
                                     else 1)
                self.fs.write_text(state, json.dumps({'build': build}))
            self.parser.reparse(build)
            result = self.final_outputs(cycles, cycle, build)
            self.fs.rm(state)
            return self.finish(cycles, **result)

    def _last_depth(self, cycles):
        known = [c['depth'] for c in cycles.all() if c['depth'] is not None]
        if not known and self.fs.exists(self.path(layout.REPORT)):
            known = [json.loads(self.fs.read_text(self.path(layout.REPORT)))['depth']]
        if not known:
            raise CrawlError('%s: no earlier cycle says how deep to crawl: give --depth'
                             % self.out)
        return known[-1]

    def _new_cycle(self, first):
        """A new cycle starts at layer *first*: the last cycle's generate may have left
        an empty in/ there (its stop), and its robots.txt answers (robots/) go, since
        each cycle reads robots.txt afresh, as a Nutch round does."""
        self.fs.rm(self.path(layout.IN, layer_name(first)))
        self.fs.rm(self.path(layout.STEPS, 'generate-%s.json' % layer_name(first)))
        self.fs.rm(self.path(layout.ROBOTS))

    def run_layer(self, layer, urls_in, hosts_in, more):
        """One layer, as Nutch's fetch, parse, updatedb and generate: CrawlerDriver,
        ParserDriver, OptimizerDriver (its generate if *more*: 'pages', or 'resources'
        for the resources only). (Steps by kind, whether a STOP file ended it.)"""
        self.progress('layer %s: %d URL(s) to fetch' % (layer_name(layer), urls_in))
        self.status.layer(layer)
        steps = {}
        try:
            self.crawler.fetch(layer, urls_in, hosts_in, steps)
            self.parser.parse(layer, steps)
            self.optimizer.update(layer, steps)
            if more == 'resources' and not self.names_resources(layer):
                more = None           # the last layer's pages named no new resource
            if more:
                self.optimizer.generate(layer, steps, resources_only=more == 'resources')
        except Stopped:
            return steps, True
        self.optimizer.prune(layer)
        return steps, False

    def on_step(self, name):
        """Step *name* starts (drivers/runtime/steps.py): OUT/status.json says so."""
        self.status.step(name)

    @contextlib.contextmanager
    def fetching(self, layer, urls_in):
        """Around layer *layer*'s fetch step (CrawlerDriver.fetch): its jobs are watched
        (:meth:`watch`) for the progress line and status.json's figures."""
        self.fetch_watch = (FetchProgress(layer, urls_in, time.monotonic()),
                            Ticker(self.live, self.conf['progress']['log_seconds']))
        try:
            yield
        finally:
            self.fetch_watch = None
            self.status.fetch(None)

    def watch(self, runner, tag):
        """A job of the fetch (:meth:`fetching`) is read while it runs: from its tasks'
        logs, or on YARN from its ApplicationMaster (drivers/reports/progress.py)."""
        if self.fetch_watch is None:
            return contextlib.nullcontext()
        fetch, ticker = self.fetch_watch
        if tag is None:
            source = TaskLogCounters(runner._get_local_tmp_dir())   # mrjob's sim runners
        else:
            rm_url = hadoop_locate.rm_webapp_url(hadoop_locate.conf_dir_of())
            if rm_url is None:
                return contextlib.nullcontext()
            source = YarnCounters(rm_url, tag, ticker.say)
        return Watch(source, fetch, ticker, self.status.fetch,
                     self.conf['progress']['seconds'])

    def names_resources(self, layer):
        """Did layer *layer*'s pages name resources the crawl did not know?"""
        step = self.report.load_step('optimize-' + layer_name(layer))
        return bool(step['counters'].get(C.OPTIMIZE, {}).get(C.NEW_RESOURCES))

    def layer_step(self, steps, kind, name, job_cls, inputs, final, args, runner=None,
                   passed=None):
        """One step of a layer's driver: run it (or load it, done in an earlier run)
        into steps[kind], print its line. A STOP file then stops the layer: Stopped."""
        earlier = self.fs.exists(final)
        steps[kind] = step = self.run_step(name, job_cls, inputs, final, args, runner, passed)
        if earlier:
            self.progress('  %-9s done in an earlier run' % kind)
        else:
            self.progress('  %-9s %6.1fs%s' % (kind, step['seconds'], (
                '  (inline)' if step.get('runner') == 'inline' and self.runner != 'inline'
                else '')))
        if self.stop_requested():
            # Consumed, so that rerunning the same command continues the crawl.
            self.fs.rm(self.path(layout.STOP))
            self.progress('STOP file found in %s: stopped after step %s; run the same '
                          'command again to continue' % (self.out, name))
            raise Stopped(name)
        return step

    def final_outputs(self, cycles, cycle, build=None):
        """MergeDriver and HtmlToXmlDriver over every layer of every cycle, as *build*
        (default: the cycle's number), and the delta since the last build. report.html's
        charts are drawn beside the merge join, once the index they read is written."""
        build = build or '%03d' % cycle['cycle']
        merge, index, sources, charts = self.merger.merge(
            cycle['cycle'], build, chart_drawer(self.out, self.conf, layer_rows(cycles.all())))
        try:
            xml = self.html_to_xml.xml()
            records = self.merger.delta(build, sources)
            if records:
                self.html_to_xml.delta(build, records)
            self.merger.delta_done()
        except BaseException:
            beside.cancel([charts])
            raise
        return {'merge': merge, 'xml': xml, 'index': index, 'charts': charts}

    # -- settings the drivers share ----------------------------------------------------

    @property
    def warc_enabled(self):
        return self.conf['warc']['enabled']

    def task_path_args(self, option, path):
        """``option PATH`` for a crawl folder the tasks themselves read or write: an
        absolute local path, or the hdfs:// URI with the WebHDFS address and user they
        go through (CrawlJob.add_webhdfs_args)."""
        if self.runner == 'hadoop' or path.startswith('hdfs://'):
            url, user = webhdfs_address()
            return [option, path, '--webhdfs-url', url, '--hdfs-user', user]
        return [option, os.path.abspath(self.fs.local_path(path))]

    def report_so_far(self, cycles):
        """report.html redrawn after a layer, so that a user can open it while the crawl
        runs: its layers so far (drivers/reports/html.py, running)."""
        try:
            write_report_html(self.out, self.fs, {
                'layers': layer_rows(cycles.all()), 'runner': self.runner,
                'depth': self.depth}, self.conf, running=True)
        except Exception as e:   # a page for the user; the crawl goes on
            log.warning('html report not written: %s: %s', type(e).__name__, e)

    def finish(self, cycles, merge=None, xml=None, stopped=False, index=None, charts=None):
        """report.json (every cycle's layers) and report.html (*charts*: its charts as
        drawn beside the merge, drivers/runtime/beside.py); OUT/tmp goes."""
        done = cycles.all()
        build = self.merger.built() if merge is not None else None
        report = self.report.write(layer_rows(done), merge, xml, stopped, index, done, build,
                                   self.merger.outputs() if merge is not None else None)
        self.progress(self.report.format_summary(report))
        try:
            pngs = None
            if charts is not None:
                try:
                    pngs = charts.result(timeout=300)
                except beside.Failed as e:
                    log.warning('report charts: %s; drawing them here', e)
            self.progress('html report: %s' % write_report_html(self.out, self.fs, report,
                                                                 self.conf, pngs))
        except Exception as e:   # the crawl itself is done and saved; say why, go on
            log.warning('html report not written: %s: %s', type(e).__name__, e)
        self.fs.rm(self.path(layout.TMP))
        self.status.end('stopped' if stopped else 'finished')
        return report
