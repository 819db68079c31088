"""CrawlerDriver: a layer's fetch (the design's CrawlerDriver).

    plan   in/L              -> plan/L   (which fetch list holds which big host; fetch.plan,
                                          many hosts only: placed from the costs
                                          generate summed, plan_sums/L, else MRPlanFetch)
    fetch  in/L (+ plan/L,   -> out/L    (MRFetch: fetch lists, then a map-only fetch;
           crawldb/L-1)         + meta/L  with fetch.parse it parses each page too, and
                                          writes the WARC files and meta/L, the pages
                                          without their text, itself, and changes/L
                                          (drivers/later/affected_current.py); the crawl
                                          database names the URLs requested before)
      or, with fetch.parse = false:
    fetch  in/L (+ ...)      -> doc/L    (MRFetch: documents with their bodies)
    warc   doc/L             -> warc/*.warc.gz + warc_index/L   (MRWarc, warc.enabled)

It also decides where the fetch runs: in the driver's process for a small layer (of a
local crawl or, fewer URLs than a YARN job is worth, of a Hadoop crawl), as one fetch
list for a small layer on YARN, else as fetch.reducers lists
(on YARN, the lists of a small layer are made in the driver: drivers/runtime/hadoop.py run_cut).
Politeness between layers is kept by the fetch tasks themselves: robots/L holds when each
politeness key's last request of layer L ended (``pace`` records), and a later layer's
lists join it, so a key's first request waits out the delay from there. The next layer
starts as soon as it is generated; only the keys that were just asked wait.
"""
import os
import time

import orjson

from drivers.folder import layout
from drivers.folder.cycles import layer_name
from drivers.runtime import hadoop
from drivers.runtime.part_files import read_lines, write_lines
from jobs.fetch import MRFetch
from jobs.lib import counters as C, keyqueue, plan
from jobs.plan_fetch import MRPlanFetch
from jobs.warc import MRWarc


