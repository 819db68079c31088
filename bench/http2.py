"""Does HTTP/2 pay for a crawler's connections? (issue 51, item 4)

A crawler's politeness key sends one request at a time on its one connection, waiting
its delay between them: nothing to multiplex, which is what HTTP/2 brings. This bench
measures what is left, with curl (Debian's, libcurl with nghttp2) against nginx over
TLS on loopback: N requests of one page in turn on one connection, HTTP/1.1 and then
HTTP/2 (ALPN), each ROUNDS times; the median wall time. With --delay-ms D, curl talks to nginx through a relay
that holds every chunk D ms each way, as a distant host's network does (one round trip
= 2 D; this kernel has no netem).

    python bench/http2.py [--requests 200] [--rounds 5] [--page-kb 30] [--delay-ms 20]
"""
import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.daemons import free_port  # noqa: E402
from tests.nginx import Nginx  # noqa: E402
from tests.tls_site import make_certs  # noqa: E402

SERVER = """
server {
    listen 127.0.0.1:PORT ssl http2;
    ssl_certificate %s;
    ssl_certificate_key %s;
    keepalive_requests 100000;
    root DIR/www;
}
"""


def run_curl(web, ca, n, protocol):
    """Wall seconds of *n* requests in turn on one connection (checked: one connection,
    every answer in *protocol*)."""
    urls = ''.join('url = "%s"\noutput = "/dev/null"\n' % web.url('/page.html?%d' % i)
                   for i in range(n))
    with tempfile.NamedTemporaryFile('w', suffix='.curl', delete=False) as f:
        f.write(urls)
    try:
        start = time.monotonic()
        out = subprocess.run(
            ['curl', '-s', '--cacert', ca, '--' + protocol, '-K', f.name, '-w',
             '%{http_version} %{num_connects}\n'], check=True, capture_output=True,
            text=True).stdout
        wall = time.monotonic() - start
    finally:
        os.unlink(f.name)
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == n and {r[0] for r in rows} == {'2' if protocol == 'http2' else '1.1'}
    assert sum(int(r[1]) for r in rows) == 1, 'more than one connection'
    return wall


class DelayRelay:
    """127.0.0.1:port -> 127.0.0.1:*target*, every chunk held *delay* seconds each way,
    in order (a thread with its own event loop)."""

    def __init__(self, target, delay):
        self.target, self.delay, self.port = target, delay, free_port()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(asyncio.start_server(self._client, '127.0.0.1',
                                                          self.port))
        ready.set()
        self.loop.run_forever()

    async def _pump(self, reader, writer):
        queue = asyncio.Queue()

        async def send():
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if not chunk:
                    writer.close()
                    return
                writer.write(chunk)
                await writer.drain()
        sender = asyncio.ensure_future(send())
        while True:
            chunk = await reader.read(65536)
            queue.put_nowait((self.loop.time() + self.delay, chunk))
            if not chunk:
                break
        await sender

    async def _client(self, reader, writer):
        up_reader, up_writer = await asyncio.open_connection('127.0.0.1', self.target)
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer),
                             return_exceptions=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=200)
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--page-kb', type=int, default=30)
    ap.add_argument('--delay-ms', type=int, default=0)
    args = ap.parse_args()
    certs = make_certs(tempfile.mkdtemp(prefix='mrcrawl-h2-certs-'))
    page = b'<html><body>' + b'<p>crawl me</p>' * (args.page_kb * 64) + b'</body></html>'
    results = {'http1.1': [], 'http2': []}
    with Nginx(SERVER % certs['good'], {'www/page.html': page}) as web:
        if args.delay_ms:
            web.port = DelayRelay(web.port, args.delay_ms / 1000.0).port
        for _ in range(args.rounds):
            for protocol in results:
                results[protocol].append(run_curl(web, certs['ca'][0], args.requests,
                                                  protocol))
    print('%d requests of a %d KB page in turn on one TLS connection, %d rounds, loopback '
          'delay %d ms' % (args.requests, args.page_kb, args.rounds, args.delay_ms))
    print('%-8s %12s %14s' % ('protocol', 'wall s', 'ms/request'))
    walls = {}
    for protocol, rows in results.items():
        walls[protocol] = statistics.median(rows)
        print('%-8s %12.3f %14.3f' % (protocol, walls[protocol],
                                      1000 * walls[protocol] / args.requests))
    print('http2 / http1.1 wall: %.3f' % (walls['http2'] / walls['http1.1']))


if __name__ == '__main__':
    main()
