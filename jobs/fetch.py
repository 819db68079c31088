"""MRFetch (CrawlerDriver): fetch one layer's URLs politely, and parse them.

Reads ``url`` records (in/NNN) and writes exactly one record per input URL, with status
fetched, not_modified, http_error, network_error, robots_denied, filtered, deferred or
redirected (see jobs.lib.records):

- ``fetch.parse = true`` (default; Nutch's fetcher.parse): a ``page`` record (out/NNN),
  the document parsed in the fetch task by jobs.lib.parsepage.PageParser, as MRParse
  would, as it arrives, while the keys wait out their delays: the layer has no parse
  job. Parse counters go to the ``parse`` group. The body is dropped, as
  MRParse drops it; with ``--warc-dir`` (``warc.enabled``) it is archived first: each
  fetch task writes one WARC file (warc/PREFIX-fNNNNN.warc.gz, counters in the
  ``warc`` group) and each page record points at its record (warc_filename,
  warc_record_offset, warc_record_length, warc_type), which `mrcrawl reparse` reads.
  With ``--meta-dir`` each fetch task also writes its pages' ``meta`` records (the page
  record without its text, jobs.lib.sidefile) to meta/NNN/part-fNNNNN: the crawl
  database update reads those, a twentieth of out/NNN's bytes, instead of the pages;
  with ``--changes-dir`` the URLs whose current fetch they may change (changes/NNN).
- ``fetch.parse = false``: a ``doc`` record with the body (doc/NNN), for MRParse.

Two steps, as Nutch's generate makes fetch lists and its fetcher is map-only:

1. **fetch lists.** The mapper computes each URL's politeness key (``politeness.key``:
   host, IP address or registered domain) and sends the URL to one of
   ``fetch.reducers`` bins; the reducer writes each bin as one file (one reduce task
   per bin on every runner: jobs.base.KEY_PARTITIONS). With the crawl database as a
   second input (``db`` records, crawldb/L-1), each key's list also names the URLs the
   crawl has requested before (``known`` lines: status fetched, redirected, gone or
   failed, not as a redirect's target), an exact join per key: a redirect to one of
   them is not followed (reason ``known_target``), so no page is fetched twice through
   an old URL that now redirects to it; a key with no URL in this layer gets none. With
   ``fetch.follow_hops`` they also name the key's other URLs the crawl holds (``held``
   lines: unfetched, not yet due), which in-fetch following must not fetch either.
   ``robots`` records (robots/*: the robots.txt answers earlier layers of the cycle
   read, jobs.lib.robots.Rules.record) join the same way, so a host's robots.txt is
   read once per ``politeness.robots_cache_hours``, not once per layer; each fetch
   task writes the answers it read itself to --robots-dir. So do ``pace`` records,
   when each key's last request of the layer ended: a key's first request in a later
   layer comes ``politeness.delay`` after it, however soon that layer starts (the
   clocks of a cluster's machines agree to well within a delay, NTP), and ``task``
   records: each task's URLs, pages fetched and seconds (report.html).
2. **fetch** (map only). Each map task reads one list whole (jobs.base.WHOLE_FILES),
   regroups it by politeness key and keeps every key in flight at once (as many as
   ``fetch.keys_memory_mb`` holds: jobs.lib.keyqueue), one connection per key with
   ``politeness.delay`` between its requests. A key waiting out its delay holds no
   thread; up to ``fetch.threads`` threads serve whichever key is due. Its main
   thread parses the pages as they come. ``fetch.time_budget`` bounds each task's
   time: what is left when it runs out is deferred to the next layer, never lost.
   With ``fetch.follow_hops`` a key whose list is done goes on to the same-key links
   of the pages it fetched (jobs.lib.follow) while the task still has listed URLs to
   fetch and no key waits to start: the parse hands each page's links back (a
   jobs.lib.follow.Reply) before the key goes on.

A Hadoop crawl makes small layers' lists in the driver (hadoop.local_max_bytes, drivers/
hadoop.py run_cut): the YARN job that holds the layer's time has no shuffle. Bins, not one
list per host: the lists are the tasks, ``fetch.reducers`` of them at once, none waiting
for a second wave. A key goes to the bin the fetch plan chose by predicted cost (``--plan``,
MRPlanFetch: largest first on the least loaded bin), else to crc32(key) mod bins; the
bin's shuffle key is a label whose KeyFieldBasedPartitioner hash is that bin (plan.label_for).

Run alone (inline: a script runs on mrjob's own runners, whose local runner would split
a fetch list between tasks; a crawl runs it through drivers/runtime/launch.py)::

    python -m jobs.fetch -r inline --crawl-conf crawl/conf.json --layer 0 crawl/in/000 -o /tmp/doc
"""
import contextlib
import functools
import itertools
import os
import queue
import socket
import threading
import time
import zlib

