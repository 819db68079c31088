"""A "hostile web" on loopback: a raw-socket HTTP server that misbehaves on purpose.

http.server cannot send what a crawler must survive (no answer at all, invalid HTTP,
endless chunked bodies, lying Content-Length, resets in the middle of a body), so this
server writes bytes to the socket itself. Every behaviour ends by itself when the
client hangs up or the server stops, and nothing is ever held in memory whole: big
bodies are generated as they are sent.

    with HostileSite() as site:            # 127.0.0.1, a port the OS picks
        site.url('/hostile/garbage')
        site.paths()                       # request paths, in arrival order

Endpoints (``/hostile/NAME?...``):

    silent                  reads the request, never answers
    trickle?every=S         a 200 whose body comes one byte every S seconds
    reset-mid-body          Content-Length 100000, 1000 bytes, then a TCP reset
    garbage?kind=K          invalid HTTP: K = text, binary, status, header, length, http09
    endless-chunked?every=S chunked encoding that never ends (S seconds between chunks)
    bad-chunk               a chunk size that is not hex
    declared?gb=N&send=1    Content-Length of N GB; send=1 streams zeros, else closes early
    big?mb=N                an HTML page of N MiB, generated while sent
    links?n=N               one page with N links, generated while sent
    nested?n=N              N nested <div>s
    binary                  random bytes served as text/html
    charset?kind=K          invalid or mixed encodings (K: bad-utf8, mixed, utf16-lie,
                            utf7, nul)
    deflate-bomb?mb=N       N MiB of zeros, Content-Encoding: deflate
    double-gzip?mb=N        N MiB of zeros gzipped twice, Content-Encoding: gzip, gzip
    redirect-chain?n=N      N redirects, then a page
    redirect?to=URL         a 302 to URL (any scheme)
    calendar?d=YYYY-MM      an infinite calendar: links to the previous and next month
    session                 a session-id trap: every link carries a fresh ;jsessionid=

``HostileSite(robots=MODE)``: robots.txt is ``normal`` (Disallow /private/), ``huge``
(a Disallow line, then 10 MB of comments), ``binary`` (random bytes), ``redirect-loop``
(redirects to itself forever), ``silent`` (never answered) or ``gzip-bomb``.
``HostileSite(silent=True)``: every connection is accepted and never answered.
"""
import random
import socket
import struct
import threading
import time
import urllib.parse
import zlib

_CHUNK = 64 * 1024


def _gzip(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def html_page(title, body=''):
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s</title></head>'
            '<body><h1>%s</h1>%s</body></html>' % (title, title, body)).encode()


