"""Real proxies on loopback (tests/daemons.py): Debian's tinyproxy (HTTP) and
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

from tests.daemons import Daemon, program

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
_REQUEST_RE = re.compile(r'Request \(file descriptor \d+\): (.*)$', re.M)


class TinyProxy(Daemon):
    """tinyproxy on 127.0.0.1 (a free port); with *user* and *password*, it asks for
    them (BasicAuth: 407 without)."""

    name = 'tinyproxy'

    def __init__(self, user=None, password=None):
        super().__init__()
        conf = CONF.format(port=self.port, dir=self.dir)
        if user:
            conf += 'BasicAuth %s %s\n' % (user, password)
        self.write('tinyproxy.conf', conf.encode())

    def command(self):
        return [program('tinyproxy'), '-d', '-c', os.path.join(self.dir, 'tinyproxy.conf')]

    def url(self, userinfo=''):
        return 'http://%s127.0.0.1:%d' % (userinfo + '@' if userinfo else '', self.port)

    def read_log(self):
        try:
            with open(os.path.join(self.dir, 'tinyproxy.log')) as f:
                return _REQUEST_RE.findall(f.read())
        except FileNotFoundError:
            return []

    def requests(self):
        """The request lines the proxy received, oldest first (after it stopped: all)."""
        return self.log()


class MicroSocks(Daemon):
    """A SOCKS5 proxy on 127.0.0.1: Debian's microsocks (with *user* and *password*, it
    asks for them). ``connections()``: 'host:port' of each connection it made."""

    name = 'microsocks'

    def __init__(self, user=None, password=None):
        super().__init__()
        self.auth = ['-u', user, '-P', password] if user else []

    def command(self):
        return [program('microsocks'), '-i', '127.0.0.1', '-p', str(self.port)] + self.auth

    def url(self, userinfo='', scheme='socks5h'):
        return '%s://%s127.0.0.1:%d' % (scheme, userinfo + '@' if userinfo else '', self.port)

    def read_log(self):             # microsocks logs each connection to its stdout
        try:
            with open(os.path.join(self.dir, 'stdout.log')) as f:
                return re.findall(r'connected to (\S+)', f.read())
        except FileNotFoundError:
            return []

    def connections(self):
        return self.log()