class CrawlerDriver:
    #: CPU seconds one fetched page costs its fetch task (HTTP and the fused parse),
    #: rounded up from the CPU-bound benchmark (bench/README.md, cpu1x).
    FETCH_CPU_PER_PAGE = 0.02
    #: Seconds a local fetch task's process takes to start (a fork, the job's imports).
    TASK_START_SECONDS = 1.5

    def __init__(self, crawl):
        self.crawl = crawl
        self.conf = crawl.conf
        self.summed = set()     # layers whose generate summed plan costs in this run
        self._cores = None

    def fetch(self, layer, urls_in, hosts_in, steps):
        """Plan (if needed), fetch and, without fetch.parse, archive layer *layer*; each
        step's dict goes into *steps* by kind."""
        c, L = self.crawl, layer_name(layer)
        args = ['--layer', str(layer)]
        # The crawl database too: each key's list names the URLs it has requested, so a
        # redirect to one of them is not followed (MRFetch, known_target).
        db = c.path(layout.CRAWLDB, layer_name(layer - 1)) if layer else None
        inputs = [c.path(layout.IN, L)] + ([db] if db and c.fs.exists(db) else [])
        # Earlier layers' robots.txt answers (reused while politeness.robots_cache_hours
        # allows) and pace records (always).
        inputs += self.robots_read(layer)
        inline = self.fetch_inline(urls_in, hosts_in, L, inputs)
        bins = 1 if inline else self.lists(urls_in, hosts_in)
        if bins > 1 and self.plan_needed(hosts_in, c.path(layout.PLAN, L)):
            self.plan(steps, L, args + ['--bins', str(bins)], bins)
        c.fs.rm(c.path(layout.PLAN_SUMS, L))
        fused = c.parser.fused(layer)
        fetched = c.parser.fetch_output(layer, fused)     # one look for doc/L (HDFS: a call)
        archive = self.warc_args('mrcrawl-L' + L) if c.warc_enabled else []
        runner = 'inline' if inline else None
        fetch_args = ['--bins', str(bins)] + (self.plan_args(L) if bins > 1 else [])
        if self.conf['fetch']['follow_hops']:
            fetch_args = fetch_args + ['--max-depth', str(c.depth)]
        if c.warc_enabled:
            self.clear_warc_files(fetched, 'mrcrawl-L' + L)
        meta = c.path(layout.META, L)
        if fused and not c.fs.exists(fetched):
            changes = c.path(layout.CHANGES, L)
            for folder in (meta, changes):
                c.fs.rm(folder)  # an interrupted run's files: the fetch writes them again
            fetch_args = fetch_args + c.task_path_args('--meta-dir', meta) + \
                c.task_path_args('--changes-dir', changes)
        if not c.fs.exists(fetched):
            c.fs.rm(c.path(layout.ROBOTS, L))     # an interrupted run's files
        fetch_args = fetch_args + c.task_path_args('--robots-dir', c.path(layout.ROBOTS, L))
        if self.conf['media']['store']:
            fetch_args = fetch_args + c.task_path_args('--media-dir', c.path(layout.MEDIA))
        with c.fetching(layer, urls_in):         # its progress line
            c.layer_step(steps, 'fetch', 'fetch-' + L, MRFetch, inputs, fetched,
                         args + fetch_args + (archive if fused else []), runner)
        if fused and c.fs.exists(meta) and not self.meta_whole(L):
            # Every fetch task committed its file: meta/L is whole.
            c.fs.write_text(c.fs.join(meta, '_SUCCESS'), '')
        if archive and not fused:
            index = c.path(layout.WARC_INDEX, L)
            self.clear_warc_files(index, 'mrcrawl-L' + L)
            c.layer_step(steps, 'warc', 'warc-' + L, MRWarc, [fetched], index, args + archive)

    def robots_read(self, layer):
        """robots/ of the cycle's earlier layers (a new cycle starts without it:
        Crawl._new_cycle): the robots.txt answers they read and when they last asked
        each key, for this layer's fetch lists."""
        c = self.crawl
        if not c.fs.exists(c.path(layout.ROBOTS)):
            return []
        return [c.path(layout.ROBOTS, name) for name in sorted(c.fs.listdir(c.path(layout.ROBOTS)))
                if name.isdigit() and int(name) < layer]

    def meta_whole(self, L):
        """meta/L if the fetch of layer L wrote it whole (its _SUCCESS, written above once
        the fetch step succeeded), else None: the jobs that read only page metadata
        (optimize, merge, index) then read out/L."""
        meta = self.crawl.path(layout.META, L)
        return meta if self.crawl.fs.exists(self.crawl.fs.join(meta, '_SUCCESS')) else None

    def lists(self, urls, hosts):
        """Fetch lists (tasks) of a layer of *urls* URLs on *hosts* politeness keys (None:
        unknown): fetch.reducers if set. Else one per core the crawl runs on (this
        machine's; on Hadoop, the cluster's vcores), no more than give each list more
        CPU work (urls x FETCH_CPU_PER_PAGE) than its start costs (TASK_START_SECONDS,
        on Hadoop a container's: hadoop.CONTAINER_SECONDS); one when one core keeps up
        with the hosts (hosts x FETCH_CPU_PER_PAGE <= politeness.delay); at least one
        per keyqueue.keys_in_flight keys, so that every key is in flight at once; never
        more than the keys."""
        n = self.conf['fetch']['reducers']
        if n:
            return n
        cpu = self.FETCH_CPU_PER_PAGE
        if hosts is not None and hosts * cpu <= self.conf['politeness']['delay']:
            n = 1
        else:
            start = hadoop.CONTAINER_SECONDS if self.crawl.runner == 'hadoop' \
                else self.TASK_START_SECONDS
            n = max(1, min(self.cores(), int(urls * cpu // start)))
        if hosts is not None:
            n = min(max(n, -(-hosts // keyqueue.keys_in_flight(self.conf))), max(1, hosts))
        return n

    def cores(self):
        """Cores the fetch tasks run on: the YARN cluster's vcores (asked once a run),
        else this machine's."""
        if self._cores is None:
            vcores = self.crawl.yarn_vcores() if self.crawl.runner == 'hadoop' else None
            if self.crawl.runner == 'hadoop' and vcores is None:
                self.crawl.progress('YARN did not tell its vcores: fetch lists sized '
                                    'by this machine\'s cores')
            self._cores = vcores or os.cpu_count() or 1
        return self._cores

    def fetch_inline(self, urls, hosts, L, inputs):
        """Fetch layer L (*urls* URLs on *hosts* hosts, read from *inputs*) in the
        driver's process, on the inline runner as one fetch list? Only when that one
        task keeps every host in flight at once (hosts <= keyqueue.keys_in_flight), so
        the layer takes the politeness time it takes on several tasks, and when its
        inputs, the crawl database among them, are small enough for the driver:

        - local runner: at most runner.inline_fetch_max_urls URLs, one core keeps up
          with the hosts (hosts x FETCH_CPU_PER_PAGE <= politeness.delay) and the inputs
          total at most runner.uber_max_bytes (0 turns it off): the layer saves its task
          processes' start (~1.5 s) and loses nothing;
        - Hadoop: at most hadoop.driver_fetch_max_urls URLs (0 keeps every fetch on the
          cluster) and hadoop.local_max_bytes of input: the layer saves a YARN job's
          fixed cost (10-20 s) for seconds of the driver's CPU.

        A resumed layer with a fetch plan keeps its lists."""
        c = self.crawl
        if c.runner == 'local':
            limit, most = self.conf['runner']['inline_fetch_max_urls'], \
                self.conf['runner']['uber_max_bytes']
            cpu_ok = hosts is not None and \
                hosts * self.FETCH_CPU_PER_PAGE <= self.conf['politeness']['delay']
        elif c.runner == 'hadoop':
            limit, most = self.conf['hadoop']['driver_fetch_max_urls'], \
                self.conf['hadoop']['local_max_bytes']
            cpu_ok = True
        else:
            return False
        return (limit > 0 and most > 0 and hosts is not None and 0 < urls <= limit
                and hosts <= keyqueue.keys_in_flight(self.conf) and cpu_ok
                and not c.fs.exists(c.path(layout.PLAN, L))
                and c.input_bytes(inputs, most) <= most)

    def plan_needed(self, hosts, plan_dir):
        """Run the fetch plan for a layer of *hosts* distinct hosts (None: unknown)?

        Only with fetch.plan, and only when the layer has more hosts than one fetch
        task keeps in flight (jobs.lib.keyqueue): with fewer, every politeness key (a
        host, or a coarser IP or domain) is in flight at once in whatever list it lands,
        so placing keys cannot shorten the layer, and the plan would be a job for
        nothing. A plan
        already made (a resumed crawl) is used.
        """
        if not self.conf['fetch']['plan']:
            return False
        if self.crawl.fs.exists(plan_dir):
            return True
        return hosts is None or hosts > keyqueue.keys_in_flight(self.conf)

    def plan_sums_args(self, L):
        """MRGenerate's ``--plan-dir`` for in/L (with fetch.plan): each of its tasks sums
        there the cost per politeness key of the URLs it writes, so that the layer's
        plan needs no job of its own (:meth:`plan`)."""
        c = self.crawl
        if not self.conf['fetch']['plan']:
            return []
        if not c.fs.exists(c.path(layout.IN, L)):
            c.fs.rm(c.path(layout.PLAN_SUMS, L))     # an interrupted run's files
            self.summed.add(L)
        return c.task_path_args('--plan-dir', c.path(layout.PLAN_SUMS, L))

    def plan(self, steps, L, args, bins):
        """plan/L, placed in the driver from plan_sums/L when this run's generate wrote
        in/L with them (every task commits its file before the job succeeds); else (the
        seeds' layer, a resumed run, whose settings may differ) made by MRPlanFetch."""
        c = self.crawl
        final, sums = c.path(layout.PLAN, L), c.path(layout.PLAN_SUMS, L)
        if c.fs.exists(final) or L not in self.summed or not c.fs.exists(sums):
            c.layer_step(steps, 'plan', 'plan-' + L, MRPlanFetch, [c.path(layout.IN, L)], final,
                         args)
            return
        start = time.monotonic()
        recs, keys = plan.records([orjson.loads(line) for line in read_lines(c, sums)],
                                  self.conf, bins)
        write_lines(c, c.path(layout.PLAN_TMP), [orjson.dumps(r) for r in recs])
        steps['plan'] = step = {
            'counters': {C.PLAN: {C.PLAN_KEYS: keys, C.PLAN_KEYS_PLACED: len(recs)}},
            'seconds': round(time.monotonic() - start, 3), 'made_by': 'generate'}
        c.report.save_step('plan-' + L, step)          # before plan/ marks it done
        c.fs.mkdirs(c.path(layout.PLAN))
        c.fs.rename(c.path(layout.PLAN_TMP), final)
        c.progress('  %-9s %6.1fs  (from generate\'s sums)' % ('plan', step['seconds']))

    def plan_args(self, L):
        """``--plan FILE`` for the fetch of layer L, if its plan placed any key."""
        c = self.crawl
        part = c.fs.join(c.path(layout.PLAN, L), 'part-00000')
        return ['--plan', part] if c.fs.exists(part) else []

    # -- WARC -----------------------------------------------------------------------

    def warc_args(self, prefix):
        """The arguments of MRWarc and of an archiving MRFetch: where the files go (an
        absolute local path, or the hdfs:// URI and the WebHDFS address the tasks
        upload through) and their name prefix."""
        return ['--warc-prefix', prefix] + self.crawl.task_path_args(
            '--warc-dir', self.crawl.path(layout.WARC))

    def clear_warc_files(self, final, prefix):
        """Before a WARC step runs (again): remove the files an interrupted run of it left
        (its own prefix only), so a rerun never leaves two copies of a record even if
        it cuts its input into other splits."""
        c = self.crawl
        if c.fs.exists(final):
            return
        c.fs.mkdirs(c.path(layout.WARC))
        for name in c.fs.listdir(c.path(layout.WARC)):
            if name.startswith((prefix + '-', '.tmp-' + prefix + '-')):
                c.fs.rm(c.path(layout.WARC, name))
