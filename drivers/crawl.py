"""The crawl loop (Nutch's bin/crawl, as MapReduce jobs run through mrjob).

    seeds -> in/000
    for each layer L = 0 .. depth:
        plan      in/L                      -> plan/L      (MRPlanFetch: which reducer
                                                                      owns which big host)
        fetch     in/L (+ plan/L)           -> out/L       (MRFetch, CrawlerDriver; it parses
                                                                      each page: fetch.parse)
          or, with fetch.parse = false:
        fetch     in/L (+ plan/L)           -> doc/L       (MRFetch: documents with bodies)
        warc      out/L or doc/L            -> warc/*.warc.gz + warc_index/L  (MRWarc,
                                                                      warc.enabled only)
        parse     doc/L                     -> out/L       (MRParse, ParserDriver)
        optimize  crawldb/L-1 + out/L       -> crawldb/L   (MROptimize, OptimizerDriver)
        pagerank  crawldb/L + out/0..L      -> pagerank/L  (MRPageRank; strategy pagerank,
                                                                      every K layers)
        generate  crawldb/L (+ pagerank)    -> in/L+1      (MRGenerate, OptimizerDriver)
        stop when L = depth, when in/L+1 is empty, or when OUT/STOP exists
    merge   out/* -> merge_map/  (MRMerge: who folds into whom, on summaries; the anchor
            texts of the links to each page, Nutch's invertlinks, in its first shuffle)
    index   out/* + merge_map/ -> index/, hosts/  (MRIndexRows, then Parquet: drivers/index.py;
            here, while out/ is still in the page cache from MRMerge)
    mergejoin merge_map/ + out/* -> merged/  (MRMergeJoin: the page text joined once)
    xml     merged/   -> xml/      (MRHtmlToXml, HtmlToXmlDriver)
    finish: report.json, report.html (drivers/report_html.py)

Each step writes to OUT/tmp/<step> and is renamed into place only when it succeeded,
after its counters were saved in OUT/steps/<step>.json. A step whose output folder
exists is done, so rerunning the same command after a crash continues from the last
completed step and fetches nothing twice.
"""
import contextlib
import json
import logging
import os
import tempfile
import threading
import time

from drivers import fs as fslib, hadoop
from drivers.cycles import Cycles, FolderError, LockHeld, layer_rows
from drivers.report import Report
from drivers.seeds import read_seeds
from jobs.lib import counters as C, urls

log = logging.getLogger('mrcrawl')


def local_runner_args():
    """mrjob switches for ``-r local``.

    - ``--no-bootstrap-mrjob``: the local runner's tasks run this interpreter, which has
      mrjob installed; zipping mrjob for every job and importing it from the zip in every
      task is a large share of a CPU-bound crawl's time (bench/README.md).
    - ``--sort-bin`` with ``-S 64M``: the shuffle's sort (GNU sort, on the reducer key
      alone, stable, as mrjob's default) with a bounded buffer (unbounded, GNU sort's
      grows with the input: bench/crawldb_update.py). With ``--batch-size=256`` it merges
      up to 256 sorted runs of 64 MB (16 GB of input) in one pass where its default of
      16 took several.
    """
    return ['--no-bootstrap-mrjob', '--sort-bin',
            "sort -t '\t' -k 1,1 -s -S 64M --batch-size=256"] + TASK_ENV_ARGS


#: Task environment on every runner. setuptools replaces the stdlib's distutils (which
#: mrjob 0.7.4 imports) with its own copy unless told not to, and the copy is loaded at
#: every task's start-up.
TASK_ENV_ARGS = ['--cmdenv', 'SETUPTOOLS_USE_DISTUTILS=stdlib']


def _preload_report_libraries():
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except Exception:      # report.html reports its own failure when it runs
        pass


def _merge_step(group, join):
    """The report's merge: MRMerge's and MRMergeJoin's counters and seconds."""
    return {'counters': dict(group['counters'], **join['counters']),
            'seconds': round(group['seconds'] + join['seconds'], 3)}


class CrawlError(Exception):
    """A failure the user can act on: printed as one line, exit status 2."""


class StepFailed(CrawlError):
    pass


def _layer(n):
    return '%03d' % n


