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
    invertlinks out/* -> anchors/  (MRInvertLinks: anchor texts per link target)
    merge   out/* + anchors/ -> merge_map/  (MRMerge: who folds into whom, on summaries)
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
import json
import logging
import os
import tempfile
import threading
import time

from drivers import fs as fslib, hadoop
from drivers.report import Report
from drivers.seeds import read_seeds
from jobs.lib import counters as C, urls
from jobs.lib.records import now_iso

log = logging.getLogger('mrcrawl')


def local_runner_args():
    """mrjob switches for ``-r local``.

    - ``--no-bootstrap-mrjob``: the local runner's tasks run this interpreter, which has
      mrjob installed; zipping mrjob for every job and importing it from the zip in every
      task cost a third of a CPU-bound crawl's time (bench/README.md).
    - ``--sort-bin`` with ``-S 64M``: the shuffle's sort (GNU sort, on the reducer key
      alone, stable, as mrjob's default) with a bounded buffer (unbounded, GNU sort's
      grows with the input: bench/crawldb_update.py). With ``--batch-size=256`` it merges
      up to 256 sorted runs of 64 MB (16 GB of input) in one pass where its default of
      16 took several.
    """
    return ['--no-bootstrap-mrjob', '--sort-bin',
            "sort -t '\t' -k 1,1 -s -S 64M --batch-size=256"] + TASK_ENV_ARGS


#: Task environment on every runner. setuptools replaces the stdlib's distutils (which
#: mrjob 0.7.4 imports) with its own copy unless told not to; the copy costs ~0.1 s of
#: every task's start-up.
TASK_ENV_ARGS = ['--cmdenv', 'SETUPTOOLS_USE_DISTUTILS=stdlib']


def _preload_report_libraries():
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except Exception:      # report.html reports its own failure when it runs
        pass


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
        self._next_fetch_at = 0.0     # monotonic time the next layer's fetch may start

    @property
    def fused_parse(self):
        """fetch.parse: the fetch job parses and writes out/; no parse job, no doc/."""
        return bool(self.conf['fetch'].get('parse', True))

    def fetch_parse_steps(self, inputs, doc, out, args=(), plan_args=(), warc=None):
        """(kind, job, inputs, output, args) of a layer's fetch, warc and parse steps.

        *warc*: (its warc_index folder, the file-name prefix), used with warc.enabled;
        MRWarc reads the fetch's output (out/ pages that kept their bodies, or doc/).
        A layer whose doc/ a run with fetch.parse = false left is finished that way
        (resumed: nothing is fetched twice).
        """
        from jobs.fetch import MRFetch
        from jobs.parse import MRParse
        from jobs.warc import MRWarc
        args, plan_args = list(args), list(plan_args)
        fused = self.fused_parse and not self.fs.exists(doc)
        fetched = out if fused else doc
        todo = [('fetch', MRFetch, inputs, fetched, args + plan_args)]
        if warc is not None and self.warc_enabled:
            index, prefix = warc
            todo.append(('warc', MRWarc, [fetched], index, args + self.warc_args(prefix)))
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

    def inject(self, seeds_path):
        """Seeds file -> in/000 (skipped if in/000 exists: a resumed crawl)."""
        final = self.path('in', _layer(0))
        if self.fs.exists(final):
            return self.report.load_step('inject')
        try:
            seeds = read_seeds(seeds_path, self.conf['filter']['max_url_length'],
                               normalize=urls.normalizer(self.conf))
        except OSError as e:
            raise CrawlError('cannot read seeds file %s: %s' % (seeds_path, e.strerror or e))
        info = seeds.as_dict()
        bad = sum(seeds.bad.values())
        if bad:
            self.progress('seeds: %d bad line(s) skipped: %s' % (bad, ', '.join(
                '%s=%d' % kv for kv in sorted(seeds.bad.items()))))
            for ex in seeds.examples[:5]:
                self.progress('  line %d (%s): %s' % (ex[0], ex[1], ex[2]))
        if not seeds.good:
            raise CrawlError('no valid seed URL in %s (%d bad line(s))' % (seeds_path, bad))
        tmp = self.path('tmp', 'inject')
        self.fs.rm(tmp)
        self.fs.mkdirs(tmp)
        self.fs.write_text(self.fs.join(tmp, 'part-00000'), ''.join(
            json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n' for u in seeds.good))
        step = {'counters': {'inject': {'seeds_total': len(seeds.good),
                                        'seeds_bad_total': bad,
                                        'seed_hosts_total': len({urls.host(u)
                                                                 for u in seeds.good})}},
                'seeds': info, 'seconds': 0.0}
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
        return ['-r', runner_name, '--crawl-conf', self._conf_file, '--output-dir',
                self.fs.local_path(out) if self.runner != 'hadoop' else out,
                ] + runner_args + list(extra_args) + list(inputs)

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
        limit = self.conf.get('runner', {}).get('inline_fetch_max_urls', 0)
        uber = self.conf.get('runner', {}).get('uber_max_bytes', 0)
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

    def run(self, seeds_path):
        from jobs.generate import MRGenerate
        from jobs.html_to_xml import MRHtmlToXml
        from jobs.optimize import MROptimize
        from jobs.pagerank import MRPageRank
        from jobs.plan_fetch import MRPlanFetch

        self.prepare()
        # report.html's plotting library loads while the first layer waits on the network.
        threading.Thread(target=_preload_report_libraries, daemon=True).start()
        inject = self.inject(seeds_path)
        urls_in = inject['counters']['inject']['seeds_total']
        hosts_in = inject['counters']['inject'].get('seed_hosts_total')
        layers_done = []
        for layer in range(self.depth + 1):
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
            if layer < self.depth:
                gen_in = [self.path('crawldb', L)]
                if self.conf['generate']['strategy'] == 'pagerank':
                    # Partial PageRank of the graph so far, every pagerank_every layers;
                    # generate reads the newest one.
                    if layer % self.conf['generate']['pagerank_every'] == 0:
                        todo.append(('pagerank', MRPageRank, [self.path('crawldb', L)] + [
                            self.path('out', _layer(n)) for n in range(layer + 1)],
                            self.path('pagerank', L), layer_arg))
                    gen_in.append(self.path('pagerank', _layer(
                        layer - layer % self.conf['generate']['pagerank_every'])))
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
                if kind == 'warc':
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
                    return self.finish(layers_done, stopped=True)
            self._prune_crawldb(layer)
            row = self.report.layer_row(layer, urls_in, steps)
            layers_done.append(row)
            self.progress(self.report.format_row(row))
            if 'generate' not in steps:
                break
            generated = steps['generate']['counters'].get(C.GENERATE, {}).get(C.GENERATED, 0)
            if not generated:
                self.progress('layer %s: no URL to fetch; stopping' % _layer(layer + 1))
                break
            urls_in = generated
            hosts_in = steps['generate']['counters'].get(C.GENERATE, {}).get(C.GENERATED_HOSTS)
        outs = [self.path('out', _layer(n)) for n in range(len(layers_done))]
        self.progress('merge: %d layer(s)' % len(outs))
        from jobs.invert_links import MRInvertLinks
        self.run_step('invertlinks', MRInvertLinks, outs, self.path('anchors'))
        group = self.merge_group(outs)
        # Columnar index (Parquet): out/* + merge_map/ -> index/, hosts/ (drivers/index.py),
        # here because it reads every layer's out/ as MRMerge just did: on a crawl larger
        # than the page cache, run after merged/ and xml/ it read out/ from disk again.
        from drivers.index import build_index
        index = build_index(self, outs)
        merge = self.merge_join(outs, group)
        xml = self.run_step('xml', MRHtmlToXml, [self.path('merged')], self.path('xml'))
        return self.finish(layers_done, merge=merge, xml=xml, index=index)

    def merge_group(self, outs):
        """MRMerge: out/* + anchors/ -> merge_map/ (its step dict). The merge is two jobs,
        so that mrjob drops this one's intermediate files before MRMergeJoin shuffles
        whole pages."""
        from jobs.merge import MRMerge
        if self.fs.exists(self.path('merged')) and not self.fs.exists(self.path('merge_map')):
            return self.report.load_step('merge')   # merged/ by a one-job merge
        return self.run_step('merge', MRMerge, outs + [self.path('anchors')],
                             self.path('merge_map'))

    def merge_join(self, outs, group):
        """MRMergeJoin: merge_map/ + out/* -> merged/; one step dict for the report's
        merge: both jobs' counters (groups merge, merge_join), their seconds."""
        from jobs.merge_join import MRMergeJoin
        join = self.run_step('mergejoin', MRMergeJoin, [self.path('merge_map')] + outs,
                             self.path('merged'))
        counters = dict(group['counters'])
        counters.update(join['counters'])
        return {'counters': counters, 'seconds': round(group['seconds'] + join['seconds'], 3)}

    # -- WARC -----------------------------------------------------------------------

    @property
    def warc_enabled(self):
        return bool(self.conf.get('warc', {}).get('enabled'))

    def warc_args(self, prefix):
        """MRWarc's arguments: where the files go (an absolute local path, or the hdfs://
        URI and the WebHDFS address the tasks upload through) and their name prefix."""
        warc_dir = self.path('warc')
        args = ['--warc-prefix', prefix]
        if self.runner == 'hadoop' or warc_dir.startswith('hdfs://'):
            from drivers.hdfs import webhdfs_address
            url, user = webhdfs_address()
            args += ['--webhdfs-url', url, '--hdfs-user', user]
        else:
            warc_dir = os.path.abspath(self.fs.local_path(warc_dir))
        return args + ['--warc-dir', warc_dir]

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

    # -- re-crawl -------------------------------------------------------------------

    def recrawl(self, at=None):
        """One re-crawl round over the newest crawl database, into OUT/recrawl/RRR/.

            generate --recrawl-at AT  newest crawldb        -> RRR/in   (due URLs + validators)
            plan, fetch (+ parse)     RRR/in                -> RRR/out (+ RRR/doc)
            optimize                  newest crawldb + out  -> RRR/crawldb (intervals adapted)
            warc                      RRR/doc               -> warc/mrcrawl-RRRR-*.warc.gz,
                                                               RRR/warc_index (warc.enabled)
            changes                   RRR/out               -> RRR/changes (changed + gone)
            xml                       RRR/changes           -> RRR/xml  (documents + deletions)

        A round whose xml/ is missing is resumed (same AT, from its round.json); else a
        new round starts. Returns the round's summary dict.
        """
        from drivers.db import newest_crawldb
        from jobs.changes import MRChanges
        from jobs.generate import MRGenerate
        from jobs.html_to_xml import MRHtmlToXml
        from jobs.optimize import MROptimize
        from jobs.plan_fetch import MRPlanFetch

        self.prepare()
        rounds = sorted(n for n in self.fs.listdir(self.path('recrawl')) if n.isdigit())
        if rounds and not self.fs.exists(self.path('recrawl', rounds[-1], 'xml')):
            rnd = rounds[-1]
            info = json.loads(self.fs.read_text(self.path('recrawl', rnd, 'round.json')))
        else:
            try:
                db_in = newest_crawldb(self.out)
            except FileNotFoundError as e:
                raise CrawlError('%s: run `mrcrawl crawl` first' % e)
            rnd = _layer(int(rounds[-1]) + 1 if rounds else 1)
            info = {'at': at or now_iso(), 'crawldb': db_in}
            self.fs.mkdirs(self.path('recrawl', rnd))
            self.fs.write_text(self.path('recrawl', rnd, 'round.json'), json.dumps(info))
        base = self.path('recrawl', rnd)
        self.progress('re-crawl round %s: pages due at %s, from %s' % (
            rnd, info['at'], info['crawldb']))
        p = lambda *parts: self.fs.join(base, *parts)   # noqa: E731
        steps = {}
        name = 'recrawl-%s-' % rnd
        steps['generate'] = self.run_step(name + 'generate', MRGenerate, [info['crawldb']],
                                          p('in'), ['--recrawl-at', info['at']])
        due = steps['generate']['counters'].get(C.GENERATE, {}).get(C.GENERATED, 0)
        self.progress('  %d URL(s) due' % due)
        hosts = steps['generate']['counters'].get(C.GENERATE, {}).get(C.GENERATED_HOSTS)
        if self.plan_needed(hosts, p('plan')):
            steps['plan'] = self.run_step(name + 'plan', MRPlanFetch, [p('in')], p('plan'))
        part = p('plan', 'part-00000')
        plan_args = ['--plan', part] if self.fs.exists(part) else []
        for kind, job_cls, inputs, final, args in self.fetch_parse_steps(
                [p('in')], p('doc'), p('out'), plan_args=plan_args,
                warc=(p('warc_index'), 'mrcrawl-R' + rnd)):
            if kind == 'warc':
                self.clear_warc_files(final, 'mrcrawl-R' + rnd)
            steps[kind] = self.run_step(name + kind, job_cls, inputs, final, args)
        steps['optimize'] = self.run_step(name + 'optimize', MROptimize,
                                          [info['crawldb'], p('out')], p('crawldb'))
        steps['changes'] = self.run_step(name + 'changes', MRChanges, [p('out')], p('changes'))
        steps['xml'] = self.run_step(name + 'xml', MRHtmlToXml, [p('changes')], p('xml'))
        row = self.report.layer_row(0, due, steps)
        ch = steps['changes']['counters'].get('changes', {})
        summary = {'round': rnd, 'at': info['at'], 'due': due, 'fetch': row,
                   'changed': ch.get('changed_total', 0),
                   'unchanged': ch.get('unchanged_total', 0),
                   'not_modified': ch.get('not_modified_total', 0),
                   'deleted': ch.get('deleted_total', 0),
                   'xml': p('xml'), 'crawldb': p('crawldb')}
        self.fs.write_text(p('report.json'), json.dumps(summary, indent=1, sort_keys=True))
        self.progress('re-crawl round %s: %d due, %d changed, %d unchanged (%d answered 304), '
                      '%d gone; new documents and deletions in %s' % (
                          rnd, due, summary['changed'],
                          summary['unchanged'] + summary['not_modified'],
                          summary['not_modified'], summary['deleted'], p('xml')))
        self.fs.rm(self.path('tmp'))
        os.remove(self._conf_file)
        self._conf_file = None
        return summary

    def finish(self, layers, merge=None, xml=None, stopped=False, index=None):
        report = self.report.write(layers, merge, xml, stopped, index)
        self.progress(self.report.format_summary(report))
        try:
            from drivers.report_html import write_report_html
            self.progress('html report: %s' % write_report_html(self.out, self.fs, report,
                                                                 self.conf))
        except Exception as e:   # the crawl itself is done and saved; say why, go on
            log.warning('html report not written: %s: %s', type(e).__name__, e)
        self.fs.rm(self.path('tmp'))
        if self._conf_file:
            os.remove(self._conf_file)
            self._conf_file = None
        return report
