"""The project's fixture website: a real HTTP server on loopback, for tests and the demo.

Like Nutch's fetch-test-site and Scrapy's mockserver: a small site with pages over
several depths, a robots.txt with a Disallow, a duplicate page, a redirect, a 404, a
spider trap (ever-deeper links), a non-HTML file, a Latin-1 page, a nofollow link,
links in every spelling a crawler must normalise, two near-duplicate pages (the same long
article with another date and session id) and a printable page whose rel=canonical names
the page it copies; under /media/ (linked from nowhere else: seed it) film pages naming
a video and a still as secondary resources (tests/data/sites/media.toml). Every
request is logged (time,
client address, Host, path, User-Agent) so tests check politeness and robots from the
server's own log.

    with FixtureSite() as site:       # binds 127.0.0.1 on a port the OS picks
        site.url('/')                 # 'http://127.0.0.1:PORT/'
        site.requests                 # [{'t', 'path', 'ua', 'host', 'client', 'headers'}, ...]

Fault endpoints (Scrapy mockserver style), all under ``/fault/``, for the fetcher's
robustness tests; ``id=`` names a counter so "the first n requests" are per test:

    /fault/status?n=503                    that status, small HTML body
    /fault/flaky?n=2&code=503&id=X         `code` for the first n requests of id X, then 200
    /fault/retry-after?n=1&after=1&id=X    429 + Retry-After: after, n times, then 200
    /fault/delay?n=SECONDS                 waits before answering
    /fault/stall                           headers, then silence (read timeout)
    /fault/trickle?bytes=N&every=S         body one byte every S seconds
    /fault/trickle-headers?every=S         status line and headers one byte every S seconds
    /fault/drop                            closes the connection without an answer
    /fault/reset                           resets the connection (RST) without an answer
    /fault/big?bytes=N                     an HTML page of N bytes
    /fault/gzip-bomb?mb=N                  N MiB of zeros, gzip-compressed (~1 KiB per MiB)
    /fault/redirect?to=URL&code=302        a redirect to URL (absolute or relative)
    /fault/redirect-loop?i=K               /fault/redirect-loop?i=K+1 ... back to i=0 after 3
    /fault/redirect-chain?n=N              N redirects, then a page
    /fault/type?ct=TYPE                    an HTML body served as TYPE (wrong content types)
    /fault/charset?declared=L&actual=E&meta=M   Latin text in encoding E, header charset
                                           L (optional), <meta charset=M> (optional)
    /fault/conditional?etag=E              304 when If-None-Match is E, else 200 + ETag E

``FixtureSite(robots=BYTES, robots_status=CODE)`` serves another robots.txt.

Sitemaps (tests/test_sitemaps.py; give robots.txt a ``Sitemap: site.url(SITEMAP_INDEX)``
line): /sitemap_index.xml.gz, a gzipped sitemap index naming /sitemaps/pages.xml,
/sitemaps/more.xml.gz (gzipped) and /sitemaps/evil.xml (an XXE to a local file and to
/xxe-probe, and a billion-laughs entity), which list /hidden/N.html: pages no page links.
"""
import gzip
import hashlib
import http.server
import socket
import struct
import threading
import time
import urllib.parse
import zlib
from functools import partial

ROBOTS = b'User-agent: *\nDisallow: /private/\n'


def _page(title, body_html, head=''):
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s</title>%s</head>'
            '<body><h1>%s</h1>%s</body></html>' % (title, head, title, body_html)).encode()


def _links(*hrefs):
    return ''.join('<p><a href="%s">link to %s</a></p>' % (h, h) for h in hrefs)


DUPLICATE = _page('Same content', '<p>This page exists under two URLs.</p>' + _links('/'))

