"""jobs.lib.keyqueue: keys in flight are not threads; a waiting key holds none."""
import pytest
import threading
import time

from jobs.lib.keyqueue import KeyQueues, capacity, keys_in_flight
from tests.helpers import test_conf

pytestmark = pytest.mark.unit


class Trace:
    """Flows of *requests* steps each, *gap* seconds apart, that record when each step
    ran, in which thread, and how many flows had started and not ended then."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started = self.ended = 0
        self.peak_open = 0
        self.early = []           # steps resumed before the time they asked for
        self.threads = set()
        self.steps = 0

    def flow(self, requests, gap):
        with self.lock:
            self.started += 1
            self.peak_open = max(self.peak_open, self.started - self.ended)
        try:
            for i in range(requests):
                with self.lock:
                    self.threads.add(threading.get_ident())
                    self.steps += 1
                if i < requests - 1:
                    at = time.monotonic() + gap
                    yield at
                    if time.monotonic() < at:
                        self.early.append(at - time.monotonic())
        finally:
            with self.lock:
                self.ended += 1


def _run(starts, max_keys, max_threads):
    q = KeyQueues(starts, max_keys, max_threads, threading.Event())
    q.start()
    assert q.join(60), 'the keys never ended'
    return q


def test_waiting_keys_hold_no_thread():
    """120 keys, 3 steps each with a wait between, on 3 threads: every key is in flight
    at once (a thread per key would allow 3), none resumes before its time, and no
    more threads start than the limit."""
    t = Trace()
    q = _run([lambda: t.flow(3, 0.3) for _ in range(120)], 10_000, 3)
    assert t.steps == 360 and t.ended == 120
    assert t.peak_open == 120 and q.peak_keys == 120
    assert q.threads <= 3 and len(t.threads) <= 3
    assert t.early == [] and q.errors == []


def test_keys_in_flight_are_capped_and_all_end():
    t = Trace()
    q = _run([lambda: t.flow(2, 0.05) for _ in range(40)], 7, 4)
    assert t.ended == 40 and t.steps == 80
    assert t.peak_open == 7 and q.peak_keys == 7 and q.keys_waiting == 0


def test_threads_start_only_when_keys_are_due_and_none_is_free():
    """One key at a time: one thread is enough, whatever the limit."""
    t = Trace()
    q = _run([lambda: t.flow(4, 0.05)], 10, 64)
    assert t.steps == 4 and q.threads == 1


def test_a_flow_that_raises_is_kept_and_the_others_end():
    def bad():
        yield time.monotonic() + 0.01
        raise ValueError('a bug')
    t = Trace()
    q = _run([bad] + [lambda: t.flow(2, 0.01) for _ in range(5)], 10, 2)
    assert t.ended == 5
    assert [type(e) for e in q.errors] == [ValueError]


def test_cancelled_keys_stop():
    t = Trace()
    cancelled = threading.Event()
    q = KeyQueues([lambda: t.flow(1000, 0.05) for _ in range(10)], 10, 2, cancelled)
    q.start()
    time.sleep(0.2)
    cancelled.set()
    assert q.join(10)
    assert t.steps < 10 * 1000


def test_capacity_follows_the_memory_setting():
    conf = test_conf('fetch.keys_memory_mb=64')
    assert keys_in_flight(conf) == 64 * 1024 * 1024 // (32 * 1024) == 2048
    assert 1 <= capacity(conf) <= 2048


def test_keys_due_after_a_cancel_take_no_step():
    """Keys handed to a worker once the task is cancelled are closed, not stepped."""
    t = Trace()
    cancelled = threading.Event()
    cancelled.set()
    q = KeyQueues([lambda: t.flow(3, 0.01) for _ in range(20)], 20, 2, cancelled)
    q.start()
    assert q.join(10)
    assert t.steps == 0


def test_a_thread_that_cannot_start_leaves_the_others_working(monkeypatch):
    """Past the threads the system gives, the keys share those there are."""
    started = []
    real = threading.Thread.start

    def start(self):
        if self.name[len('fetch-'):].isdigit():      # a worker, not the dispatcher
            if started:
                raise RuntimeError("can't start new thread")
            started.append(self.name)
        real(self)
    monkeypatch.setattr(threading.Thread, 'start', start)
    t = Trace()
    q = _run([lambda: t.flow(2, 0.05) for _ in range(30)], 100, 8)
    assert t.ended == 30 and q.threads == 1
    assert [type(e) for e in q.errors] == [RuntimeError]
