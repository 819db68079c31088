"""Debian's servers as the protocol tests run them: on loopback, on a free port, as the
test's user, everything in a throw-away folder, and what they logged read back.

A :class:`Daemon` subclass names its program (``name``) and gives :meth:`Daemon.command` (the
command line, its folder ready) and :meth:`Daemon.read_log` (what it logged so far;
the server's own stdout and stderr go to ``DIR/stdout.log``). :meth:`Daemon.log` is
what it logged, kept when it stops.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time


def program(name):
    """The path of Debian's *name* (in /usr/sbin, which a user's PATH may not hold)."""
    found = shutil.which(name, path=os.environ.get('PATH', '') + ':/usr/sbin:/sbin')
    if found is None:
        raise RuntimeError('%s is not installed: `make system-deps` installs it' % name)
    return found


def free_port(host='127.0.0.1'):
    """A TCP port free on *host* now (the OS's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Daemon:
    name = None

    def __init__(self, host='127.0.0.1'):
        self.host, self.port = host, free_port(host)
        self.dir = tempfile.mkdtemp(prefix='mrcrawl-%s-' % self.name)
        self.proc, self._log = None, None

    def command(self):
        raise NotImplementedError

    def read_log(self):
        return []

    def errors(self):
        """The end of what the server wrote to its stdout and stderr."""
        try:
            with open(os.path.join(self.dir, 'stdout.log')) as f:
                return f.read().strip()[-2000:]
        except FileNotFoundError:
            return ''

    def log(self):
        return self._log if self._log is not None else self.read_log()

    def __enter__(self):
        with open(os.path.join(self.dir, 'stdout.log'), 'w') as out:
            self.proc = subprocess.Popen(self.command(), stdout=out,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError('%s did not start: %s' % (self.name,
                                                                 self.errors()))
                time.sleep(0.02)

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log = self.read_log()
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, path, data):
        """Write *data* (bytes) to *path* in the server's folder."""
        full = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'wb') as f:
            f.write(data)