class Crawl:
    def __init__(self, out, conf, runner='local', depth=3, progress=print, runner_args=()):
        self.out = out.rstrip('/') if out != '/' else out
        self.conf = conf
        self.runner = runner
        self.depth = depth
        self.progress = progress
        self.user_args = list(runner_args)
        self.runner_args = list(runner_args)
        if runner == 'hadoop':
            self.runner_args = hadoop.runner_args(conf) + TASK_ENV_ARGS + self.runner_args
        elif runner == 'local':
            self.runner_args = local_runner_args() + self.runner_args
        self.fs = fslib.for_path(self.out)
        self.report = Report(self.out, self.fs, conf, depth, runner)
        self._conf_file = None
        self._seeds = None            # (path, SeedReport) once read
        self._next_fetch_at = 0.0     # monotonic time the next layer's fetch may start

    @property
    def fused_parse(self):
        """fetch.parse: the fetch job parses and writes out/; no parse job, no doc/."""
        return self.conf['fetch']['parse']

    def fetch_parse_steps(self, inputs, doc, out, args=(), plan_args=(), warc=None):
        """(kind, job, inputs, output, args) of a layer's fetch, warc and parse steps.

        *warc*: (its warc_index folder, the file-name prefix), used with warc.enabled:
        a fetch that parses writes the WARC files itself (the raw bodies' store, no job
        of its own); with fetch.parse = false MRWarc archives doc/. A layer whose doc/
        a run with fetch.parse = false left is finished that way (resumed: nothing is
        fetched twice).
        """
        from jobs.fetch import MRFetch
        from jobs.parse import MRParse
        from jobs.warc import MRWarc
        args, plan_args = list(args), list(plan_args)
        fused = self.fused_parse and not self.fs.exists(doc)
        fetched = out if fused else doc
        archive = [] if warc is None or not self.warc_enabled else self.warc_args(warc[1])
        todo = [('fetch', MRFetch, inputs, fetched, args + plan_args + (
            archive if fused else []))]
        if archive and not fused:
            todo.append(('warc', MRWarc, [fetched], warc[0], args + archive))
        if not fused:
            todo.append(('parse', MRParse, [doc], out, args))
        return todo

    # -- paths ----------------------------------------------------------------------

    def path(self, *parts):
        return self.fs.join(self.out, *parts)

    # -- setup ----------------------------------------------------------------------

    def prepare(self):
        try:
            self.fs.check_writable(self.out)
            for sub in ('in', 'out', 'crawldb', 'steps') + (
                    () if self.fused_parse else ('doc',)):
                self.fs.mkdirs(self.path(sub))
        except OSError as e:
            raise CrawlError('cannot write the crawl output folder %s: %s' % (
                self.out, e.strerror or e))
        text = json.dumps(self.conf, indent=1, sort_keys=True)
        self.fs.write_text(self.path('conf.json'), text)
        fd, self._conf_file = tempfile.mkstemp(prefix='mrcrawl-conf-', suffix='.json')
        with os.fdopen(fd, 'w') as f:
            f.write(text)

    def parse_seeds(self, seeds_path):
        """The seeds file read once per run (CrawlError if it cannot be read or holds no
        valid URL): before a new crawl's folder is made, so a failed start leaves none."""
        if self._seeds is None or self._seeds[0] != seeds_path:
            try:
                seeds = read_seeds(seeds_path, self.conf['filter']['max_url_length'],
                                   normalize=urls.normalizer(self.conf))
            except OSError as e:
                raise CrawlError('cannot read seeds file %s: %s' % (
                    seeds_path, e.strerror or e))
            if not seeds.good:
                raise CrawlError('no valid seed URL in %s (%d bad line(s))' % (
                    seeds_path, sum(seeds.bad.values())))
            self._seeds = (seeds_path, seeds)
        return self._seeds[1]

    def read_seeds(self, seeds_path):
        """The good seed URLs of a seeds file; bad lines reported; none is an error."""
        seeds = self.parse_seeds(seeds_path)
        bad = sum(seeds.bad.values())
        if bad:
            self.progress('seeds: %d bad line(s) skipped: %s' % (bad, ', '.join(
                '%s=%d' % kv for kv in sorted(seeds.bad.items()))))
            for ex in seeds.examples[:5]:
                self.progress('  line %d (%s): %s' % (ex[0], ex[1], ex[2]))
        return seeds

    def inject(self, seeds_path):
        """Seeds file -> in/000 (skipped if in/000 exists: a resumed crawl)."""
        final = self.path('in', _layer(0))
        if self.fs.exists(final):
            return self.report.load_step('inject')
        if not seeds_path:
            raise CrawlError('%s holds no crawl yet: give --seeds' % self.out)
        seeds = self.read_seeds(seeds_path)
        bad = sum(seeds.bad.values())
        tmp = self.path('tmp', 'inject')
        self.fs.rm(tmp)
        self.fs.mkdirs(tmp)
        self.fs.write_text(self.fs.join(tmp, 'part-00000'), ''.join(
            json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n' for u in seeds.good))
        step = {'counters': {C.INJECT: {C.SEEDS: len(seeds.good),
                                        C.SEEDS_BAD: bad,
                                        C.SEED_HOSTS: len({urls.host(u)
                                                                 for u in seeds.good})}},
                'seeds': seeds.as_dict(), 'seconds': 0.0}
        self.report.save_step('inject', step)
        self.fs.rename(tmp, final)
        return step

    # -- running one job ------------------------------------------------------------

    def run_step(self, name, job_cls, inputs, final, extra_args=(), runner=None):
        """Run *job_cls* over *inputs* into *final* unless it is already there (on
        *runner*, else the one :meth:`runner_for` picks)."""
        if self.fs.exists(final):
            return self.report.load_step(name)
        tmp = self.path('tmp', name)
        self.fs.rm(tmp)
        runner_name = runner or self.runner_for(job_cls, inputs)
        args = self.job_args(runner_name, tmp, extra_args, inputs)
        start = time.monotonic()
        try:
            if runner_name == 'hadoop' and len(job_cls(args=args).steps()) > 1:
                counters, runner_name = hadoop.run_cut(self, job_cls, tmp, extra_args, inputs)
            else:
                counters = self.run_job(job_cls, args)
        except Exception as e:
            # One line, whatever mrjob's message holds: the step, why, and how to rerun it.
            raise StepFailed('step %s failed: %s: %s (job %s %s)' % (
                name, type(e).__name__, ' '.join(str(e).split()), job_cls.__name__,
                ' '.join(args)))
        merged = C.merge_steps(counters)
        step = {'counters': merged, 'seconds': round(time.monotonic() - start, 3),
                'runner': runner_name}
        self.report.save_step(name, step)
        if not self.fs.exists(tmp):
            self.fs.mkdirs(tmp)   # an empty result is still a result
        self.fs.rm(final)
        self.fs.mkdirs(final.rsplit('/', 1)[0])
        self.fs.rename(tmp, final)
        self.fs.write_text(self.path('state.json'), json.dumps(
            {'last_completed_step': name, 'output': final}))
        return step

    def job_args(self, runner_name, out, extra_args, inputs):
        runner_args = self.runner_args if runner_name == self.runner else self.user_args
        if runner_name == 'inline' and '--num-cores' not in runner_args:
            # The inline runner runs its tasks one after another: splitting for 2 cores
            # only adds tasks, each setting its job up again.
            runner_args = ['--num-cores', '1'] + runner_args
        # --cleanup-on-failure ALL: mrjob keeps a failed (or interrupted) job's temporary
        # folder by default; a crawl's can hold gigabytes, and the step's one-line error
        # already says why it failed.
        return ['-r', runner_name, '--crawl-conf', self._conf_file, '--output-dir',
                self.fs.local_path(out) if self.runner != 'hadoop' else out,
                '--cleanup-on-failure', 'ALL'] + runner_args + list(extra_args) + list(inputs)

    @staticmethod
    def run_job(job_cls, args):
        with job_cls(args=args).make_runner() as runner:
            runner.run()
            return runner.counters()

    def fetch_ended(self):
        """Note when a fetch step ended: each host's last request of the layer ended
        before that, and the next layer's first request to it (its robots.txt) must come
        politeness.delay later. (A host whose Crawl-delay is longer then waits it out
        again between its robots.txt and its first page, so pages stay that far apart.)"""
        self._next_fetch_at = time.monotonic() + self.conf['politeness']['delay']

    def wait_between_fetches(self):
        """Sleep until the previous layer's fetch is a delay past (see fetch_ended):
        with small jobs inline, optimize and generate can take less than the delay."""
        wait = self._next_fetch_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    #: Jobs that runner_for never runs inline: the fetch's reducers must run side by
    #: side (a small politeness-bound layer is the exception: :meth:`fetch_inline`).
    NEVER_INLINE = ('MRFetch',)

    #: CPU seconds one fetched page costs its fetch task (HTTP and the fused parse),
    #: rounded up from the CPU-bound benchmark (bench/README.md, cpu1x).
    FETCH_CPU_PER_PAGE = 0.02

    def fetch_inline(self, urls, hosts, L):
        """Fetch layer L (*urls* URLs on *hosts* hosts) in the driver's process, on the
        inline runner with one reducer bin? Only for a local-runner crawl when the layer
        is small (runner.inline_fetch_max_urls), every host gets a thread of that one
        reducer at once (hosts <= fetch.threads), so the layer takes the same politeness
        time as with several reducers, and one core keeps up with what the hosts' threads
        fetch (hosts x FETCH_CPU_PER_PAGE <= politeness.delay): then the layer saves the
        task processes' start and loses nothing. runner.uber_max_bytes = 0 turns it off
        too. A resumed layer with a fetch plan keeps its reducers. (Hadoop: one_fetch_reducer.)"""
        limit = self.conf['runner']['inline_fetch_max_urls']
        uber = self.conf['runner']['uber_max_bytes']
        return (self.runner == 'local' and limit > 0 and uber > 0 and hosts is not None
                and 0 < urls <= limit and hosts <= self.conf['fetch']['threads']
                and hosts * self.FETCH_CPU_PER_PAGE <= self.conf['politeness']['delay']
                and not self.fs.exists(self.path('plan', L)))

    def runner_for(self, job_cls, inputs):
        """The runner for one step: ``inline`` for a small job of a local-runner crawl
        (runner.uber_max_bytes) or of a Hadoop crawl (hadoop.local_max_bytes: the job
        then reads and writes HDFS from the driver, drivers/hadoop.py), else the crawl's
        runner."""
        limit = {'local': self.conf['runner']['uber_max_bytes'],
                 'hadoop': self.conf['hadoop']['local_max_bytes']}.get(self.runner, 0)
        if limit <= 0 or job_cls.__name__ in self.NEVER_INLINE:
            return self.runner
        total = 0
        for path in inputs:
            total += self.fs.size(path)
            if total > limit:
                return self.runner
        return 'inline'

    # -- the loop -------------------------------------------------------------------

    def stop_requested(self):
        return self.fs.exists(self.path('STOP'))

    def run(self, seeds_path=None, at=None):
        """One crawl cycle (drivers/cycles.py), then the final outputs for the whole
        crawl. The first cycle starts from *seeds_path*; a later one from what the
        crawl database holds that is new within the depth or due at *at* (default:
        now), plus the seeds it does not know. An unfinished cycle is resumed."""
        if seeds_path is not None and not self.fs.exists(self.out):
            self.parse_seeds(seeds_path)
        with self.locked() as cycles:
            return self._cycle(cycles, seeds_path, at)

    @contextlib.contextmanager
    def locked(self):
        """Prepare the folder and hold its lock (drivers/cycles.py) while the body runs;
        yields its Cycles. Another run's lock, or a folder of an incompatible layout,
        is a CrawlError."""
        self.prepare()
        cycles = Cycles(self.fs, self.out)
        try:
            stale = cycles.lock()
        except LockHeld as e:
            raise CrawlError(str(e))
        if stale:
            self.progress(stale)
        try:
            yield cycles
        except FolderError as e:
            raise CrawlError(str(e))
        finally:
            cycles.unlock()
            # The jobs' settings file goes with the lock, also when interrupted.
            os.remove(self._conf_file)
            self._conf_file = None

    def _cycle(self, cycles, seeds_path, at):
        # report.html's plotting library loads while the first layer waits on the network.
        threading.Thread(target=_preload_report_libraries, daemon=True).start()
        cycle, new = cycles.begin(self.depth, seeds_path, at, on_new=self._clear_next_layer)
        if self.depth is None:          # `mrcrawl recrawl`: the last cycle's depth
            self.depth = self.report.depth = cycle['depth'] = self._last_depth(cycles)
            cycles.save(cycle)
        elif cycle['depth'] != self.depth:
            cycle['depth'] = self.depth
            cycles.save(cycle)
        first = cycle['first_layer']
        self.progress('cycle %d%s: from layer %03d, depth %d' % (
            cycle['cycle'], '' if new else ' (resumed)', first, self.depth))
        if cycle['cycle'] == 1:
            start = self.inject(seeds_path)['counters']['inject']
            urls_in, hosts_in = start[C.SEEDS], start.get(C.SEED_HOSTS)
        else:
            start = self.cycle_generate(cycle, seeds_path)['counters'].get(C.GENERATE, {})
            urls_in, hosts_in = start.get(C.GENERATED, 0), start.get(C.GENERATED_HOSTS)
            self.progress('cycle %d: %d URL(s) new or due (%d due again, %d new seed(s))' % (
                cycle['cycle'], urls_in, start.get(C.RECRAWL_DUE, 0),
                start.get(C.INJECTED_NEW, 0)))
        layer = first
        while urls_in:
            steps, stopped = self.run_layer(layer, urls_in, hosts_in,
                                            more=layer - first < self.depth)
            if stopped:
                return self.finish(cycles, stopped=True)
            row = self.report.layer_row(layer, urls_in, steps)
            cycle['layers'] = [r for r in cycle['layers'] if r['layer'] != layer] + [row]
            cycles.save(cycle)
            self.progress(self.report.format_header())     # the row's column names
            self.progress(self.report.format_row(row))
            if 'generate' not in steps:
                break
            gen = steps['generate']['counters'].get(C.GENERATE, {})
            urls_in, hosts_in = gen.get(C.GENERATED, 0), gen.get(C.GENERATED_HOSTS)
            layer += 1
            if not urls_in:
                self.progress('layer %s: no URL to fetch; stopping' % _layer(layer))
        if cycle['cycle'] > 1 and not cycle['layers']:
            result = self.nothing_fetched(cycle)
        else:
            result = self.final_outputs(cycle)
        cycle['finished'] = True
        cycles.save(cycle)
        return self.finish(cycles, **result)

    def reparse(self):
        """`mrcrawl reparse`: every layer's pages parsed again from their stored bodies
        with this run's settings (MRReparse: nothing is fetched), then the outputs
        rebuilt as build CCC-reparseK, with the delta they make (delta/CCC-reparseK)."""
        from jobs.reparse import MRReparse
        with self.locked() as cycles:
            done = cycles.all()
            if not done or not done[-1]['finished']:
                raise CrawlError('%s has no finished crawl cycle to parse again: run or '
                                 'resume `mrcrawl crawl` first' % self.out)
            cycle = done[-1]
            self.depth = self.report.depth = cycle['depth'] or self._last_depth(cycles)
            state = self.path('reparse.json')
            if self.fs.exists(state):           # an interrupted reparse: same build
                build = json.loads(self.fs.read_text(state))['build']
            else:
                prefix = '%03d-reparse' % cycle['cycle']
                last = self.built()
                build = prefix + str(int(last[len(prefix):]) + 1 if last.startswith(prefix)
                                     else 1)
                self.fs.write_text(state, json.dumps({'build': build}))
            layers = [n for n in self.fs.listdir(self.path('out')) if n.isdigit()]
            self.progress('reparse: %d layer(s) from the stored pages, as %s' % (
                len(layers), build))
            # The crawl folder the WARC file names are relative to.
            args = self.task_path_args('--crawl-root', self.out)
            for L in layers:
                step = self.run_step('reparse-%s-%s' % (build, L), MRReparse,
                                     [self.path('out', L)], self.path('reparsed', L), args)
                c = step['counters'].get(C.REPARSE, {})
                self.progress('  layer %s: %d page(s) parsed again, %d without a stored '
                              'body' % (L, c.get(C.REPARSED, 0),
                                        c.get(C.NOT_STORED, 0)))
            for L in layers:      # every layer parsed: swap them in
                if self.fs.exists(self.path('reparsed', L)):
                    self.fs.rm(self.path('out', L))
                    self.fs.rename(self.path('reparsed', L), self.path('out', L))
            self.fs.rm(self.path('reparsed'))
            result = self.final_outputs(cycle, build)
            self.fs.rm(state)
            return self.finish(cycles, **result)

    def _last_depth(self, cycles):
        known = [c['depth'] for c in cycles.all() if c['depth'] is not None]
        if not known and self.fs.exists(self.path('report.json')):
            known = [json.loads(self.fs.read_text(self.path('report.json')))['depth']]
        if not known:
            raise CrawlError('%s: no earlier cycle says how deep to crawl: give --depth'
                             % self.out)
        return known[-1]

    def _clear_next_layer(self, first):
        """A new cycle starts at layer *first*: the last cycle's generate may have left
        an empty in/ there (its stop)."""
        self.fs.rm(self.path('in', _layer(first)))
        self.fs.rm(self.path('steps', 'generate-%s.json' % _layer(first)))

    def cycle_generate(self, cycle, seeds_path):
        """A later cycle's first layer: crawldb -> in/FIRST (MRGenerate in cycle mode:
        unfetched within the depth, due again at the cycle's time, new seeds)."""
        from jobs.generate import MRGenerate
        first = cycle['first_layer']
        inputs = [self.path('crawldb', _layer(first - 1))]
        args = ['--recrawl-at', cycle['at'], '--max-depth', str(self.depth),
                '--layer', str(first)]
        if seeds_path:
            seeds_dir = self.path('seeds', '%03d' % cycle['cycle'])
            if not self.fs.exists(seeds_dir):
                good = self.read_seeds(seeds_path).good
                tmp = self.path('tmp', 'seeds')
                self.fs.rm(tmp)
                self.fs.mkdirs(tmp)
                self.fs.write_text(self.fs.join(tmp, 'part-00000'), ''.join(
                    json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n' for u in good))
                self.fs.mkdirs(self.path('seeds'))
                self.fs.rename(tmp, seeds_dir)
            inputs.append(seeds_dir)
            args.append('--inject')
        return self.run_step('generate-%s' % _layer(first), MRGenerate, inputs,
                             self.path('in', _layer(first)), args)

    def run_layer(self, layer, urls_in, hosts_in, more):
        """Plan, fetch (+ parse), optimize and, if *more*, generate for one layer:
        (steps by kind, whether a STOP file ended it)."""
        from jobs.generate import MRGenerate
        from jobs.optimize import MROptimize
        from jobs.pagerank import MRPageRank
        from jobs.plan_fetch import MRPlanFetch
        L = _layer(layer)
        self.progress('layer %s: %d URL(s) to fetch' % (L, urls_in))
        steps = {}
        layer_arg = ['--layer', str(layer)]
        db_in = [self.path('crawldb', _layer(layer - 1))] if layer else []
        todo = []
        if self.plan_needed(hosts_in, self.path('plan', L)):
            todo.append(('plan', MRPlanFetch, [self.path('in', L)], self.path('plan', L),
                         layer_arg))
        todo += self.fetch_parse_steps([self.path('in', L)], self.path('doc', L),
                                       self.path('out', L), layer_arg,
                                       warc=(self.path('warc_index', L), 'mrcrawl-L' + L))
        todo += [('optimize', MROptimize, db_in + [self.path('out', L)],
                  self.path('crawldb', L), layer_arg)]
        if more:
            gen_in = [self.path('crawldb', L)]
            if self.conf['generate']['strategy'] == 'pagerank':
                # Partial PageRank of the graph so far, every pagerank_every layers;
                # generate reads the newest one.
                every = self.conf['generate']['pagerank_every']
                if layer % every == 0:
                    todo.append(('pagerank', MRPageRank, [self.path('crawldb', L)] + [
                        self.path('out', _layer(n)) for n in range(layer + 1)],
                        self.path('pagerank', L), layer_arg))
                gen_in.append(self.path('pagerank', _layer(layer - layer % every)))
            todo.append(('generate', MRGenerate, gen_in,
                         self.path('in', _layer(layer + 1)),
                         ['--max-depth', str(self.depth), '--layer', str(layer + 1)]))
        for kind, job_cls, inputs, final, args in todo:
            runner = None
            if kind == 'fetch':   # the plan is known only once its step ran
                self.wait_between_fetches()
                if self.fetch_inline(urls_in, hosts_in, L):
                    runner, args = 'inline', args + ['--bins', '1']
                elif self.runner == 'hadoop' and not self._plan_args(L) and \
                        hadoop.one_fetch_reducer(self.conf, urls_in, hosts_in,
                                               self.FETCH_CPU_PER_PAGE):
                    args = args + ['--bins', '1']        # one reduce container
                else:
                    args = args + self._plan_args(L)
            name = '%s-%s' % (kind, L if kind != 'generate' else _layer(layer + 1))
            if kind in ('fetch', 'warc') and self.warc_enabled:
                self.clear_warc_files(final, 'mrcrawl-L' + L)
            steps[kind] = self.run_step(name, job_cls, inputs, final, args, runner)
            if kind == 'fetch':
                self.fetch_ended()
            self.progress('  %-9s %6.1fs%s' % (kind, steps[kind]['seconds'], (
                '  (inline)' if steps[kind].get('runner') == 'inline'
                and self.runner != 'inline' else '')))
            if self.stop_requested():
                # Consumed, so that rerunning the same command continues the crawl.
                self.fs.rm(self.path('STOP'))
                self.progress('STOP file found in %s: stopped after step %s; run the '
                              'same command again to continue' % (self.out, name))
                return steps, True
        self._prune_crawldb(layer)
        return steps, False

    def nothing_fetched(self, cycle):
        """A cycle that found nothing new or due: the outputs still describe the crawl;
        its delta is empty."""
        n = cycle['cycle']
        self.progress('cycle %d: nothing new or due; outputs unchanged' % n)
        xml = self.fs.join(self.path('delta', '%03d' % n), 'xml')
        self.fs.mkdirs(xml)
        self.fs.write_text(self.path('outputs.json'), json.dumps({'build': '%03d' % n}))
        merge = _merge_step(self.report.load_step('merge'), self.report.load_step('mergejoin'))
        return {'merge': merge, 'xml': self.report.load_step('xml'),
                'index': self.report.load_step('index')}

    #: Final outputs, rebuilt for the whole crawl after each cycle or reparse
    #: (OUT/outputs.json names the build they describe).
    FINAL_OUTPUTS = ('current', 'merge_map', 'merged', 'xml', 'index', 'hosts')

    def built(self):
        """The build the final outputs describe: '001' (cycle 1, or a folder from before
        builds were recorded), '002' (cycle 2), '002-reparse1' (its first reparse)."""
        path = self.path('outputs.json')
        if not self.fs.exists(path):
            return '001'
        done = json.loads(self.fs.read_text(path))
        return done.get('build') or '%03d' % done['cycle']

    def final_outputs(self, cycle, build=None):
        """Merge, index and XML over every layer of every cycle; from the second cycle
        on, each URL's current fetch first (MRCurrent); after a first build, the delta
        since the last one (MRDelta: delta/BUILD/xml). Outputs of an earlier build are
        behind: merged/ is kept as prev_merged/ for the delta, the rest rebuilt."""
        from jobs.current import MRCurrent
        from jobs.html_to_xml import MRHtmlToXml
        n = cycle['cycle']
        build = build or '%03d' % n
        outs = [self.path('out', name) for name in self.fs.listdir(self.path('out'))
                if name.isdigit()]
        built = self.built()
        if built != build:
            self.progress('outputs of build %s are behind: rebuilding them as %s' % (
                built, build))
            if self.fs.exists(self.path('merged')) and \
                    not self.fs.exists(self.path('prev_merged')):
                self.fs.rename(self.path('merged'), self.path('prev_merged'))
            for name in self.FINAL_OUTPUTS:
                self.fs.rm(self.path(name))
            self.fs.write_text(self.path('outputs.json'), json.dumps({'build': build}))
        self.progress('merge: %d layer(s)' % len(outs))
        sources = outs
        if n > 1:
            self.run_step('current', MRCurrent, outs, self.path('current'))
            sources = [self.path('current')]
        group = self.merge_group(sources)
        # Columnar index (Parquet): pages + merge_map/ -> index/, hosts/ (drivers/index.py),
        # here because it reads every page as MRMerge just did: on a crawl larger than
        # the page cache, run after merged/ and xml/ it read them from disk again.
        from drivers.index import build_index
        index = build_index(self, sources)
        merge = self.merge_join(sources, group, build)
        xml = self.run_step('xml', MRHtmlToXml, [self.path('merged')], self.path('xml'))
        if self.fs.exists(self.path('prev_merged')):
            from jobs.delta import MRDelta
            d = self.path('delta', build)
            delta = self.run_step('delta-' + build, MRDelta, [
                self.path('prev_merged'), self.path('merged')] + sources,
                self.fs.join(d, 'records'), ['--build', build])
            self.run_step('delta-%s-xml' % build, MRHtmlToXml, [self.fs.join(d, 'records')],
                          self.fs.join(d, 'xml'))
            self.fs.rm(self.path('prev_merged'))
            c = delta['counters'].get(C.DELTA, {})
            self.progress('delta: %d added, %d changed, %d deleted, in %s' % (
                c.get(C.DELTA_ADDED, 0), c.get(C.DELTA_CHANGED, 0),
                c.get(C.DELTA_DELETED, 0), self.fs.join(d, 'xml')))
        return {'merge': merge, 'xml': xml, 'index': index}

    def merge_group(self, outs):
        """MRMerge: out/* -> merge_map/ (its step dict). The merge is two jobs,
        so that mrjob drops this one's intermediate files before MRMergeJoin shuffles
        whole pages."""
        from jobs.merge import MRMerge
        if self.fs.exists(self.path('merged')) and not self.fs.exists(self.path('merge_map')):
            return self.report.load_step('merge')   # merged/ by a one-job merge
        return self.run_step('merge', MRMerge, outs, self.path('merge_map'))

    def merge_join(self, outs, group, build):
        """MRMergeJoin: merge_map/ + out/* -> merged/; one step dict for the report's
        merge: both jobs' counters (groups merge, merge_join), their seconds."""
        from jobs.merge_join import MRMergeJoin
        join = self.run_step('mergejoin', MRMergeJoin, [self.path('merge_map')] + outs,
                             self.path('merged'), ['--build', build])
        return _merge_step(group, join)

    # -- WARC -----------------------------------------------------------------------

    @property
    def warc_enabled(self):
        return self.conf['warc']['enabled']

    def warc_args(self, prefix):
        """The arguments of MRWarc and of an archiving MRFetch: where the files go (an
        absolute local path, or the hdfs:// URI and the WebHDFS address the tasks
        upload through) and their name prefix."""
        return ['--warc-prefix', prefix] + self.task_path_args('--warc-dir',
                                                                self.path('warc'))

    def task_path_args(self, option, path):
        """``option PATH`` for a crawl folder the tasks themselves read or write: an
        absolute local path, or the hdfs:// URI with the WebHDFS address and user they
        go through (CrawlJob.add_webhdfs_args)."""
        if self.runner == 'hadoop' or path.startswith('hdfs://'):
            from drivers.hdfs import webhdfs_address
            url, user = webhdfs_address()
            return [option, path, '--webhdfs-url', url, '--hdfs-user', user]
        return [option, os.path.abspath(self.fs.local_path(path))]

    def clear_warc_files(self, final, prefix):
        """Before a WARC step runs (again): remove the files an interrupted run of it left
        (its own prefix only), so a rerun never leaves two copies of a record even if
        it cuts its input into other splits."""
        if self.fs.exists(final):
            return
        self.fs.mkdirs(self.path('warc'))
        for name in self.fs.listdir(self.path('warc')):
            if name.startswith((prefix + '-', '.tmp-' + prefix + '-')):
                self.fs.rm(self.path('warc', name))

    def plan_needed(self, hosts, plan_dir):
        """Run the fetch plan for a layer of *hosts* distinct hosts (None: unknown)?

        Only with fetch.plan, and only when the layer has more hosts than one fetch
        reducer has threads: with fewer, every politeness key (a host, or a coarser IP
        or domain) gets its own thread at once in whatever reducer it lands, so placing
        keys cannot shorten the layer, and the plan would be a job for nothing. A plan
        already made (a resumed crawl) is used.
        """
        if not self.conf['fetch']['plan']:
            return False
        if self.fs.exists(plan_dir):
            return True
        return hosts is None or hosts > self.conf['fetch']['threads']

    def _plan_args(self, L):
        """``--plan FILE`` for the fetch of layer L, if its plan placed any key."""
        part = self.fs.join(self.path('plan', L), 'part-00000')
        return ['--plan', part] if self.fs.exists(part) else []

    def _prune_crawldb(self, layer):
        """Keep the two newest crawl database versions (the newest and its backup)."""
        for name in self.fs.listdir(self.path('crawldb')):
            if name.isdigit() and int(name) < layer - 1:
                self.fs.rm(self.path('crawldb', name))

    def finish(self, cycles, merge=None, xml=None, stopped=False, index=None):
        """report.json (every cycle's layers) and report.html; OUT/tmp goes."""
        done = cycles.all()
        build = self.built() if merge is not None else None
        report = self.report.write(layer_rows(done), merge, xml, stopped, index, done, build)
        self.progress(self.report.format_summary(report))
        try:
            from drivers.report_html import write_report_html
            self.progress('html report: %s' % write_report_html(self.out, self.fs, report,
                                                                 self.conf))
        except Exception as e:   # the crawl itself is done and saved; say why, go on
            log.warning('html report not written: %s: %s', type(e).__name__, e)
        self.fs.rm(self.path('tmp'))
        return report
