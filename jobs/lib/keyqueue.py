"""Politeness keys in flight, and the threads that serve whichever is ready.

Nutch's FetchItemQueues and FetcherThreads, Scrapy's downloader slots: a fetch task's
keys are *flows*, generators that run a key's requests (jobs.lib.fetcher.HostFetcher.
steps) and yield, where the key must wait (its delay, a Crawl-delay, a retry's pause),
the clock() time it may go on. A waiting key is an entry on a heap, not a thread:

- keys in flight (their flow started, their connection open) are as many as the list
  has, up to *max_keys*, what the task's memory and open files allow (:func:`capacity`);
  the others wait their turn in list order (the fetch job puts the biggest first);
- one dispatcher thread sleeps until the next key is due and hands it to a worker;
- workers are threads for requests in flight: one starts when a key is due and none is
  free, up to *max_threads* (fetch.threads), so a list of slow hosts gets the threads
  its latency needs and a quick one few.

A flow runs in one thread at a time, but not always the same one. It must not raise
(the fetch job's catches everything and records it); if it does, the error is kept in
``errors`` and the key counts as done, so the task never waits for it.
"""
import collections
import heapq
import itertools
import queue
import resource
import threading
import time

#: Bytes one key in flight holds: its HTTP session and pooled connection (~15 KiB
#: measured), the socket's buffers and the suspended flow.
KEY_BYTES = 32 * 1024
#: Open files kept for the task itself (its outputs, WARC, the browser, DNS).
_RESERVED_FILES = 256


def keys_in_flight(conf):
    """Keys a fetch task keeps in flight by its settings: fetch.keys_memory_mb over
    :data:`KEY_BYTES` (the drivers' measure of "every host at once")."""
    return conf['fetch']['keys_memory_mb'] * 1024 * 1024 // KEY_BYTES


def capacity(conf):
    """Keys this task may keep in flight: :func:`keys_in_flight`, and one open file
    each (the soft limit raised to the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    files = soft - _RESERVED_FILES if soft != resource.RLIM_INFINITY else 1 << 30
    return max(1, min(files, keys_in_flight(conf)))


class KeyQueues:
    """Run *starts* (callables, each making one key's flow when its turn comes) with
    at most *max_keys* in flight and *max_threads* workers; *cancelled* (a
    threading.Event) stops them after their current step."""

    def __init__(self, starts, max_keys, max_threads, cancelled, clock=time.monotonic,
                 name='fetch'):
        self._starts = collections.deque(starts)
        self.max_keys, self.max_threads = max_keys, max_threads
        self.cancelled, self.clock, self.name = cancelled, clock, name
        self._cond = threading.Condition()
        self._due = []                 # heap: (clock() time, seq, flow)
        self._seq = itertools.count()
        self._work = queue.SimpleQueue()
        self._threads = []
        self._idle = 0                 # workers waiting for a key
        self._queued = 0               # keys handed to workers, not yet taken
        self.in_flight = 0             # flows started, not finished
        self.peak_keys = 0
        self.errors = []
        self._dispatcher = None

    @property
    def keys_waiting(self):
        """Keys whose flow has not started yet."""
        return len(self._starts)

    @property
    def threads(self):
        return len(self._threads)

    def start(self):
        with self._cond:
            self._admit()
        self._dispatcher = threading.Thread(target=self._dispatch, daemon=True,
                                            name=self.name + '-dispatch')
        self._dispatcher.start()

    def join(self, timeout=None):
        """Wait for the dispatcher: every key done, or cancelled."""
        self._dispatcher.join(timeout)
        return not self._dispatcher.is_alive()

    def _admit(self):
        """Start flows while there is room (under the lock)."""
        now = self.clock()
        while self._starts and self.in_flight < self.max_keys:
            flow = self._starts.popleft()()
            self.in_flight += 1
            heapq.heappush(self._due, (now, next(self._seq), flow))
        self.peak_keys = max(self.peak_keys, self.in_flight)

    def _dispatch(self):
        """The dispatcher: hand each due key to a worker; end the workers once every key
        is done or the task is cancelled."""
        with self._cond:
            while not self.cancelled.is_set() and (self.in_flight or self._starts):
                now = self.clock()
                while self._due and self._due[0][0] <= now:
                    self._work.put(heapq.heappop(self._due)[2])
                    self._queued += 1
                while self._queued > self._idle and len(self._threads) < self.max_threads:
                    self._spawn()
                wait = self._due[0][0] - now if self._due else 0.5
                self._cond.wait(min(max(wait, 0.0), 0.5))
            for _ in self._threads:
                self._work.put(None)
        for t in self._threads:
            t.join()

    def _spawn(self):
        t = threading.Thread(target=self._serve, daemon=True,
                             name='%s-%d' % (self.name, len(self._threads)))
        try:
            t.start()
        except RuntimeError as e:    # "can't start new thread": go on with those there are
            self.max_threads = len(self._threads)
            self.errors.append(e)
            if not self._threads:
                self.cancelled.set()
            return
        self._threads.append(t)
        self._idle += 1     # until it takes its first key

    def _serve(self):
        """A worker: run due keys' flows to their next wait."""
        while True:
            flow = self._work.get()
            if flow is None:
                return
            with self._cond:
                self._idle -= 1
                self._queued -= 1
            at = self._step(flow) if not self.cancelled.is_set() else flow.close()
            with self._cond:
                self._idle += 1
                if at is None:
                    self.in_flight -= 1
                    self._admit()
                else:
                    heapq.heappush(self._due, (at, next(self._seq), flow))
                self._cond.notify()

    def _step(self, flow):
        """Run *flow* until it waits for a time still to come (returned) or ends (None)."""
        try:
            for at in flow:
                if self.cancelled.is_set():
                    flow.close()
                    return None
                if at > self.clock():
                    return at
        except Exception as e:     # noqa: BLE001 - the flow's bug must not hang the task
            self.errors.append(e)
        return None
