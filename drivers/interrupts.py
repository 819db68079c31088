"""Ctrl-C and ``kill PID`` of the ``mrcrawl`` command: one line, no traceback, no child left.

The console script enters at :func:`command`, which installs the handlers before it
imports anything of the crawler (drivers/cli.py and what it imports take a tenth of a
second, the crawl's first job a good deal more), so an interrupt in the first moments is
handled as one later on:

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
  period. A terminal's Ctrl-C reaches them all anyway; ``kill PID`` reaches only the
  command.
- **A second signal while the first unwinds** ends the command at once: its children
  killed, the same line, the same status.

:func:`install` is idempotent; without it (drivers.cli.main called by a test, say) a
KeyboardInterrupt still prints the line, but no process is signalled.
"""
import os
import signal
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


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGINT) received by the command, raised in its main thread."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
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
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):      # not Linux: the walk sees direct descendants
        pass


def _on_signal(signum, frame):
    global _signum
    if _signum is None:
        _signum = signum
        if not _finishing:
            raise Interrupted(signum)
    # A second signal while the first unwinds, or one as the command exits (where an
    # exception would be printed as ignored): end now. os.write, not print: the main
    # thread may be inside a write to stderr.
    end_descendants(grace=0.5)
    try:
        os.write(2, (LINE + '\n').encode())
    except OSError:
        pass
    os._exit(status())


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
    print(LINE, file=sys.stderr, flush=True)
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


def command():
    """The ``mrcrawl`` console script (setup.cfg): the handlers, then drivers.cli.run."""
    install()
    try:
        from drivers import cli
    except KeyboardInterrupt:
        sys.exit(interrupted())
    cli.run()
