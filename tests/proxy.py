"""A real forward proxy on loopback: Debian's tinyproxy, in a throw-away folder.

    with TinyProxy(user='crawler', password='s3cret') as proxy:    # BasicAuth, or none
        proxy.url()                       # http://127.0.0.1:PORT
        proxy.requests()                  # its log: ['GET http://h:p/ HTTP/1.1',
                                          #  'CONNECT h:p HTTP/1.1', ...] in order
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
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError('tinyproxy did not start')
                time.sleep(0.02)

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log = self.requests()
        shutil.rmtree(self.dir, ignore_errors=True)