from mrjob.step import MRStep

from jobs.base import KEY_PARTITIONS, WHOLE_FILES, CrawlJob
from jobs.lib import (counters as C, fetcher, follow, keyqueue, parsepage, plan, politeness,
                      records as R, robots)
from jobs.lib.merging import mark_kept
from jobs.lib.netpolicy import Resolver
from jobs.lib.render import Renderer
from jobs.lib.routes import Routes

_INVALID_KEY = ''   # politeness key of URLs that cannot be fetched at all
_DB_LINES = ('known', 'held', 'robots', 'pace')   # a fetch list's lines that are no URL to fetch
_RESULTS_WAITING = 64  # documents waiting for the parse at most (each up to max_body_bytes)


def _by_priority(rec):
    """Sort key of a url record: the highest ``priority`` first (none: last); stable."""
    p = rec.get('priority')
    return -p if isinstance(p, (int, float)) else float('inf')


class MRFetch(CrawlJob):
    COUNTER_GROUP = C.FETCH
    INTERNAL_PROTOCOL = plan.LabelKeyProtocol
    YARN_STEPS = 'last'       # the fetch lists of a small layer are made in the driver
    # Hadoop only (mrjob's inline and local runners ignore it): partition by the first
    # space-separated field of the key, the plan's label (or the whole key if none).
    PARTITIONER = 'org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner'

    def configure_args(self):
        super().configure_args()
        self.add_file_arg('--plan', help='Fetch plan (MRPlanFetch output, JSON lines) that '
                          'places big politeness keys in fetch lists. Default: none (hash).')
        self.add_passthru_arg('--warc-dir', default=None,
                              help='Write the fetched responses as WARC files into this '
                              'folder (local path or hdfs:// URI), one per fetch task, '
                              'and point each page record at its record. Default: off.')
        self.add_passthru_arg('--warc-prefix', default='mrcrawl',
                              help='WARC file name prefix, e.g. mrcrawl-L000.')
        self.add_passthru_arg('--meta-dir', default=None,
                              help='With fetch.parse: also write each page record '
                              'without its text into this folder (local path or hdfs:// '
                              'URI), one file per fetch task. Default: off.')
        self.add_passthru_arg('--changes-dir', default=None,
                              help='With --meta-dir: also write the URLs whose current '
                              'fetch may change here (sidefile.MetaSink). Default: off.')
        self.add_passthru_arg('--robots-dir', default=None,
                              help='Write the robots.txt answers this fetch read (robots '
                              'records) and when each politeness key\'s last request '
                              'ended (pace records) into this folder, one file per fetch '
                              'task, for the later layers\' fetch lists. Default: off.')
        self.add_passthru_arg('--media-dir', default=None,
                              help='With media.store: keep resources\' bytes (and '
                              'previews) in this folder, by digest. Default: off.')
        self.add_webhdfs_args('side folder (--warc-dir, --meta-dir, --changes-dir...)')
        self.add_passthru_arg('--max-depth', type=int, default=0,
                              help='Depth fetch.follow_hops never passes. Default: 0.')
        self.add_passthru_arg('--bins', type=int, default=0,
                              help='Fetch lists, in place of fetch.reducers (1: a small '
                              'layer fetched inline). Default: 0 (fetch.reducers).')

    def steps(self):
        bins = plan.bins_of(self.options.bins, self.conf)
        fetch_conf = dict(WHOLE_FILES)
        # A task tells its ApplicationMaster its counters every 1 % of the task timeout
        # by default (6 s; the first after 12): the progress line's interval instead.
        fetch_conf['mapreduce.task.progress-report.interval'] = \
            '%d' % (1000 * self.conf['progress']['seconds'])
        if bins > 1:
            # Uber mode would run the lists one after another in the ApplicationMaster.
            fetch_conf['mapreduce.job.ubertask.enable'] = 'false'
        return [MRStep(mapper_init=self.mapper_init_plan,
                       mapper=self.mapper_key_by_host,
                       reducer=self.reducer_write_list,
                       jobconf={'mapreduce.job.reduces': bins,
                                KEY_PARTITIONS: '-k1,1',
                                'mapreduce.map.output.key.field.separator': ' '}),
                MRStep(mapper_init=self.mapper_init_pool,
                       mapper=self.mapper_take,
                       mapper_final=self.mapper_final_fetch,
                       jobconf=fetch_conf)]

    def mapper_init_plan(self):
        """Load the plan: {politeness key: bin} for the keys it placed."""
        self.bins = plan.bins_of(self.options.bins, self.conf)
        self.follow = self.conf['fetch']['follow_hops'] > 0
        # robots.txt answers read since then are reused (RFC 9309 2.4: at most 24 h).
        pol = self.conf['politeness']
        self.robots_since = time.time() - 3600 * pol['robots_cache_hours']
        self.robots_error_since = time.time() - 60 * pol['robots_error_minutes']
        self.resolver = Resolver.for_conf(self.conf)     # politeness.key = ip resolves
        self.planned = plan.load(self.options.plan, self.bins) if self.options.plan else {}

    def mapper_key_by_host(self, _, line):
        """in/ line -> ('LABEL KEY', [politeness key, url record]); crawldb line of a
        URL requested before -> ('LABEL KEY', [politeness key, known record]), of any
        other URL, with following on -> (..., held record). LABEL is the bin (the
        partition), KEY groups the reducer's calls by politeness key."""
        for rec in self.records(line, 'url', 'db', 'robots', 'pace', 'task'):
            if rec['kind'] == 'task':
                continue       # for report.html, not the lists
            if rec['kind'] == 'pace':
                yield self._list_key(rec['key']), [rec['key'], rec]
                continue
            if rec['kind'] == 'robots':
                if rec['fetched_at'] >= (self.robots_error_since if rec.get('deny_all')
                                         else self.robots_since):
                    key = politeness.politeness_key(rec['url'],
                                                    self.conf['politeness']['key'],
                                                    self.resolver)
                    yield self._list_key(key), [key, rec]
                continue
            if rec['kind'] == 'db':
                # A URL known only as a redirect's end is refreshed through its
                # source (MRGenerate.due): following the redirect is its fetch.
                kind = 'known' if rec.get('status') in R.DB_REQUESTED and \
                    rec.get('reason') != 'redirect_target' else 'held' if self.follow \
                    else None
                key = kind and politeness.fetch_key(rec, self.conf, self.resolver)
                if key is not None:
                    yield self._list_key(key), [key, {'kind': kind, 'url': rec['url']}]
                continue
            self.count(C.URLS_IN)
            key = politeness.fetch_key(rec, self.conf, self.resolver)
            if key is None:
                yield plan.label_for(0, self.bins) + ' ', [_INVALID_KEY, rec]
                continue
            if key in self.planned:
                self.count(C.PLANNED_URLS)
            yield self._list_key(key), [key, rec]

    def _list_key(self, key):
        """'LABEL KEY': the bin the plan chose for *key*, else its hash's."""
        b = self.planned.get(key)
        if b is None:
            b = zlib.crc32(key.encode('utf-8')) % self.bins
        return plan.label_for(b, self.bins) + ' ' + key

    def reducer_write_list(self, list_key, values):
        """One politeness key's URLs, and the URLs of it the crawl requested before if it
        has any URL to fetch: the reduce task's output file is its bin's fetch list."""
        values = list(values)
        if any(rec.get('kind') not in _DB_LINES for _, rec in values):
            for value in values:
                yield list_key, value

    # -- fetch: keys in a thread pool, results streamed back through a queue ---------

    def mapper_init_pool(self):
        self.threads = self.conf['fetch']['threads']
        self.max_keys = keyqueue.capacity(self.conf)
        self.queues = None
        self.follow_hops = self.conf['fetch']['follow_hops']
        # Listed URLs handed to threads and not yet fetched: a thread counts each down as
        # it gets its record, so no key starts following once the last one is fetched.
        self.listed_left, self.listed_lock = 0, threading.Lock()
        budget = self.conf['fetch']['time_budget']
        # The budget counts from the task's start: the time the layer may spend.
        self.budget_deadline = time.monotonic() + budget if budget > 0 else None
        self.cancelled = threading.Event()    # the task is ending early (Ctrl-C)
        self.results = queue.Queue(maxsize=_RESULTS_WAITING)
        self.active = 0
        self.robots_cache, self.resolver = robots.RobotsCache(), Resolver.for_conf(self.conf)
        self.renderer = Renderer(self.conf, self.robots_cache, self.resolver, self.stderr.write)
        self.delays = politeness.SiteDelays(self.conf)
        self.routes = Routes(self.conf)      # proxies and site extras, once a task
        # Counters and status this often: the driver's progress line reads them, and a
        # task silent for mapreduce.task.timeout is killed.
        self.status_every = self.conf['progress']['seconds']
        self.last_status = time.monotonic()
        self.in_flight_told = 0   # the keys in flight the counters last said (C.LIVE)
        self.stats_lock = threading.Lock()
        self.robots_fetches = self.robots_failures = 0
        self.paces = {}          # politeness key -> when its last request ended (epoch)
        self.stats, self.taken = {}, []
        # The parser comes with the first page (_page_parser): its stack is most of a
        # task's imports (lxml, numpy, the language model); the first requests need none.
        self.parse_pages, self.parser = self.conf['fetch']['parse'], None
        part = int(os.environ.get('mapreduce_task_partition') or 0)
        self.task = {'kind': 'task', 'url': '', 'task': part, 'started_at': time.time(),
                     'urls': 0, 'followed': 0, 'fetched': 0}  # its record (robots/NNN)
        # Side outputs: the raw bodies' store (WARC; media), so that keeping them costs
        # no job of its own and out/ stays lean; meta/NNN; robots/NNN.
        from jobs.lib import sidefile
        files = sidefile.TaskFiles(self.options, self.conf, part,
                                   lambda name, n: self.count(name, n, C.WARC))
        self.warc, self.meta, self.robots_sink = files.warc, files.meta, files.robots
        self.media = files.media

    def mapper_take(self, _, value):
        """One line of this task's fetch list: [politeness key, url record]."""
        self.taken.append(value)

    def _fetch_bin(self, values):
        by_key, known, held, rules, paces = {}, {}, {}, {}, self.renderer.requests.paces
        for pkey, rec in values:
            if rec.get('kind') == 'pace':
                paces[pkey] = max(paces.get(pkey, 0.0), rec['ended_at'])
            elif rec.get('kind') == 'robots':
                old = rules.get(rec['origin'])
                if old is None or rec['fetched_at'] > old['fetched_at']:
                    rules[rec['origin']] = rec
            elif rec.get('kind') == 'known':
                known.setdefault(pkey, set()).add(rec['url'])
            elif rec.get('kind') == 'held':
                held.setdefault(pkey, set()).add(rec['url'])
            elif pkey == _INVALID_KEY or rec.get('excluded'):
                # A bad URL, or a page a crawl cycle's changed filters exclude now.
                yield from self._emit(fetcher.new_doc(
                    rec, self.options.layer, R.FETCH_FILTERED, rec.get('excluded') or 'bad_url'))
            else:
                by_key.setdefault(pkey, []).append(rec)
        for origin, rec in rules.items():
            self.robots_cache.preload(origin, robots.Rules.from_record(
                rec, self.conf['politeness']['user_agent']))
        self.count(C.HOSTS, len(by_key))
        self._listed(sum(map(len, by_key.values())))
        # Biggest keys first: they bound the layer's time, so they must not start last.
        # Each key's URLs in priority order (generate.strategy): a time budget or a
        # failing host then cuts the least important ones.
        starts = [functools.partial(
            self._run_host, pkey, sorted(by_key[pkey], key=_by_priority),
            known.pop(pkey, frozenset()), held.pop(pkey, ()), paces.get(pkey))
            for pkey in sorted(by_key, key=lambda k: -len(by_key[k]))]
        self.active = len(starts)
        self.queues = keyqueue.KeyQueues(starts, self.max_keys, self.threads,
                                         self.cancelled)
        self.queues.start()
        while self.active:
            yield from self._drain(block=True)

    def mapper_final_fetch(self):
        """Fetch the list (doc or page records, as keys finish), then wait for the keys
        still running."""
        values, self.taken = self.taken, None
        with self._cancel_on_error():
            yield from self._fetch_bin(values)
        if self.queues is not None:
            self.queues.join()
            for e in self.queues.errors:      # never expected: the keys' flows catch all
                self.count(C.INTERNAL_ERROR)
                self.stderr.write(('fetch: %s: %s\n' % (type(e).__name__, e)).encode())
            self.task.update(keys_in_flight=self.queues.peak_keys,
                             threads=self.queues.threads)
        self._status(in_flight=0)
        self.renderer.close(lambda name, n: self.count(name, n, C.RENDER))
        if self.warc is not None:
            self.warc.commit()
        if self.media is not None:
            self.media.close()
        if self.meta is not None:
            self.count(C.META_RECORDS, self.meta.commit()[0])
        if self.robots_sink is not None:
            for origin, rules in sorted(self.robots_cache.fetched.items()):
                rec = rules.record(origin)
                if rec is not None:
                    self.robots_sink.add(rec)
            for key, (url, ended_at) in sorted(
                    self.renderer.requests.last_requests(self.paces).items()):
                self.robots_sink.add({'kind': 'pace', 'url': url, 'key': key,
                                      'ended_at': ended_at})
            self.robots_sink.add(dict(self.task, node=socket.gethostname(), seconds=round(
                time.time() - self.task['started_at'], 3)))
            self.robots_sink.commit()
        self.count(C.ROBOTS_REUSED, len(self.robots_cache.reused))
        self.count(C.ROBOTS_FETCHED, self.robots_fetches)
        self.count(C.ROBOTS_ERROR, self.robots_failures)
        for name, n in sorted(self.stats.items()):
            self.count(name, n)

    @contextlib.contextmanager
    def _cancel_on_error(self):
        """If the task ends early (an interrupt, a failure downstream), the threads stop
        after their current request instead of fetching their keys to the end, and the
        keys not started are dropped; their URLs are in no output, and the step reruns."""
        try:
            yield
        except BaseException:
            self.cancelled.set()     # the keys stop after their current request
            if self.media is not None:
                self.media.close()
            self.renderer.close()     # the browser too; pages waiting keep their bodies
            raise

    def _put(self, item):
        """Hand a result to the reducer's thread; give up once the task is cancelled
        (nothing reads the queue any more)."""
        while not self.cancelled.is_set():
            try:
                self.results.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def _run_host(self, pkey, items, known, held, ended_at):
        """One key's flow (jobs.lib.keyqueue), run by whichever worker thread is free
        and yielding where the key waits: fetch one key (*known*: its URLs the crawl
        requested before; *held*: the others it has, with following on; *ended_at*:
        when its last request in an earlier layer ended, epoch seconds, or None); every
        input record yields one output record, and so does every URL it follows."""
        n_done = 0
        hf = follower = more = None
        try:
            hf = fetcher.HostFetcher(self.conf, self.robots_cache, self.resolver,
                                     budget_deadline=self.budget_deadline,
                                     delay=self.delays.of_key(r['url'] for r in items),
                                     media=self.media, routes=self.routes)
            if self.follow_hops:
                follower = follow.Follower(
                    hf.same_key, itertools.chain((r['url'] for r in items), known, held),
                    self.options.max_depth, self.follow_hops)
                more = follower.items(self._may_follow, hf.requested)
            if ended_at is not None:
                # Another machine's clock a little ahead counts as 'just now'.
                hf.slot.resume(max(0.0, time.time() - ended_at))
            for doc in self.renderer.steps(hf, items, self.options.layer, pkey, known,
                                           more or ()):
                if self.cancelled.is_set():
                    return
                if isinstance(doc, float):    # the key waits: no thread meanwhile
                    yield doc
                    continue
                if not doc.get('followed'):
                    n_done += 1
                    self._listed(-1)
                if follower is not None and follower.wants(doc):
                    reply = follow.Reply()
                    self._put(('doc', doc, reply))
                    page = reply.wait(self.cancelled)
                    if page is not None:
                        follower.add(page)
                else:
                    self._put(('doc', doc, None))
        except Exception as e:   # a bug must not lose the key's URLs
            reason = 'internal_' + type(e).__name__
            self._listed(n_done - len(items))
            for rec in items[n_done:]:
                self._put(('doc', fetcher.new_doc(
                    rec, self.options.layer, R.FETCH_NETWORK_ERROR, reason), None))
            self._put(('error', reason, None))
        finally:
            if hf is not None:
                self._key_done(pkey, items, hf, follower)
            self._put(('done', None, None))

    def _key_done(self, pkey, items, hf, follower):
        """Keep what the key's fetcher counted, and when its last request ended."""
        if follower is not None:
            hf.stats[C.FOLLOW_QUEUED] = follower.queued
            hf.stats[C.FOLLOW_LEFT] = hf.stats.get(C.FOLLOW_LEFT, 0) + follower.left
        ago = hf.slot.ended_ago()
        with self.stats_lock:
            if ago is not None:
                self.paces[pkey] = (items[0]['url'], time.time() - ago)
            self.robots_fetches += hf.robots_fetches
            self.robots_failures += hf.robots_failures
            for name, n in hf.stats.items():
                self.stats[name] = self.stats.get(name, 0) + n

    def _page_parser(self):
        if self.parser is None:
            self.parser = parsepage.PageParser(self.conf, self._count_parse)
        return self.parser

    def _listed(self, n):
        with self.listed_lock:
            self.listed_left += n

    def _may_follow(self):
        """May a key whose list is done follow links now? Only while the task still
        has listed URLs to fetch (so following never makes the layer longer) and no
        key waits for a thread (so it takes no thread a listed key needs)."""
        return self.listed_left > 0 and not self.queues.keys_waiting and \
            not self.cancelled.is_set()

    def _drain(self, block):
        while True:
            try:
                what, item, reply = self.results.get(block=block, timeout=self.status_every)
            except queue.Empty:
                if not block:
                    return
                if self.queues.join(0) and self.results.empty():   # never expected
                    raise RuntimeError('%d keys ended with no word %r' % (
                        self.active, self.queues.errors))
                self._status()
                continue
            if what == 'done':
                self.active -= 1
                return
            if what == 'error':
                self.count(C.INTERNAL_ERROR)
                continue
            if item.get('followed'):
                self.count(C.FOLLOWED)
            yield from self._emit(item, reply)
            block = False

    def _emit(self, doc, reply=None):
        if mark_kept(doc, self.conf['recrawl']['prune']):   # a setting's no: page kept
            self.count(C.per('refused_kept', doc['reason']))
        t = self.task
        t['url'] = t['url'] or doc['url']
        t['followed' if doc.get('followed') else 'urls'] += 1
        t['fetched'] += doc['status'] == R.FETCH_FETCHED
        self.count(C.status(C.FETCH, doc['status'], None if doc['status'] == R.FETCH_FETCHED
                            else doc['reason']))
        self.count(C.BYTES, doc['length'])
        if time.monotonic() - self.last_status > self.status_every:
            self._status()
        if self.warc is not None:
            doc.update(self.warc.add(doc, self.conf['politeness']['user_agent']) or {})
        try:
            if self.parse_pages:
                doc = self._page_parser().parse(doc)   # never raises: PageParser.parse
                if self.meta is not None:
                    self.meta.add(doc)
        finally:
            if reply is not None:     # the key's thread waits for its page's links
                reply.set(doc)
        yield None, doc

    def _count_parse(self, name, amount=1):
        self.count(name, amount, C.PARSE)

    def _status(self, in_flight=None):
        q = self.queues
        if in_flight is None:
            in_flight = q.in_flight if q else 0
        self.count(C.KEYS_IN_FLIGHT, in_flight - self.in_flight_told, C.LIVE)
        self.in_flight_told = in_flight
        self.report_counts()
        self.last_status = time.monotonic()
        self.set_status('fetching: %d keys left, %d in flight, %d threads' % (
            self.active, q.in_flight, q.threads) if q else 'fetching')


if __name__ == '__main__':
    MRFetch.run()
