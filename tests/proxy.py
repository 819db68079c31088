"""Real proxies on loopback, in throw-away folders: Debian's tinyproxy (HTTP) and
microsocks (SOCKS5).

    with TinyProxy(user='crawler', password='s3cret') as proxy:    # BasicAuth, or none
        proxy.url()                       # http://127.0.0.1:PORT
        proxy.requests()                  # its log: ['GET http://h:p/ HTTP/1.1',
                                          #  'CONNECT h:p HTTP/1.0', ...] in order
    with MicroSocks() as socks:
        socks.url()                       # socks5h://127.0.0.1:PORT
        socks.connections()               # its log: ['h:p', ...]
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

from tests.nginx import free_port, program

CONF = """Port {port}
Listen 127.0.0.1
Timeout 30
LogFile "{dir}/tinyproxy.log"
LogLevel Connect
PidFile "{dir}/tinyproxy.pid"
MaxClients 32
Allow 127.0.0.1
DisableViaHeader Yes
"""
_REQUEST_RE = re.compile(r'Request \(file descriptor \d+\): (.*)$')


class TinyProxy:
    """tinyproxy on 127.0.0.1 (a free port); with *user* and *password*, it asks for
    them (BasicAuth: 407 without)."""

    def __init__(self, user=None, password=None):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix='mrcrawl-tinyproxy-')
        conf = CONF.format(port=self.port, dir=self.dir)
        if user:
            conf += 'BasicAuth %s %s\n' % (user, password)
        self.conf = os.path.join(self.dir, 'tinyproxy.conf')
        with open(self.conf, 'w') as f:
            f.write(conf)
        self.proc, self._log = None, None

    def url(self, userinfo=''):
        return 'http://%s127.0.0.1:%d' % (userinfo + '@' if userinfo else '', self.port)

    def requests(self):
        """The request lines the proxy received, oldest first (after it stopped: all)."""
        if self._log is not None:
            return self._log
        try:
            with open(os.path.join(self.dir, 'tinyproxy.log')) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        return [m.group(1) for m in map(_REQUEST_RE.search, lines) if m]

    def __enter__(self):
        self.proc = subprocess.Popen([program('tinyproxy'), '-d', '-c', self.conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for(self, 'tinyproxy')
        return self

    def __exit__(self, *exc):
        _stop(self.proc)
        self._log = self.requests()
        shutil.rmtree(self.dir, ignore_errors=True)


class MicroSocks:
    """A SOCKS5 proxy on 127.0.0.1: Debian's microsocks (with *user* and *password*, it
    asks for them). ``connections()``: 'host:port' of each connection it made."""

    def __init__(self, user=None, password=None):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix='mrcrawl-microsocks-')
        self.args = [program('microsocks'), '-i', '127.0.0.1', '-p', str(self.port)] + (
            ['-u', user, '-P', password] if user else [])
        self.proc, self._log = None, None

    def url(self, userinfo='', scheme='socks5h'):
        return '%s://%s127.0.0.1:%d' % (scheme, userinfo + '@' if userinfo else '', self.port)

    def connections(self):
        if self._log is not None:
            return self._log
        try:
            with open(os.path.join(self.dir, 'microsocks.log')) as f:
                return re.findall(r'connected to (\S+)', f.read())
        except FileNotFoundError:
            return []

    def __enter__(self):
        with open(os.path.join(self.dir, 'microsocks.log'), 'w') as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        _wait_for(self, 'microsocks')
        return self

    def __exit__(self, *exc):
        _stop(self.proc)
        self._log = self.connections()
        shutil.rmtree(self.dir, ignore_errors=True)


def _wait_for(server, name):
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(('127.0.0.1', server.port), timeout=1).close()
            return
        except OSError:
            if server.proc.poll() is not None or time.monotonic() > deadline:
                server.__exit__()
                raise RuntimeError('%s did not start' % name)
            time.sleep(0.02)


def _stop(proc):
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
