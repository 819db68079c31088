"""Ctrl-C and ``kill PID`` of the ``mrcrawl`` command: one line, no traceback, no child left.

The console script enters at drivers.cli.command, which installs the handlers before it
imports anything of the crawler (drivers/cli/main.py and what it imports take a tenth of a
second, the crawl's first job a good deal more), so an interrupt in the first moments is
handled as one later on. (Before that, while Python itself starts, a few hundredths of
a second, Python's defaults apply: a SIGINT traceback, a silent SIGTERM death.)

- **SIGTERM acts as SIGINT**: both raise in the main thread (:class:`Interrupted`, a
  KeyboardInterrupt), so the crawl unwinds the same way: mrjob's runners remove their
  temporary folders, the local runner stops its tasks, the folder's lock is released.
  ``cli.main`` then prints ``mrcrawl: interrupted; run the same command again to
  continue`` and the command exits with 128 + the signal's number (130, 143).
- **No child outlives it**: the command makes itself a child subreaper (Linux), so a
  process whose parent died (Chromium and Playwright's driver under a killed task)
  becomes its child instead of init's; after the unwind :func:`end_descendants` sends
  SIGTERM to every process below it (task processes of the local runner, the fork
  server, ``sort``, Chromium, ffmpeg), and SIGKILL to any still there after a grace
  period. ``kill PID`` reaches only the command; a terminal's Ctrl-C reaches the whole
  process group, but the local runner's fork server and its tasks block SIGINT
  (drivers/runtime/runners.py, :class:`sigint_blocked`: the server would print a traceback if
  it came while it imports the jobs) and a child forked beside the driver
  (drivers/runtime/beside.py) ignores it: the command ends them.
- **An interrupt Python swallows**, raised in a weakref callback or a ``__del__`` (the
  import system runs such callbacks) and printed as "Exception ignored", is raised
  again instead (:func:`_unraisable`), so the crawl does not go on.
- **A second signal while the first unwinds** ends the command at once: its children
  killed, the same line, the same status.

:func:`install` is idempotent; without it (drivers.cli.main.main called by a test, say) a
KeyboardInterrupt still prints the line, but no process is signalled.
"""
# _signal, not signal: the handlers go in before anything else is imported, and signal
# imports enum, a good part of the time from the command's start to its handlers.
import _signal as signal
import _thread
import ctypes
import os
import sys
import time

#: What cli.main prints for an interrupted run.
LINE = 'mrcrawl: interrupted; run the same command again to continue'

#: Seconds the processes below the command get to end after SIGTERM, before SIGKILL.
GRACE_SECONDS = 3.0

_PR_SET_CHILD_SUBREAPER = 36

_installed = False
_signum = None            # the first signal received
_finishing = False        # the command is past its work: a signal ends it at once
_again = False            # the interrupt was swallowed (see _unraisable): raise it again
_deferring = 0            # depth of deferred() blocks
_pending = False          # an interrupt that came in a deferred() block
_unraisable_hook = None   # sys.unraisablehook before install()


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGINT) received by the command, raised in its main thread."""

    def __init__(self, signum):
        super().__init__('SIGTERM' if signum == signal.SIGTERM else 'SIGINT')
        self.signum = signum


def install():
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread; the process
    becomes a child subreaper. Once per process; a no-op elsewhere than the main
    thread."""
    global _installed
    if _installed:
        return
    try:
        signal.signal(signal.SIGINT, _on_signal)
        signal.signal(signal.SIGTERM, _on_signal)
    except ValueError:          # not the main thread: leave the signals alone
        return
    _installed = True
    global _unraisable_hook
    _unraisable_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):      # not Linux: the walk sees direct descendants
        pass


def _on_signal(signum, frame):
    global _signum, _again, _pending
    if _signum is None or _again:
        _signum, _again = _signum or signum, False
        if _deferring:
            _pending = True
            return
        if not _finishing:
            raise Interrupted(_signum)
    # A second signal while the first unwinds, or one as the command exits (where an
    # exception would be printed as ignored): end now. os.write, not print: the main
    # thread may be inside a write to stderr.
    end_descendants(grace=0.5)
    try:
        os.write(2, (LINE + '\n').encode())
    except OSError:
        pass
    os._exit(status())


