"""OptimizerDriver: the crawl database and the next layer (the design's OptimizerDriver).

    optimize  crawldb/L-1 + meta/L    -> crawldb/L  (MROptimize: an exact join of the
              (or out/L)                             layer's links against every URL
                                                     the crawl knows; Nutch's updatedb)
    pagerank  crawldb/L + out/0..L    -> pagerank/L (MRPageRank; generate.strategy =
                                                     pagerank, every K layers)
    generate  crawldb/L (+ pagerank)  -> in/L+1     (MRGenerate: the next layer's URLs,
                                                     by strategy and caps; Nutch's
                                                     generate)

A later cycle's first layer is a generate too (:meth:`OptimizerDriver.cycle_generate`):
what the crawl database holds that is new within the depth or due again, plus new
seeds (joined with the database only when they are not the seeds of an earlier layer:
OUT/seeds/injected.json). Only the two newest crawl database versions are kept.
"""
import hashlib
import json

from drivers.folder import layout
from drivers.folder.cycles import layer_name
from drivers.runtime.part_files import read_lines, write_lines
from jobs.generate import MRGenerate
from jobs.lib import counters as C
from jobs.lib.records import now_iso
from jobs.optimize import MROptimize
from jobs.pagerank import MRPageRank


class OptimizerDriver:
    def __init__(self, crawl):
        self.crawl = crawl
        self.conf = crawl.conf

    def update(self, layer, steps):
        """crawldb/L-1 + meta/L -> crawldb/L: the fetch's page records without their
        text when it wrote them all (CrawlerDriver.meta_whole), a twentieth
        of out/L's bytes, so a layer's update usually fits in the driver
        (hadoop.local_max_bytes) instead of a YARN job; else out/L itself.

        A small layer (meta/L at most runner.task_keys_max_bytes) is given to every map
        task again (MROptimize --layer-pages): the db line of a URL none of its pages
        names leaves the mapper as read, unshuffled, as the reducer would write it. So
        the update of a layer of 199 pages does not sort a database of 90,000 URLs."""
        c, L = self.crawl, layer_name(layer)
        db_in = [c.path(layout.CRAWLDB, layer_name(layer - 1))] if layer else []
        meta, final = c.crawler.meta_whole(L), c.path(layout.CRAWLDB, L)
        args, passed, pages = ['--layer', str(layer), '--max-depth', str(c.depth)], None, \
            c.path(layout.LAYER_PAGES)
        most = c.conf['runner']['task_keys_max_bytes']
        ran = not c.fs.exists(final)
        if db_in and meta and most > 0 and ran and c.fs.size(meta) <= most:
            write_lines(c, pages, read_lines(c, meta))
            passed = c.path(layout.OPTIMIZE_PASS)
            args += ['--layer-pages', c.fs.join(pages, 'part-00000')] + \
                c.task_path_args('--pass-dir', passed)
        step = c.layer_step(steps, 'optimize', 'optimize-' + L, MROptimize,
                            db_in + [meta or c.path(layout.PAGES, L)], final, args, passed=passed)
        if passed:
            c.fs.rm(pages)
        if ran:      # its unfetched_within_depth_total is exact at this depth (generate)
            step['max_depth'] = c.depth
            c.report.save_step('optimize-' + L, step)

    def generate(self, layer, steps, resources_only=False):
        """crawldb/L (+ its PageRank) -> in/L+1: the URLs of the next layer (only the
        secondary resources after a cycle's last layer, *resources_only*)."""
        c, L = self.crawl, layer_name(layer)
        nxt = layer_name(layer + 1)
        opt = steps['optimize']['counters'].get(C.OPTIMIZE, {})
        if steps['optimize'].get('max_depth') == c.depth and C.DB_RECORDS in opt and \
                not opt.get(C.UNFETCHED_WITHIN_DEPTH) and not c.fs.exists(c.path(layout.IN, nxt)):
            # crawldb/L holds no URL it could select: an empty layer, without a job
            # (its step saved first, as run_step does: in/ marks it done).
            steps['generate'] = step = {'counters': {C.GENERATE: {}}, 'seconds': 0.0,
                                        'made_by': 'optimize'}
            c.report.save_step('generate-' + nxt, step)
            c.fs.mkdirs(c.path(layout.IN, nxt))
            c.progress('  %-9s   none  (no unfetched URL within depth %d)' % (
                'generate', c.depth))
            return
        gen_in = [c.path(layout.CRAWLDB, L)]
        if self.conf['generate']['strategy'] == 'pagerank' and not resources_only:
            # Partial PageRank of the graph so far, every pagerank_every layers;
            # generate reads the newest one, made now if that layer made none (its
            # generate skipped, or its cycle ended there).
            base = layer - layer % self.conf['generate']['pagerank_every']
            if base == layer or not c.fs.exists(c.path(layout.PAGERANK, layer_name(base))):
                base = layer
                outs = [c.path(layout.PAGES, layer_name(n)) for n in range(layer + 1)]
                c.layer_step(steps, 'pagerank', 'pagerank-' + L, MRPageRank,
                             [c.path(layout.CRAWLDB, L)] + outs, c.path(layout.PAGERANK, L),
                             ['--layer', str(layer)])
            gen_in.append(c.path(layout.PAGERANK, layer_name(base)))
        c.layer_step(steps, 'generate', 'generate-' + nxt, MRGenerate, gen_in,
                     c.path(layout.IN, nxt), ['--max-depth', str(c.depth), '--layer',
                                         str(layer + 1), '--now', now_iso()]
                     + (['--resources-only'] if resources_only else [])
                     + c.crawler.plan_sums_args(nxt))

    def cycle_generate(self, cycle, seeds_path):
        """A later cycle's first layer: crawldb -> in/FIRST (MRGenerate in cycle mode:
        unfetched within the depth, due again at the cycle's time, new seeds)."""
        c = self.crawl
        first = cycle['first_layer']
        inputs = [c.path(layout.CRAWLDB, layer_name(first - 1))]
        args = ['--recrawl-at', cycle['at'], '--max-depth', str(c.depth),
                '--layer', str(first)]
        text = None
        if seeds_path or c.site_entries():      # new seeds and sites' entry URLs
            seeds_dir = c.path(layout.SEEDS, '%03d' % cycle['cycle'])
            if c.fs.exists(seeds_dir):          # a resumed cycle: its seeds' join input
                text = c.fs.read_text(c.fs.join(seeds_dir, 'part-00000'))
            else:
                text = self.seed_lines(c.read_seeds(seeds_path).good)
                if self.digest(text) in self.injected():
                    c.progress('seeds: the same as a layer had before, all in the crawl '
                               'database: not joined with it again')
                    text = None
                else:
                    tmp = c.path(layout.SEEDS_TMP)
                    c.fs.rm(tmp)
                    c.fs.mkdirs(tmp)
                    c.fs.write_text(c.fs.join(tmp, 'part-00000'), text)
                    c.fs.mkdirs(c.path(layout.SEEDS))
                    c.fs.rename(tmp, seeds_dir)
            if text is not None:
                inputs.append(seeds_dir)
                args.append('--inject')
        step = c.run_step('generate-%s' % layer_name(first), MRGenerate, inputs,
                          c.path(layout.IN, layer_name(first)),
                          args + c.crawler.plan_sums_args(layer_name(first)))
        if text is not None:
            self.seeds_injected(text)
        return step

    @staticmethod
    def seed_lines(good):
        """The ``url`` records of the seeds *good*: in/000, or a later cycle's seeds/."""
        return ''.join(json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n'
                       for u in good)

    @staticmethod
    def digest(text):
        return hashlib.sha256(text.encode()).hexdigest()

    def injected(self):
        """The SHA-256 digests of the seeds (their :meth:`seed_lines`) a layer took:
        in/000, or a cycle's seeds' join (OUT/seeds/injected.json). Each of those seeds
        is in the crawl database (a URL that entered a layer comes out of it with a
        status), so the join would only count them known: a crawl rerun on a schedule
        with its seeds file skips that pass over the whole database."""
        path = self.crawl.path(layout.SEEDS, layout.INJECTED)
        fs = self.crawl.fs
        return json.loads(fs.read_text(path))['sha256'] if fs.exists(path) else []

    def seeds_injected(self, text):
        """Record that seeds of this text are in the crawl database."""
        done, digest = self.injected(), self.digest(text)
        if digest not in done:
            self.crawl.fs.mkdirs(self.crawl.path(layout.SEEDS))
            self.crawl.fs.write_text(self.crawl.path(layout.SEEDS, layout.INJECTED),
                                     json.dumps({'sha256': done + [digest]}))

    @staticmethod
    def generated(step):
        """(URLs, hosts or None) a generate step put into its layer."""
        gen = step['counters'].get(C.GENERATE, {})
        return gen.get(C.GENERATED, 0), gen.get(C.GENERATED_HOSTS)

    def prune(self, layer):
        """Keep the two newest crawl database versions (the newest and its backup)."""
        c = self.crawl
        for name in c.fs.listdir(c.path(layout.CRAWLDB)):
            if name.isdigit() and int(name) < layer - 1:
                c.fs.rm(c.path(layout.CRAWLDB, name))
