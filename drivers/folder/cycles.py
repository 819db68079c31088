"""A crawl folder's cycles (Nutch's rounds) and its run lock.

A cycle is layers run one after another until the depth limit or an empty layer, then
the final outputs (merged/, xml/, index/) rebuilt for the whole crawl. The first cycle
starts from the seeds at layer 0. Rerunning ``mrcrawl crawl`` on a folder whose last
cycle finished starts the next one at the next layer number: its first layer is what
the crawl database holds that is new within the depth or due again, plus new seeds.
A cycle that did not finish (a crash, a STOP file) is resumed instead.

    OUT/cycles/CCC.json  {"cycle", "first_layer", "depth", "at", "seeds",
                          "layers": [summary rows], "finished", "format",
                          "settings_changed": [{"key", "from", "to"}]}
    OUT/lock.json        {"host", "pid", "started"} while a run holds the folder
"""
import contextlib
import json
import os
import socket

from drivers.folder import layout
from drivers.runtime.steps import CrawlError
from jobs.lib.records import now_iso

#: Layout version of the cycle files. A folder written by a newer, incompatible layout
#: is refused rather than guessed at.
FORMAT = 1


class LockHeld(Exception):
    pass


class FolderError(Exception):
    """The folder was written by a mrcrawl whose layout this one does not read."""


class Cycles:
    def __init__(self, fs, out):
        self.fs = fs
        self.out = out

    def _path(self, *parts):
        return self.fs.join(self.out, layout.CYCLES, *parts)

    def all(self):
        """Every cycle record, oldest first. A folder crawled before cycles existed
        (in/000 and no cycles/) is its first cycle, finished if its xml/ is there."""
        if self.fs.exists(self.fs.join(self.out, layout.OLD_RECRAWL)):
            raise FolderError(
                '%s holds re-crawl rounds (recrawl/) of an older mrcrawl, whose crawl '
                'database this one does not read: crawl into a new folder' % self.out)
        names = sorted(n for n in self.fs.listdir(self._path()) if n.endswith('.json'))
        cycles = [json.loads(self.fs.read_text(self._path(n))) for n in names]
        for c in cycles:
            if c.get('format', 1) > FORMAT:
                raise FolderError('%s was written by a newer mrcrawl (cycle format %s, this '
                                 'one reads %d)' % (self.out, c['format'], FORMAT))
        if not cycles and self.fs.exists(self.fs.join(self.out, layout.IN, '000')):
            old = {'cycle': 1, 'first_layer': 0, 'depth': None, 'at': None, 'seeds': None,
                   'layers': [], 'format': FORMAT,
                   'finished': self.fs.exists(self.fs.join(self.out, layout.XML))}
            self.save(old)
            cycles = [old]
        return cycles

    def save(self, cycle):
        self.fs.mkdirs(self._path())
        self.fs.write_text(self._path('%03d.json' % cycle['cycle']),
                           json.dumps(cycle, indent=1, sort_keys=True))

    def begin(self, depth, seeds, at=None, on_new=None, changes=()):
        """(the cycle to run, whether it is new): the unfinished last one, else a new
        one after it (``on_new(first_layer)`` runs before it is recorded). *changes*:
        how this run's settings differ from the last run's (drivers/folder/settings.py), added
        to the cycle's ``settings_changed``."""
        cycles = self.all()
        if cycles and not cycles[-1]['finished']:
            if changes:
                cycles[-1]['settings_changed'] = \
                    cycles[-1].get('settings_changed', []) + list(changes)
                self.save(cycles[-1])
            return cycles[-1], False
        if cycles:
            last = cycles[-1]
            done = [row['layer'] for c in cycles for row in c['layers']]
            first = max(done) + 1 if done else self._next_layer()
        else:
            last, first = None, 0
        if on_new is not None:
            on_new(first)
        cycle = {'cycle': last['cycle'] + 1 if last else 1, 'first_layer': first,
                 'depth': depth, 'at': at or now_iso(), 'seeds': seeds, 'layers': [],
                 'finished': False, 'format': FORMAT, 'settings_changed': list(changes)}
        self.save(cycle)
        return cycle, True

    def _next_layer(self):
        """After a folder crawled before cycles existed: one past its last out/."""
        done = [int(n) for n in self.fs.listdir(self.fs.join(self.out, layout.PAGES))
                if n.isdigit()]
        return max(done) + 1 if done else 0

    # -- the lock -------------------------------------------------------------------

    def lock(self):
        """Take OUT/lock.json; refuse while another live run holds it. A lock whose
        process is gone (a killed run on this host) is taken over."""
        path = self.fs.join(self.out, layout.LOCK)
        me = {'host': socket.gethostname(), 'pid': os.getpid(), 'started': now_iso()}
        if self.fs.exists(path):
            try:
                held = json.loads(self.fs.read_text(path))
            except (OSError, ValueError):
                held = {}
            if held.get('host') == me['host'] and not _alive(held.get('pid')):
                stale = 'a lock left by a run that ended without releasing it (pid %s, ' \
                        'started %s): taken over' % (held.get('pid'), held.get('started'))
            else:
                raise LockHeld(
                    '%s is in use by another mrcrawl run (host %s, pid %s, started %s); '
                    'wait for it to end, or if it is gone remove %s' % (
                        self.out, held.get('host'), held.get('pid'), held.get('started'),
                        path))
        else:
            stale = None
        self.fs.write_text(path, json.dumps(me))
        return stale

    def unlock(self):
        self.fs.rm(self.fs.join(self.out, layout.LOCK))

    @contextlib.contextmanager
    def held(self, say):
        """The lock (:meth:`lock`) held while the body runs; another run's is a
        CrawlError, and a stale one taken over is told to *say*."""
        try:
            stale = self.lock()
        except LockHeld as e:
            raise CrawlError(str(e))
        if stale:
            say(stale)
        try:
            yield self
        finally:
            self.unlock()


def layer_name(n):
    """``'007'``: the folder and step name of layer *n* (in/007, fetch-007)."""
    return '%03d' % n


def layer_rows(cycles):
    """The summary rows of every layer of *cycles* (Cycles.all()), in layer order."""
    return sorted((row for c in cycles for row in c['layers']), key=lambda row: row['layer'])


def _alive(pid):
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