class deferred:
    """``with deferred():`` a block the interrupt does not cut short (one that hands a
    request to another process): it is raised as the block ends. A second signal still
    ends the command at once."""

    def __enter__(self):
        global _deferring
        _deferring += 1

    def __exit__(self, *exc):
        global _deferring, _pending
        _deferring -= 1
        if not _deferring and _pending:
            _pending = False
            if not _finishing:
                raise Interrupted(_signum)


class sigint_blocked:
    """``with sigint_blocked():`` a process started in the block starts with SIGINT
    blocked, which it keeps across exec (Python leaves the signal mask alone): a
    terminal's Ctrl-C never reaches it, nor the processes it forks. The calling thread
    only holds a Ctrl-C back meanwhile: it is delivered as the block ends. (Ignoring
    SIGINT instead lost a Ctrl-C that came during the block, to the command too: under
    load the fork server's start took long enough for a test's Ctrl-C to fall in it.)"""

    def __enter__(self):
        self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)


def _unraisable(unraisable):
    """sys.unraisablehook: an exception Python can only print as ignored, raised in a
    weakref callback or a ``__del__`` (the import system runs such callbacks). When it
    is the interrupt, it is raised again, silently, at the next occasion, so that the
    command does not go on with the crawl. Anything else: the usual hook."""
    global _again
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _signum is not None:
        # From another thread, a moment later: the main thread would run the handler
        # at once, inside this hook, which swallows what it raises in turn.
        import threading
        _again = True
        threading.Thread(target=_raise_again, name='mrcrawl-interrupt', daemon=True).start()
        return
    _unraisable_hook(unraisable)


def _raise_again():
    time.sleep(0.01)
    _thread.interrupt_main(_signum)


def finishing():
    """The command's work is over (cli.run): a signal from now on ends it at once."""
    global _finishing
    _finishing = True


def received():
    """Has the command received SIGINT or SIGTERM?"""
    return _signum is not None


def status():
    """The exit status of an interrupted run: 128 + the first signal (130 when the
    interrupt was a KeyboardInterrupt with no signal, e.g. raised by a test)."""
    return 128 + (_signum or signal.SIGINT)


def interrupted():
    """After the unwind: end every process below this one (when :func:`install` ran),
    print :data:`LINE` and return the exit status."""
    if _installed:
        # Further signals now only hurry this up (see _on_signal).
        end_descendants()
    try:
        print(LINE, file=sys.stderr, flush=True)
    except (OSError, ValueError):      # stderr closed: the status says it
        pass
    return status()


def _proc_table():
    """{pid: (ppid, start time, state)} of every process, from /proc."""
    table = {}
    try:
        names = os.listdir('/proc')
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as f:
                stat = f.read().decode('ascii', 'replace')
        except OSError:
            continue
        fields = stat[stat.rfind(')') + 2:].split()
        table[int(name)] = (int(fields[1]), fields[19], fields[0])
    return table


def descendants(pid=None):
    """{pid: start time} of the live processes below *pid* (default: this one)."""
    pid = os.getpid() if pid is None else pid
    table = _proc_table()
    children = {}
    for child, (ppid, start, state) in table.items():
        children.setdefault(ppid, []).append(child)
    found, todo = {}, list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        if p in found or p not in table:
            continue
        ppid, start, state = table[p]
        if state not in ('Z', 'X'):
            found[p] = start
        todo.extend(children.get(p, ()))
    return found


def end_descendants(grace=GRACE_SECONDS):
    """SIGTERM to every process below this one, SIGKILL to those left after *grace*
    seconds; children of this process are reaped. A few rounds, for processes started
    while it ran."""
    for _ in range(3):
        procs = descendants()
        if not procs:
            break
        _send(procs, signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end:
            _reap()
            procs = _alive(procs)
            if not procs:
                break
            time.sleep(0.02)
        _send(_alive(procs), signal.SIGKILL)
        time.sleep(0.02)
        _reap()


def _send(procs, signum):
    for pid in procs:
        try:
            os.kill(pid, signum)
        except OSError:
            pass


def _alive(procs):
    """Those of *procs* ({pid: start time}) still running (the same process, no zombie)."""
    table = _proc_table()
    return {p: s for p, s in procs.items()
            if p in table and table[p][1] == s and table[p][2] not in ('Z', 'X')}


def _reap():
    """Collect this process's ended children (without this, a child subreaper keeps the
    orphans it adopted as zombies)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
