"""nginx (Debian's package) on loopback, for the tests of the real web's protocols: TLS,
credentials, cookies and content codings as a production server speaks them.

    with Nginx(SERVERS) as web:        # SERVERS: nginx server blocks, PORT and DIR
        web.url('/')                   # in them replaced by its port and folder
        web.requests()                 # the access log: [{'uri', 'status', ...}]

One process (``master_process off``) as the user that runs the tests, everything (its
configuration, logs, temporary files, the files it serves) in a throw-away folder.
"""
import os

from tests.daemons import Daemon, program

#: One access log line a request: what the tests read back.
LOG_FIELDS = ('server_name', 'method', 'uri', 'protocol', 'status', 'user', 'sni')

CONF = """
daemon off;
master_process off;
worker_processes 1;
pid DIR/nginx.pid;
error_log DIR/error.log warn;
events { worker_connections 64; }
http {
    log_format fields '$server_name\\t$request_method\\t$request_uri\\t$server_protocol\\t'
                      '$status\\t$remote_user\\t$ssl_server_name';
    access_log DIR/access.log fields;
    client_body_temp_path DIR/tmp/body;
    proxy_temp_path DIR/tmp/proxy;
    fastcgi_temp_path DIR/tmp/fastcgi;
    uwsgi_temp_path DIR/tmp/uwsgi;
    scgi_temp_path DIR/tmp/scgi;
    types { text/html html; text/plain txt; }
    default_type application/octet-stream;
    SERVERS
}
"""


class Nginx(Daemon):
    """nginx serving *servers* (server blocks; PORT and DIR stand for its port and its
    folder, which holds *files*: {path relative to it: bytes}, ``www/...`` for pages)."""

    name = 'nginx'

    def __init__(self, servers, files=None, host='127.0.0.1'):
        super().__init__(host)
        os.makedirs(os.path.join(self.dir, 'tmp'))
        for path, data in (files or {}).items():
            self.write(path, data)
        text = CONF.replace('SERVERS', servers).replace('PORT', str(self.port))
        self.write('nginx.conf', text.replace('DIR', self.dir).encode())

    def command(self):
        return [program('nginx'), '-p', self.dir, '-c', os.path.join(self.dir, 'nginx.conf'),
                '-e', os.path.join(self.dir, 'error.log')]

    def url(self, path='/', host=None, scheme='https'):
        return '%s://%s:%d%s' % (scheme, host or self.host, self.port, path)

    def read_log(self):
        """The requests served so far, oldest first: {field: value} (LOG_FIELDS; '-'
        for none)."""
        try:
            with open(os.path.join(self.dir, 'access.log')) as f:
                return [dict(zip(LOG_FIELDS, line.rstrip('\n').split('\t'))) for line in f]
        except FileNotFoundError:
            return []

    def requests(self):
        """The requests served (after the server stopped, all it served)."""
        return self.log()

    def uris(self):
        return [r['uri'] for r in self.requests()]

    def errors(self):
        try:
            with open(os.path.join(self.dir, 'error.log')) as f:
                return f.read().strip()[-2000:]
        except FileNotFoundError:
            return ''