class HostileSite:
    """The hostile server on *host* (loopback) and an OS-assigned port."""

    def __init__(self, host='127.0.0.1', robots='normal', silent=False):
        self.robots = robots
        self.silent = silent
        self.requests = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.host, self.port = self.sock.getsockname()[:2]
        self.thread = None
        self.conns = []

    def url(self, path='/'):
        return 'http://%s:%d%s' % (self.host, self.port, path)

    def paths(self):
        with self.lock:
            return [r['path'] for r in self.requests]

    # -- lifecycle ------------------------------------------------------------------

    def start(self):
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.close()
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _quiet(self, seconds):
        """Wait *seconds*, or less when the server stops."""
        self.stopping.wait(seconds)

    # -- one connection -------------------------------------------------------------

    def _serve(self, conn):
        conn.settimeout(2.0)
        try:
            if self.silent:
                while not self.stopping.is_set():
                    self._quiet(0.05)
                return
            while not self.stopping.is_set():
                head = self._read_head(conn)
                if head is None:
                    return
                target = head.split(b'\r\n', 1)[0].split(b' ')
                path = target[1].decode('latin-1') if len(target) > 1 else '/'
                with self.lock:
                    self.requests.append({'t': time.monotonic(), 'path': path})
                if not self._answer(conn, path):
                    return
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    @staticmethod
    def _read_head(conn):
        data = b''
        while b'\r\n\r\n' not in data:
            try:
                chunk = conn.recv(4096)
            except socket.timeout:
                return None
            if not chunk:
                return None
            data += chunk
            if len(data) > 65536:
                return None
        return data

    @staticmethod
    def _head(status, ctype='text/html; charset=utf-8', length=None, extra=()):
        lines = ['HTTP/1.1 %s' % status, 'Content-Type: %s' % ctype]
        if length is not None:
            lines.append('Content-Length: %d' % length)
        lines += list(extra)
        return ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')

    def _send(self, conn, status, body, ctype='text/html; charset=utf-8', extra=()):
        conn.sendall(self._head(status, ctype, len(body), extra) + body)
        return True          # keep-alive

    def _stream(self, conn, head, chunks):
        """Send *head*, then the generated *chunks* until the client hangs up."""
        conn.sendall(head)
        for chunk in chunks:
            if self.stopping.is_set():
                break
            conn.sendall(chunk)
        return False

    # -- behaviours -----------------------------------------------------------------

    def _answer(self, conn, path):
        parsed = urllib.parse.urlsplit(path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(parsed.query).items()}
        name = parsed.path
        if name == '/robots.txt':
            return self._robots(conn)
        if not name.startswith('/hostile/'):
            return self._send(conn, '200 OK', html_page('Plain page ' + name,
                                                    '<a href="/hostile/ok">ok</a>'))
        name = name[len('/hostile/'):]
        handler = getattr(self, '_h_' + name.replace('-', '_'), None)
        if handler is None:
            return self._send(conn, '404 Not Found', html_page('No such endpoint'))
        return handler(conn, q)

    def _robots(self, conn):
        mode = self.robots
        if mode == 'normal':
            return self._send(conn, '200 OK', b'User-agent: *\nDisallow: /private/\n',
                              'text/plain')
        if mode == 'huge':
            head = self._head('200 OK', 'text/plain', 10 * 1024 * 1024 + 30)
            line = b'# ' + b'x' * 1021 + b'\n'
            return self._stream(conn, head + b'User-agent: *\nDisallow: /private/\n',
                                (line * 64 for _ in range(160)))
        if mode == 'binary':
            data = random.Random(9309).randbytes(200000)
            return self._send(conn, '200 OK', data, 'text/plain')
        if mode == 'redirect-loop':
            return self._send(conn, '301 Moved', b'', extra=['Location: /robots.txt?again'])
        if mode == 'gzip-bomb':
            member = _gzip(b'\0' * (1 << 20))
            head = self._head('200 OK', 'text/plain', len(member) * 1024,
                              ['Content-Encoding: gzip'])
            return self._stream(conn, head, (member for _ in range(1024)))
        if mode == 'silent':
            self._quiet(60)
            return False
        raise ValueError(mode)

    def _h_ok(self, conn, q):
        return self._send(conn, '200 OK', html_page('Fine', '<p>a normal page</p>'))

    def _h_silent(self, conn, q):
        self._quiet(float(q.get('n', 60)))
        return False

    def _h_trickle(self, conn, q):
        every = float(q.get('every', 1.0))
        conn.sendall(self._head('200 OK', length=100000))
        while not self.stopping.is_set():
            conn.sendall(b'a')
            self._quiet(every)
        return False

    def _h_reset_mid_body(self, conn, q):
        conn.sendall(self._head('200 OK', length=100000) + b'<html><body>' + b'a' * 1000)
        time.sleep(0.05)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        conn.close()
        return False

    def _h_garbage(self, conn, q):
        kind = q.get('kind', 'text')
        data = {
            'text': b'HELLO THERE\r\nthis is not http\r\n\r\n',
            'binary': random.Random(1).randbytes(4096),
            'status': b'HTTP/1.1 abc Broken\r\nContent-Length: 2\r\n\r\nok',
            'header': b'HTTP/1.1 200 OK\r\nContent-Type text/html\r\n: \r\n\x00\x01: x\r\n'
                      b'Content-Length: 2\r\n\r\nok',
            'length': b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n'
                      b'Content-Length: -5\r\nContent-Length: 7\r\n\r\n<p>x</p>',
            'http09': b'<html><body>an HTTP/0.9 style answer, no status line</body></html>',
        }[kind]
        conn.sendall(data)
        return False

    def _h_endless_chunked(self, conn, q):
        every = float(q.get('every', 0))
        head = self._head('200 OK', extra=['Transfer-Encoding: chunked'])
        chunk = b'<p>' + b'x' * 4093 + b'</p>\n'
        frame = b'%x\r\n%s\r\n' % (len(chunk), chunk)

        def frames():
            while True:
                yield frame
                if every:
                    self._quiet(every)
        return self._stream(conn, head, frames())

    def _h_bad_chunk(self, conn, q):
        conn.sendall(self._head('200 OK', extra=['Transfer-Encoding: chunked']) +
                     b'5\r\nhello\r\nZZZZ\r\nmore\r\n0\r\n\r\n')
        return False

    def _h_declared(self, conn, q):
        n = int(float(q.get('gb', 10)) * (1 << 30))
        head = self._head('200 OK', length=n)
        if q.get('send') == '1':
            zeros = b'<p>' + b'0' * (_CHUNK - 3)
            return self._stream(conn, head, (zeros for _ in range(n // _CHUNK)))
        conn.sendall(head + b'<html><body>short</body></html>')
        return False

    def _h_big(self, conn, q):
        mib = int(q.get('mb', 100))
        block = b'<p>' + b'word ' * ((1 << 20) // 5 - 2) + b'</p>'
        head = self._head('200 OK', length=len(block) * mib)
        return self._stream(conn, head, (block for _ in range(mib)))

    def _h_links(self, conn, q):
        n = int(q.get('n', 1000000))
        head = self._head('200 OK', extra=['Transfer-Encoding: chunked'])

        def frames():
            top = b'<!DOCTYPE html><html><head><title>Links</title></head><body><h1>Links</h1>'
            yield b'%x\r\n%s\r\n' % (len(top), top)
            for start in range(0, n, 2000):
                part = ''.join('<a href="/l/%d">link %d</a>\n' % (i, i)
                               for i in range(start, min(n, start + 2000))).encode()
                yield b'%x\r\n%s\r\n' % (len(part), part)
            yield b'0\r\n\r\n'
        return self._stream(conn, head, frames())

    def _h_nested(self, conn, q):
        n = int(q.get('n', 100000))
        body = (b'<!DOCTYPE html><html><head><title>Deep</title></head><body>' +
                b'<div>' * n + b'deep text <a href="/hostile/ok">deep link</a>' +
                b'</div>' * n + b'</body></html>')
        return self._send(conn, '200 OK', body)

    def _h_binary(self, conn, q):
        return self._send(conn, '200 OK', random.Random(int(q.get('seed', 7))).randbytes(
            int(q.get('bytes', 100000))), 'text/html')

    def _h_charset(self, conn, q):
        kind = q.get('kind', 'bad-utf8')
        text = '<html><head><title>Caf\u00e9</title></head><body><p>cr\u00e8me %s</p></body></html>'
        if kind == 'bad-utf8':
            return self._send(conn, '200 OK', (text % '').encode() + b'\xff\xfe\xc3\x28\xed\xa0'
                              b'\x80\xf4\x90\x80\x80', 'text/html; charset=utf-8')
        if kind == 'mixed':
            return self._send(conn, '200 OK', (text % '\u20ac').encode('utf-8') +
                              (text % '\u00e9').encode('latin-1') +
                              (text % '\u0416').encode('koi8-r', 'replace'), 'text/html')
        if kind == 'utf16-lie':
            return self._send(conn, '200 OK', (text % 'x').encode('ascii', 'replace'),
                              'text/html; charset=utf-16')
        if kind == 'utf7':
            return self._send(conn, '200 OK', (text % '+ADw-script+AD4-').encode('utf-7'),
                              'text/html; charset=utf-7')
        if kind == 'nul':
            return self._send(conn, '200 OK', (text % 'a\0b').encode('utf-16-le'),
                              'text/html; charset="\0\xff"'.encode('latin-1')
                              .decode('latin-1'))
        raise ValueError(kind)

    def _h_deflate_bomb(self, conn, q):
        mib = int(q.get('mb', 1024))
        c = zlib.compressobj(9)
        head = self._head('200 OK', extra=['Content-Encoding: deflate'])

        def parts():       # compressed as sent: the client stops long before 1 GiB
            for _ in range(mib):
                yield c.compress(b'\0' * (1 << 20)) + c.flush(zlib.Z_SYNC_FLUSH)
            yield c.flush()
        return self._stream(conn, head, parts())

    def _h_double_gzip(self, conn, q):
        mib = int(q.get('mb', 256))
        inner = _gzip(b'\0' * (1 << 20)) * mib       # gzip members may follow each other
        body = _gzip(inner)
        return self._send(conn, '200 OK', body, extra=['Content-Encoding: gzip, gzip'])

    def _h_redirect_chain(self, conn, q):
        n = int(q.get('n', 50))
        if n <= 0:
            return self._send(conn, '200 OK', html_page('End of chain'))
        return self._send(conn, '302 Found', b'',
                          extra=['Location: /hostile/redirect-chain?n=%d' % (n - 1)])

    def _h_redirect(self, conn, q):
        return self._send(conn, '302 Found', b'', extra=['Location: ' + q.get('to', '/')])

    def _h_calendar(self, conn, q):
        y, m = (int(x) for x in q.get('d', '2026-11').split('-'))
        prev = (y, m - 1) if m > 1 else (y - 1, 12)
        nxt = (y, m + 1) if m < 12 else (y + 1, 1)
        links = ''.join('<a href="/hostile/calendar?d=%04d-%02d">%04d-%02d</a>' % (a, b, a, b)
                        for a, b in (prev, nxt))
        return self._send(conn, '200 OK', html_page('Calendar %04d-%02d' % (y, m), links))

    def _h_session(self, conn, q):
        with self.lock:
            n = len(self.requests)
        links = ''.join('<a href="/hostile/session;jsessionid=S%d%d?page=%d">p%d</a>'
                        % (n, i, i % 2, i) for i in range(3))
        return self._send(conn, '200 OK', html_page('Session trap', links))
