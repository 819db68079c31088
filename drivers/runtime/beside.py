"""Work the driver hands to a forked child while it goes on with something else.

At the end of a crawl the driver runs the merge join, one process's work on the local
runner, while the other core idles; the index and report.html's charts need only what
the merge before it wrote, so a child forked then builds them beside the join. Forked,
not started afresh: the child has every library the driver has loaded and the crawl's
state as it stands, and costs no start-up. It dies with the driver (Linux
PR_SET_PDEATHSIG), so a killed crawl leaves no child writing into OUT.
"""
import ctypes
import logging
import multiprocessing
import os
import signal
import threading

log = logging.getLogger('mrcrawl')

_PR_SET_PDEATHSIG = 1


#: Threads importing modules in the driver (:func:`preload`). A fork while one of them
#: holds a module's import lock leaves the child waiting on that lock for ever (only the
#: forking thread lives on in it), so :class:`Beside` waits for them first.
_importing = []


def preload(fn):
    """Run *fn*, which imports modules, in a thread of the driver's: a later fork
    (:class:`Beside`) waits for it."""
    thread = threading.Thread(target=fn, name='mrcrawl-preload', daemon=True)
    _importing.append(thread)
    thread.start()


class Failed(Exception):
    """The child raised (its exception's type and message), or died."""


class Beside:
    """``fn()`` run in a forked child; :meth:`result` waits for its return value (which
    must pickle). *name* is the child's process name."""

    def __init__(self, fn, name):
        while _importing:
            _importing.pop().join()
        ctx = multiprocessing.get_context('fork')
        self._conn, child_end = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_child, args=(child_end, fn, os.getpid()),
                                 name=name, daemon=True)
        self._proc.start()
        child_end.close()

    def result(self, timeout=None):
        """fn()'s value; Failed if it raised, died or did not answer within *timeout*
        seconds (None: no limit)."""
        try:
            if not self._conn.poll(timeout):
                raise Failed('no answer within %s s' % timeout)
            kind, value = self._conn.recv()
        except (EOFError, OSError) as e:
            raise Failed('the child ended early (exit code %s): %s' % (
                self._proc.exitcode, type(e).__name__))
        finally:
            self._conn.close()
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
        if kind == 'error':
            raise Failed(value)
        return value


    def cancel(self):
        """End the child: its value will not be asked for (the driver is failing). Left
        running, it would block on a value larger than the pipe holds, and hold what it
        inherited, a fork server's "alive" pipe among them, until the process exits."""
        self._conn.close()
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()


class Done:
    """A value already at hand, with Beside's :meth:`result`."""

    def __init__(self, value):
        self._value = value

    def result(self, timeout=None):
        return self._value

    def cancel(self):
        pass


def cancel(children):
    """Cancel each Beside (or Done, or None) of *children*."""
    for child in children:
        if child:
            child.cancel()


def start(fn, name):
    """A Beside running *fn*, or None where a child cannot be forked (no fork start
    method, no process to spare): the caller then runs *fn* itself."""
    try:
        return Beside(fn, name)
    except (ValueError, OSError) as e:
        log.warning('%s: not run beside the driver: %s', name, e)
        return None


def _child(conn, fn, parent):
    # Ctrl-C and SIGTERM are the driver's (drivers/runtime/interrupts.py, whose handlers the
    # fork copied): it cancels this child, or the child dies with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):       # not Linux: the child may outlive a kill
        pass
    if os.getppid() != parent:              # the driver died before prctl
        os._exit(1)
    try:
        conn.send(('value', fn()))
    except Exception as e:
        conn.send(('error', '%s: %s' % (type(e).__name__, e)))
    finally:
        conn.close()