def _article():
    """A long English article (about 600 words), the same on every run."""
    import random
    rnd = random.Random(7)
    subjects = ['The crawler', 'A careful reader', 'The city library', 'Every small garden',
                'The morning train', 'Our old neighbour', 'The river valley', 'A patient cook']
    verbs = ['describes', 'remembers', 'collects', 'follows', 'explains', 'welcomes',
             'prepares', 'discovers']
    objects = ['the history of printed maps', 'a quiet walk along the harbour',
               'the seasons of the apple orchard', 'letters written during the long winter',
               'the recipe for a simple bread', 'the songs of migrating birds',
               'the rules of an ancient board game', 'the colours of the autumn forest']
    tails = ['before the market opens.', 'with great attention to detail.',
             'while the children are at school.', 'as the evening light fades slowly.',
             'because nobody else has written it down.', 'for the visitors who come in spring.']
    paras = []
    for _ in range(12):
        paras.append('<p>%s</p>' % ' '.join(
            '%s %s %s %s' % (rnd.choice(subjects), rnd.choice(verbs), rnd.choice(objects),
                             rnd.choice(tails)) for _ in range(5)))
    return ''.join(paras)


def _near_page(date, session):
    """The same article with other boilerplate: a date line and a session id."""
    return _page('A long article', (
        '<header><nav><a href="/">Home</a> <a href="/a.html">Archive</a></nav>'
        '<p>Printed on %s</p></header><article>%s</article>'
        '<footer><p>Session %s</p></footer>' % (date, _article(), session)))


PAGES = {
    '/': _page('Fixture home', _links(
        '/a.html', '/b.html', '/dup.html', '/redirect', '/missing',
        '/private/secret.html', '/trap/1/', '/latin1.html', '/image.png',
        'mailto:someone@example.invalid', 'javascript:void(0)', 'ftp://127.0.0.1/file',
        '/a.html#section', './a.html', '/%7Euser/') +
        '<p><a href="/nofollow.html" rel="nofollow">not followed</a></p>'),
    '/a.html': _page('Page A (depth 1)', _links('/a/1.html', '/', '/near1.html',
                                                '/near1b.html', '/a-print.html')),
    # Near duplicates (MRMerge's SimHash) and a page folded by its rel=canonical.
    '/near1.html': _near_page('Monday 30 November 2026', 'a81f3c07e2'),
    '/near1b.html': _near_page('Tuesday 1 December 2026', '5b9d02e4aa'),
    '/a-print.html': _page('Page A, printable', '<p>Page A in a layout for printing.</p>',
                           head='<link rel="canonical" href="/a.html">'),
    '/a/1.html': _page('Page A1 (depth 2)', _links('2.html', '/a.html')),
    '/a/2.html': _page('Page A2 (depth 3)', _links('3.html')),
    '/a/3.html': _page('Page A3 (depth 4)', _links('4.html')),
    '/a/4.html': _page('Page A4 (depth 5)', ''),
    '/b.html': DUPLICATE,
    '/dup.html': DUPLICATE,
    '/c.html': _page('Page C (redirect target)', _links('/', '/b.html')),
    '/~user/': _page('User page', '<p>Reached through %7Euser.</p>'),
    '/private/secret.html': _page('Secret', '<p>robots.txt forbids this page.</p>'),
    '/nofollow.html': _page('Not followed', ''),
    # Media pages (secondary resources): not linked from '/', so other crawls never see them.
    '/media/': _page('Films', _links('/media/film1.html', '/media/film2.html')),
    '/media/film1.html': _page('Film one', '<video><source src="clip.mp4"></video>'
                               '<img class="still" src="/media/still.jpg">'),
    '/media/film2.html': _page('Film two', '<video><source src="/media/clip.mp4"></video>'
                               '<video><source src="/private/trailer.mp4"></video>' +
                               _links('/media/clip.mp4', '/media/')),
}

SITEMAP_INDEX = '/sitemap_index.xml.gz'
#: The pages only the sitemaps list.
HIDDEN = ('/hidden/1.html', '/hidden/2.html', '/hidden/3.html')
PAGES.update({p: _page('Hidden page %s' % p[8], '<p>Listed in a sitemap only.</p>')
              for p in HIDDEN})


