"""lighttpd (Debian's) on loopback, for HTTP digest authentication, which nginx does not
speak: pages under /private/ ask for digest credentials, the rest are open.

    with Lighttpd(user='crawler', password='s3cret', pages={'private/index.html': b'...'}):
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from tests.nginx import free_port, program

CONF = """server.document-root = "{dir}/www"
server.port = {port}
server.bind = "127.0.0.1"
server.modules = ("mod_auth", "mod_authn_file")
index-file.names = ("index.html")
mimetype.assign = (".html" => "text/html")
auth.backend = "plain"
auth.backend.plain.userfile = "{dir}/users"
auth.require = ("/private/" => ("method" => "digest", "realm" => "members",
                                "require" => "valid-user"))
server.errorlog = "{dir}/error.log"
"""


class Lighttpd:
    def __init__(self, user, password, pages):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix='mrcrawl-lighttpd-')
        for path, data in pages.items():
            full = os.path.join(self.dir, 'www', path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'wb') as f:
                f.write(data)
        with open(os.path.join(self.dir, 'users'), 'w') as f:
            f.write('%s:%s\n' % (user, password))
        self.conf = os.path.join(self.dir, 'lighttpd.conf')
        with open(self.conf, 'w') as f:
            f.write(CONF.format(dir=self.dir, port=self.port))
        self.proc = None

    def url(self, path='/'):
        return 'http://127.0.0.1:%d%s' % (self.port, path)

    def __enter__(self):
        self.proc = subprocess.Popen([program('lighttpd'), '-D', '-f', self.conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError('lighttpd did not start')
                time.sleep(0.02)

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
