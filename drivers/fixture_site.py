"""The project's fixture website: a real HTTP server on loopback, for tests and the demo.

Like Nutch's fetch-test-site and Scrapy's mockserver: a small site with pages over
several depths, a robots.txt with a Disallow, a duplicate page, a redirect, a 404, a
spider trap (ever-deeper links), a non-HTML file, a Latin-1 page, a nofollow link and
links in every spelling a crawler must normalise. Every request is logged (time,
client address, Host, path, User-Agent) so tests check politeness and robots from the
server's own log.

    with FixtureSite() as site:       # binds 127.0.0.1 on a port the OS picks
        site.url('/')                 # 'http://127.0.0.1:PORT/'
        site.requests                 # [{'t', 'path', 'ua', 'host', 'client'}, ...]
"""
import http.server
import threading
import time

ROBOTS = b'User-agent: *\nDisallow: /private/\n'


def _page(title, body_html, head=''):
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s</title>%s</head>'
            '<body><h1>%s</h1>%s</body></html>' % (title, head, title, body_html)).encode()


def _links(*hrefs):
    return ''.join('<p><a href="%s">link to %s</a></p>' % (h, h) for h in hrefs)


DUPLICATE = _page('Same content', '<p>This page exists under two URLs.</p>' + _links('/'))

PAGES = {
    '/': _page('Fixture home', _links(
        '/a.html', '/b.html', '/dup.html', '/redirect', '/missing',
        '/private/secret.html', '/trap/1/', '/latin1.html', '/image.png',
        'mailto:someone@example.invalid', 'javascript:void(0)', 'ftp://127.0.0.1/file',
        '/a.html#section', './a.html', '/%7Euser/') +
        '<p><a href="/nofollow.html" rel="nofollow">not followed</a></p>'),
    '/a.html': _page('Page A (depth 1)', _links('/a/1.html', '/')),
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
}


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
                                  'client': self.client_address[0]})
        if path == '/robots.txt':
            return self._send(200, ROBOTS, 'text/plain')
        if path == '/redirect':
            return self._send(301, b'', headers=[('Location', '/c.html')])
        if path == '/latin1.html':
            return self._send(200, '<html><head><title>Caf\xe9</title></head><body>'
                              '<p>Cr\xe8me br\xfbl\xe9e</p></body></html>'.encode('latin-1'),
                              'text/html; charset=iso-8859-1')
        if path == '/image.png':
            return self._send(200, b'\x89PNG\r\n\x1a\n' + b'\0' * 64, 'image/png')
        if path.startswith('/trap/'):
            parts = [p for p in path.split('/') if p][1:]
            nxt = str(len(parts) + 1)
            return self._send(200, _page('Trap level %d' % len(parts), _links(nxt + '/')))
        body = PAGES.get(path)
        if body is None:
            return self._send(404, _page('Not found', ''))
        return self._send(200, body)

    do_HEAD = do_GET


class FixtureSite:
    """The fixture website on *host* (a loopback address) and an OS-assigned port."""

    def __init__(self, host='127.0.0.1', port=0):
        self.requests = []
        self.lock = threading.Lock()
        self.httpd = http.server.ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.site = self
        self.host, self.port = self.httpd.server_address[:2]
        self.thread = None

    def url(self, path='/'):
        return 'http://%s:%d%s' % (self.host, self.port, path)

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def paths(self):
        with self.lock:
            return [r['path'] for r in self.requests]
