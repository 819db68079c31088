"""nginx (Debian's package) on loopback, for the tests of the real web's protocols: TLS,
credentials, cookies and content codings as a production server speaks them.

    with Nginx(SERVERS) as web:        # SERVERS: nginx server blocks, PORT and DIR
        web.url('/')                   # in them replaced by its port and folder
        web.requests()                 # the access log: [{'uri', 'status', ...}]

One process (``master_process off``) as the user that runs the tests, everything (its
configuration, logs, temporary files, the files it serves) in a throw-away folder.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

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


class Nginx:
    """nginx serving *servers* (server blocks; PORT and DIR stand for its port and its
    folder, which holds *files*: {path relative to it: bytes}, ``www/...`` for pages)."""

    def __init__(self, servers, files=None, host='127.0.0.1'):
        self.host, self.port = host, free_port(host)
        self.dir = tempfile.mkdtemp(prefix='mrcrawl-nginx-')
        os.makedirs(os.path.join(self.dir, 'tmp'))
        for path, data in (files or {}).items():
            full = os.path.join(self.dir, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'wb') as f:
                f.write(data)
        text = CONF.replace('SERVERS', servers).replace('PORT', str(self.port))
        with open(os.path.join(self.dir, 'nginx.conf'), 'w') as f:
            f.write(text.replace('DIR', self.dir))
        self.proc, self._log = None, None

    def url(self, path='/', host=None, scheme='https'):
        return '%s://%s:%d%s' % (scheme, host or self.host, self.port, path)

    def requests(self):
        """The requests served so far, oldest first: {field: value} (LOG_FIELDS; '-'
        for none). After the server stopped, those it served."""
        if self._log is not None:
            return self._log
        try:
            with open(os.path.join(self.dir, 'access.log')) as f:
                return [dict(zip(LOG_FIELDS, line.rstrip('\n').split('\t'))) for line in f]
        except FileNotFoundError:
            return []

    def uris(self):
        return [r['uri'] for r in self.requests()]

    def __enter__(self):
        self.proc = subprocess.Popen(
            [program('nginx'), '-p', self.dir, '-c', os.path.join(self.dir, 'nginx.conf'), '-e',
             os.path.join(self.dir, 'error.log')],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError('nginx did not start: %s' % self.errors())
                time.sleep(0.02)

    def errors(self):
        try:
            with open(os.path.join(self.dir, 'error.log')) as f:
                return f.read().strip()[-2000:]
        except FileNotFoundError:
            return ''

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
