"""The progress line of a layer's fetch, redrawn while it runs from its job's counters.

The fetch tasks report their counters every ``progress.seconds`` (jobs/fetch.py
``_status``), and while the job runs a :class:`Watch` thread of the driver reads them
as often, from wherever the job runs:

- the local and inline runners (:class:`TaskLogCounters`): the tasks' stderr files,
  where mrjob's tasks write their counter lines, and which mrjob itself reads only once
  a task ended;
- Hadoop (:class:`YarnCounters`): the job's ApplicationMaster, through the
  ResourceManager's proxy (``/ws/v1/mapreduce/jobs/ID/counters``), found by the tag
  the driver gave the job (``mapreduce.job.tags``); its tracking URL is printed once.

The line (:meth:`FetchProgress.line`)::

    fetch 001: 1,234 of 5,000 URLs (24%), 41.2 pages/s now, 38.0 average,
    57 hosts in flight, 3 errors, 1 min 32 s left

URLs done: every status of the layer's URLs (followed URLs aside, as in the layer's
row); pages/s now: fetched pages over the last :attr:`FetchProgress.WINDOW` seconds;
hosts in flight: the politeness keys the tasks have started and not finished
(``live.keys_in_flight``); errors: http and network errors; time left: the URLs left at
the recent rate of URLs done. On a terminal the line is redrawn in place every
``progress.seconds``; on anything else a plain line is printed every
``progress.log_seconds`` (a log, cron). OUT/status.json gets the same figures.
"""
import collections
import glob
import io
import logging
import os
import threading
import time

import requests
from mrjob.parse import parse_mr_job_stderr

from jobs.lib import counters as C, records as R

log = logging.getLogger(__name__)


class FetchProgress:
    #: Seconds of counters the rates "now" are taken over.
    WINDOW = 30.0

    def __init__(self, layer, total, now):
        self.layer, self.total, self.started = layer, total, now
        self.samples = collections.deque()     # (time, URLs done, pages fetched)
        self.figures = None

    def update(self, counters, now):
        """The job's counters so far (``{group: {name: n}}``), read at *now*."""
        fetch = counters.get(C.FETCH, {})
        by = C.status_totals(fetch, C.FETCH, R.FETCH_STATUSES)
        done = sum(by.values()) - fetch.get(C.FOLLOWED, 0)
        fetched = by[R.FETCH_FETCHED]
        self.samples.append((now, done, fetched))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.WINDOW:
            self.samples.popleft()
        then, done_then, fetched_then = self.samples[0]
        span, elapsed = now - then, now - self.started
        done_rate = (done - done_then) / span if span > 0 else 0.0
        left = max(0, self.total - done)
        self.figures = {
            'layer': self.layer, 'urls': self.total, 'done': done, 'fetched': fetched,
            'errors': by[R.FETCH_HTTP_ERROR] + by[R.FETCH_NETWORK_ERROR],
            'keys_in_flight': max(0, counters.get(C.LIVE, {}).get(C.KEYS_IN_FLIGHT, 0)),
            'pages_per_second_now': round((fetched - fetched_then) / span, 2)
            if span > 0 else None,
            'pages_per_second': round(fetched / elapsed, 2) if elapsed > 0 else None,
            'eta_seconds': round(left / done_rate, 1) if done_rate > 0 else
            0.0 if not left else None}

    def line(self):
        f = self.figures
        rate = lambda r: '-' if r is None else '%.1f' % r   # noqa: E731
        return ('fetch %03d: %s of %s URLs (%d%%), %s pages/s now, %s average, '
                '%d hosts in flight, %d errors, %s left' % (
                    f['layer'], '{:,}'.format(f['done']), '{:,}'.format(f['urls']),
                    100 * f['done'] // f['urls'] if f['urls'] else 100,
                    rate(f['pages_per_second_now']), rate(f['pages_per_second']),
                    f['keys_in_flight'], f['errors'], duration(f['eta_seconds'])))