def _sitemap(site, path):
    """(body, content type) of the sitemap files, absolute URLs on *site*."""
    u = site.url
    if path == SITEMAP_INDEX:
        return gzip.compress(
            ('<?xml version="1.0" encoding="UTF-8"?><sitemapindex '
             'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</sitemapindex>' % ''.join(
                 '<sitemap><loc>%s</loc></sitemap>' % u(p) for p in (
                     '/sitemaps/pages.xml', '/sitemaps/more.xml.gz', '/sitemaps/evil.xml'))
             ).encode()), 'application/gzip'
    if path == '/sitemaps/pages.xml':
        return ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/'
                '0.9"><url><loc>%s</loc><lastmod>2026-11-01</lastmod></url><url><loc>%s</loc>'
                '</url></urlset>' % (u(HIDDEN[0]), u(HIDDEN[1]))).encode(), 'application/xml'
    if path == '/sitemaps/more.xml.gz':
        return gzip.compress(('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                              '<url><loc>%s</loc></url></urlset>' % u(HIDDEN[2])).encode()), \
            'application/x-gzip'
    if path == '/sitemaps/evil.xml':
        return ('<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY file SYSTEM '
                '"file:///etc/passwd"><!ENTITY probe SYSTEM "%s"><!ENTITY a "aaaaaaaaaa">'
                '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;'
                '&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;'
                '&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">]>'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s'
                '?x=&file;&probe;&f;</loc></url></urlset>' % (u('/xxe-probe'), u('/hidden/evil'))
                ).encode(), 'application/xml'
    return None, None


#: Bodies of the media files: deterministic bytes, the clip bigger than a small cap.
MEDIA = {
    '/media/clip.mp4': (bytes(range(256)) * 1024, 'video/mp4'),          # 256 KiB
    '/media/still.jpg': (b'\xff\xd8\xff\xe0' + bytes(range(200)) * 20, 'image/jpeg'),
    '/private/trailer.mp4': (b'\0' * 1000, 'video/mp4'),                 # robots: disallowed
}


def _gzip_member(mib=1):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)     # wbits 31: a gzip member
    return c.compress(b'\0' * (mib << 20)) + c.flush()


_GZIP_MIB = None    # one gzip member of 1 MiB of zeros; a bomb repeats it


def _charset_body(actual, meta):
    head = '<meta charset="%s">' % meta if meta else ''
    text = ('<!DOCTYPE html><html><head>%s<title>Caf\u00e9 cr\u00e8me</title></head>'
            '<body><p>Cr\u00e8me br\u00fbl\u00e9e, \u00e0 la carte.</p></body></html>' % head)
    return text.encode(actual, 'replace')


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'mrcrawl-fixture/1'

    def log_message(self, *args):     # the request log replaces stderr noise
        pass

    def _send(self, code, body=b'', ctype='text/html; charset=utf-8', headers=()):
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def do_GET(self):
        site = self.server.site
        path = self.path.split('?', 1)[0]
        with site.lock:
            site.requests.append({'t': time.monotonic(), 'path': self.path,
                                  'ua': self.headers.get('User-Agent', ''),
                                  'host': self.headers.get('Host', ''),
                                  'client': self.client_address[0],
                                  'headers': dict(self.headers.items())})
        if path == '/robots.txt':
            return self._send(site.robots_status, site.robots, 'text/plain')
        if path.startswith('/fault/'):
            return self._fault(path[len('/fault/'):], urllib.parse.parse_qs(
                self.path.partition('?')[2]))
        if path == '/redirect':
            return self._send(301, b'', headers=[('Location', '/c.html')])
        if path == '/latin1.html':
            return self._send(200, '<html><head><title>Caf\xe9</title></head><body>'
                              '<p>Cr\xe8me br\xfbl\xe9e</p></body></html>'.encode('latin-1'),
                              'text/html; charset=iso-8859-1')
        if path == SITEMAP_INDEX or path.startswith('/sitemaps/'):
            body, ctype = _sitemap(site, path)
            if body is not None:
                return self._send(200, body, ctype)
        if path in MEDIA:
            return self._send(200, MEDIA[path][0], MEDIA[path][1])
        if path == '/image.png':
            return self._send(200, b'\x89PNG\r\n\x1a\n' + b'\0' * 64, 'image/png')
        if path.startswith('/trap/'):
            parts = [p for p in path.split('/') if p][1:]
            nxt = str(len(parts) + 1)
            return self._send(200, _page('Trap level %d' % len(parts), _links(nxt + '/')))
        body = site.overrides.get(path, PAGES.get(path))
        if callable(body):
            body = body()
        if isinstance(body, tuple) and body[0] == 'redirect':     # ('redirect', '/to')
            return self._send(301, b'', headers=[('Location', body[1])])
        ctype, extra = 'text/html; charset=utf-8', ()
        if isinstance(body, tuple) and body[0] == 'typed':  # ('typed', ctype, bytes[, headers])
            ctype, body, extra = body[1], body[2], body[3] if len(body) > 3 else ()
        if body is None:
            return self._send(404, _page('Not found', ''))
        # The ordinary pages carry an ETag and answer a matching If-None-Match with 304,
        # as most servers do: re-crawls are tested against this.
        etag = '"%s"' % hashlib.sha1(body).hexdigest()[:16]
        if self.headers.get('If-None-Match') == etag:
            self.send_response(304)
            self.send_header('ETag', etag)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return None
        return self._send(200, body, ctype, headers=[('ETag', etag), *extra])

    do_HEAD = do_GET

    def _trickle(self, data, every):
        """Send *data* one byte every *every* seconds, until done or the site stops."""
        try:
            for byte in data:
                if self.server.site.stopping.is_set():
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(every)
        except OSError:
            pass
        self.close_connection = True

    # -- fault endpoints ------------------------------------------------------------

    def _hit(self, q):
        """How many times this id was asked before (for "the first n requests")."""
        site = self.server.site
        key = q.get('id', [self.path])[0]
        with site.lock:
            n = site.hits.get(key, 0)
            site.hits[key] = n + 1
        return n

    def _stay_quiet(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.server.site.stopping.is_set():
            time.sleep(0.05)

    def _fault(self, name, q):
        """/fault/NAME?...: one of the _fault_NAME endpoints below, else 404."""
        endpoint = getattr(self, '_fault_' + name.replace('-', '_'), None)
        if endpoint is None:
            return self._send(404, _page('No such fault', ''))
        return endpoint(q, partial(_arg, q), _page('Fault page ' + name, '<p>survived</p>'))

    def _fault_status(self, q, arg, ok):
        n = arg('n', 503)
        return self._send(n, _page('Status %d' % n, ''))

    def _fault_flaky(self, q, arg, ok):
        if self._hit(q) < arg('n', 1):
            return self._send(arg('code', 503), _page('Try again', ''))
        return self._send(200, ok)

    def _fault_retry_after(self, q, arg, ok):
        if self._hit(q) < arg('n', 1):
            return self._send(429, _page('Slow down', ''),
                              headers=[('Retry-After', q.get('after', ['1'])[0])])
        return self._send(200, ok)

    def _fault_delay(self, q, arg, ok):
        self._stay_quiet(arg('n', 1.0))
        return self._send(200, ok)

    def _fault_stall(self, q, arg, ok):
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Length', '1000')
        self.end_headers()
        self.wfile.flush()
        self._stay_quiet(arg('n', 30.0))
        self.close_connection = True
        return

    def _fault_trickle(self, q, arg, ok):
        n, every = arg('bytes', 1000), arg('every', 0.1)
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Length', str(n))
        self.end_headers()
        return self._trickle(b'a' * n, every)

    def _fault_trickle_headers(self, q, arg, ok):
        every = arg('every', 0.1)
        head = (b'HTTP/1.1 200 OK\r\n' + b''.join(
            b'X-Slow-%d: %s\r\n' % (i, b'x' * 20) for i in range(200)))
        return self._trickle(head, every)

    def _fault_drop(self, q, arg, ok):
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)
        return

    def _fault_reset(self, q, arg, ok):
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                   struct.pack('ii', 1, 0))
        self.connection.close()
        return

    def _fault_big(self, q, arg, ok):
        n = arg('bytes', 1 << 20)
        head, tail = b'<html><body><p>', b'</p></body></html>'
        body = head + b'a' * max(0, n - len(head) - len(tail)) + tail
        return self._send(200, body)

    def _fault_gzip_bomb(self, q, arg, ok):
        global _GZIP_MIB
        if _GZIP_MIB is None:
            _GZIP_MIB = _gzip_member()
        mib = arg('mb', 1024)
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Encoding', 'gzip')
        self.send_header('Content-Length', str(len(_GZIP_MIB) * mib))
        self.end_headers()
        try:
            for _ in range(mib):   # gzip allows members one after another
                self.wfile.write(_GZIP_MIB)
        except OSError:
            pass            # the client stopped reading at its limit
        self.close_connection = True
        return

    def _fault_redirect(self, q, arg, ok):
        return self._send(arg('code', 302), b'',
                          headers=[('Location', q.get('to', ['/'])[0])])

    def _fault_redirect_loop(self, q, arg, ok):
        i = (arg('i', 0) + 1) % 3
        return self._send(302, b'', headers=[('Location', '/fault/redirect-loop?i=%d' % i)])

    def _fault_redirect_chain(self, q, arg, ok):
        n = arg('n', 3)
        if n <= 0:
            return self._send(200, ok)
        return self._send(302, b'', headers=[
            ('Location', '/fault/redirect-chain?n=%d' % (n - 1))])

    def _fault_type(self, q, arg, ok):
        return self._send(200, ok, q.get('ct', ['application/octet-stream'])[0])

    def _fault_charset(self, q, arg, ok):
        declared = q.get('declared', [None])[0]
        body = _charset_body(q.get('actual', ['utf-8'])[0], q.get('meta', [None])[0])
        return self._send(200, body, 'text/html' + ('; charset=' + declared
                                                    if declared else ''))

    def _fault_conditional(self, q, arg, ok):
        etag = '"%s"' % q.get('etag', ['v1'])[0]
        if self.headers.get('If-None-Match') == etag:
            self.send_response(304)
            self.send_header('ETag', etag)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        return self._send(200, ok, headers=[('ETag', etag),
                                            ('Last-Modified', 'Mon, 30 Nov 2026 08:00:00 GMT')])


def _arg(q, k, default):
    """Query parameter *k* of a fault URL, as the type of its *default*."""
    return type(default)(q.get(k, [default])[0])


class FixtureSite:
    """The fixture website on *host* (a loopback address) and an OS-assigned port."""

    def __init__(self, host='127.0.0.1', port=0, robots=ROBOTS, robots_status=200):
        self.requests = []
        self.hits = {}
        self.robots = robots
        self.robots_status = robots_status
        #: path -> body bytes (None: 404; ("redirect", "/to"): a 301) replacing the
        #: site's pages, for re-crawls; or a function called in the request's thread
        #: that returns one (tests order requests through it: threading.Event)
        self.overrides = {}
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.httpd = http.server.ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        # Clients that hang up on purpose (timeouts, size limits) are not server errors.
        self.httpd.handle_error = lambda request, client_address: None
        self.httpd.site = self
        self.host, self.port = self.httpd.server_address[:2]
        self.thread = None

    def url(self, path='/'):
        return 'http://%s:%d%s' % (self.host, self.port, path)

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()       # ends stalls and trickles so shutdown is quick
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def paths(self):
        with self.lock:
            return [r['path'] for r in self.requests]
