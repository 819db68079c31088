"""A job's temporary folder, removed beside the crawl instead of in its way.

mrjob's runners remove a job's local temporary folder (its tasks' inputs and outputs
and the sorted shuffle: about what the job read, twice over) when the job ends, before
the driver can start its next step. Here the folder goes to one background thread that
removes such folders in turn, as YARN's NodeManager hands the folders of finished
containers to its DeletionService. The driver waits for that thread as it exits, so a
crawl leaves no folder behind; one that cannot be removed is logged. A child process
(drivers.runtime.beside) removes its folders itself: it exits without running atexit.
"""
import atexit
import logging
import multiprocessing
import queue
import shutil
import threading

log = logging.getLogger('mrcrawl')

_queue = None


def remove_later(path):
    """Remove the folder *path* in the background thread (started on first use)."""
    global _queue
    if multiprocessing.parent_process() is not None:
        _remove(path)
        return
    if _queue is None:
        _queue = queue.Queue()
        threading.Thread(target=_remove_each, args=(_queue,), name='mrcrawl-tmp-removal',
                         daemon=True).start()
        atexit.register(wait)
    _queue.put(path)


def wait():
    """Return once every folder handed over so far is removed."""
    if _queue is not None:
        _queue.join()


def _remove_each(q):
    while True:
        path = q.get()
        try:
            _remove(path)
        finally:
            q.task_done()


def _remove(path):
    shutil.rmtree(path, onerror=lambda _, p, exc: log.warning(
        'could not remove the temporary %s: %s', p, exc[1]))


class RemovedLater:
    """Runner mixin: the job's local temporary folder goes to :func:`remove_later`."""

    def _cleanup_local_tmp(self):
        if self._local_tmp_dir:
            remove_later(self._local_tmp_dir)
        self._local_tmp_dir = None