def duration(seconds):
    """'2 h 05 min', '1 min 32 s', '7 s', or 'time unknown' for None."""
    if seconds is None:
        return 'time unknown'
    s = int(round(seconds))
    if s >= 3600:
        return '%d h %02d min' % (s // 3600, s % 3600 // 60)
    return '%d min %d s' % (s // 60, s % 60) if s >= 60 else '%d s' % s


class Ticker:
    """Where the line goes: *stream* (None: nowhere). A terminal's line is redrawn in
    place at every :meth:`show`; any other stream gets a plain line at most every
    *log_seconds*, the first *log_seconds* after the ticker was made."""

    def __init__(self, stream, log_seconds, clock=time.monotonic):
        self.stream, self.clock = stream, clock
        self.tty = stream is not None and stream.isatty()
        self.log_seconds = log_seconds
        self.due = clock() + log_seconds
        self.drawn = False

    def show(self, line):
        if self.stream is None:
            return
        if self.tty:
            self._write('\r\x1b[K' + line)
            self.drawn = True
        elif self.clock() >= self.due:
            self._write(line + '\n')
            self.due = self.clock() + self.log_seconds

    def say(self, line):
        """A line of its own (the line is drawn again at the next show)."""
        if self.stream is not None:
            self.clear()
            self._write(line + '\n')

    def clear(self):
        if self.drawn:
            self._write('\r\x1b[K')
            self.drawn = False

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()


class Watch:
    """While a job runs (a context), read *source* every *seconds* on a thread: the
    counters go to *progress*, its line to *ticker* and its figures to *on_figures*.
    A reading that fails (a task log half-written, YARN not answering) is skipped."""

    def __init__(self, source, progress, ticker, on_figures, seconds):
        self.source, self.progress, self.ticker = source, progress, ticker
        self.on_figures, self.seconds = on_figures, seconds
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name='mrcrawl-progress',
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        # A reading under way (YARN answering slowly) must not hold up the job's end or
        # an interrupt: the thread is a daemon, and its last reading is dropped.
        self.thread.join(timeout=1.0)
        self.ticker.clear()

    def _run(self):
        while not self.stopped.wait(self.seconds):
            try:
                counters = self.source()
            except (OSError, ValueError, KeyError, TypeError, requests.RequestException) as e:
                log.debug('progress: no counters this time: %s', e)
                continue
            if counters is not None and not self.stopped.is_set():
                self.progress.update(counters, time.monotonic())
                self.ticker.show(self.progress.line())
                self.on_figures(self.progress.figures)


class TaskLogCounters:
    """The counters so far of a job on the local or inline runner (mrjob's sim runners):
    the counter lines of its tasks' stderr files (``step/NNN/TYPE/NNNNN/stderr`` in the
    runner's temporary folder *tmp_dir*), each read on from where the last reading
    stopped, up to its last whole line."""

    def __init__(self, tmp_dir):
        self.root = os.path.join(tmp_dir, 'step')
        self.read = {}          # path -> bytes parsed
        self.counters = {}

    def __call__(self):
        for path in glob.glob(os.path.join(self.root, '*', '*', '*', 'stderr')):
            with open(path, 'rb') as f:
                f.seek(self.read.get(path, 0))
                data = f.read()
            whole = data.rfind(b'\n') + 1
            if whole:
                self.read[path] = self.read.get(path, 0) + whole
                parse_mr_job_stderr(io.BytesIO(data[:whole]), counters=self.counters)
        return self.counters


class YarnCounters:
    """The counters so far of the running YARN application tagged *tag*: its
    MapReduce job's, from its ApplicationMaster through the ResourceManager at *rm_url*.
    *say* is told each new application's tracking URL."""

    def __init__(self, rm_url, tag, say):
        self.apps_url, self.tag, self.say = rm_url + '/ws/v1/cluster/apps', tag, say
        self.session = requests.Session()
        self.session.trust_env = False        # the cluster, never a proxy of the user's
        self.told = set()

    def _get(self, url, **params):
        resp = self.session.get(url, params=params, timeout=10,
                                headers={'Accept': 'application/json'})
        resp.raise_for_status()
        return resp.json()

    def __call__(self):
        apps = (self._get(self.apps_url, applicationTags=self.tag)['apps'] or {}).get('app')
        running = [a for a in apps or () if a['state'] == 'RUNNING']
        if not running:
            return None
        app = max(running, key=lambda a: a['startedTime'])
        if app['id'] not in self.told:
            self.told.add(app['id'])
            self.say('  YARN application %s: %s' % (app['id'], app['trackingUrl']))
        jobs_url = app['trackingUrl'].rstrip('/') + '/ws/v1/mapreduce/jobs'
        jobs = (self._get(jobs_url)['jobs'] or {}).get('job')
        if not jobs:
            return None
        groups = self._get('%s/%s/counters' % (jobs_url, jobs[0]['id']))[
            'jobCounters'].get('counterGroup') or ()
        return {g['counterGroupName']: {c['name']: c['totalCounterValue']
                                        for c in g.get('counter') or ()} for g in groups}
