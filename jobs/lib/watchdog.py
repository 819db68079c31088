"""One thread per process that cuts requests running past their whole-request limit.

requests' read timeout bounds the wait for *each* byte, so a server that trickles its
headers or body a byte at a time could hold a connection forever. A fetcher arms
:data:`WATCHDOG` with the request's deadline and a function that shuts the request's
sockets down (jobs.lib.netpolicy.track_sockets), and disarms it when the request ends.
"""
import heapq
import itertools
import threading
import time


class Watchdog:
    """One thread that calls a function when its deadline passes unless disarmed first."""

    def __init__(self):
        self._heap = []
        self._cond = threading.Condition()
        self._ids = itertools.count()
        self._thread = None

    def arm(self, deadline, fn):
        entry = [deadline, next(self._ids), fn, False]    # [.., .., fn, fired]
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='fetch-watchdog',
                                                daemon=True)
                self._thread.start()
            if self._heap[0] is entry:    # else the thread already wakes before it is due
                self._cond.notify()
        return entry

    def disarm(self, entry):
        """Cancel *entry*; returns True when it had already fired."""
        with self._cond:
            fired = entry[3]
            entry[2] = None
        return fired

    def _run(self):
        """Sleep until the earliest armed deadline. Disarmed entries on top of the heap
        are dropped without waiting for their deadlines, and arming a later deadline
        does not wake the thread: at ~130 requests a second it woke for every arm and
        every expiry, each a GIL hand-off in the fetch task."""
        heap = self._heap
        while True:
            with self._cond:
                while True:
                    while heap and heap[0][2] is None:
                        heapq.heappop(heap)
                    if heap and heap[0][0] <= time.monotonic():
                        break
                    self._cond.wait(heap[0][0] - time.monotonic() if heap else None)
                entry = heapq.heappop(heap)
                fn = entry[2]
                entry[3] = True
            try:
                fn()
            except Exception:   # a failing cut must not kill the watchdog
                pass


WATCHDOG = Watchdog()
