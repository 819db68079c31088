"""lighttpd (Debian's) on loopback (tests/daemons.py), for HTTP digest authentication,
which nginx does not speak: pages under /private/ ask for digest credentials, the rest
are open.

    with Lighttpd(user='crawler', password='s3cret', pages={'private/index.html': b'...'}):
"""
import os

from tests.daemons import Daemon, program

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


class Lighttpd(Daemon):
    name = 'lighttpd'

    def __init__(self, user, password, pages):
        super().__init__()
        for path, data in pages.items():
            self.write(os.path.join('www', path), data)
        self.write('users', ('%s:%s\n' % (user, password)).encode())
        self.write('lighttpd.conf', CONF.format(dir=self.dir, port=self.port).encode())

    def command(self):
        return [program('lighttpd'), '-D', '-f', os.path.join(self.dir, 'lighttpd.conf')]

    def url(self, path='/'):
        return 'http://127.0.0.1:%d%s' % (self.port, path)
