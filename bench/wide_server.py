"""Serve the wide, slow web (wide_web.py): one asyncio process, one listening socket per
host on 127.x.y.z (loopback only), each response sent after its host's latency.

    python bench/wide_server.py --hosts 1000 --pages 11 --depth 4 --log ACCESS_LOG \
        [--port 18647] [--hang-seconds 30] [--max-seconds 7200]

Prints ``ready N`` on stdout once every socket listens. SIGTERM or SIGINT: flush the log
and exit; --max-seconds is a hard stop in any case. HTTP/1.1 with keep-alive (HTTP/1.0
or ``Connection: close``: one request per connection), GET and HEAD.

The access log is the benchmark's ground truth, one line a request:

    START END ADDR "PATH" STATUS BYTES "USER-AGENT"

START: the request's headers complete; END: the response handed to the kernel (or, for
a request never answered, the connection's close); STATUS 0: not answered (hang: closed
by the server after --hang-seconds, or by the client first; reset: closed with a RST).
"""
import asyncio
import os
import resource
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wide_web import WideWeb, web_arguments  # noqa: E402

REASONS = {200: b'OK', 404: b'Not Found', 503: b'Service Unavailable', 400: b'Bad Request'}


class Log:
    def __init__(self, path):
        self.f = open(path, 'a', buffering=1 << 20)
        self.n = 0

    def write(self, start, end, addr, path, status, nbytes, ua):
        if self.f.closed:      # a timer of a connection still open at the stop
            return
        self.f.write('%.6f %.6f %s "%s" %d %d "%s"\n' % (
            start, end, addr, path.replace('"', '%22'), status, nbytes, ua.replace('"', "'")))
        self.n += 1

    def close(self):
        self.f.close()


class HostProtocol(asyncio.Protocol):
    __slots__ = ('web', 'host', 'log', 'hang', 'loop', 'transport', 'buf', 'busy',
                 'pending', 'closed')

    def __init__(self, web, host, log, hang, loop):
        self.web, self.host, self.log, self.hang, self.loop = web, host, log, hang, loop
        self.buf = b''
        self.busy = False
        self.pending = None      # (start, path, ua) of a request never answered
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        self.closed = True
        if self.pending is not None:
            start, path, ua = self.pending
            self.pending = None
            self.log.write(start, time.time(), self.host.addr, path, 0, 0, ua)

    def data_received(self, data):
        self.buf += data
        if not self.busy:
            self._next()

    def _next(self):
        end = self.buf.find(b'\r\n\r\n')
        if end < 0:
            if len(self.buf) > 65536:
                self.transport.close()
            return
        head, self.buf = self.buf[:end].decode('latin-1'), self.buf[end + 4:]
        start = time.time()
        lines = head.split('\r\n')
        try:
            method, target, version = lines[0].split(' ')
        except ValueError:
            self.transport.close()
            return
        ua, conn = '', ''
        for ln in lines[1:]:
            k, _, v = ln.partition(':')
            k = k.strip().lower()
            if k == 'user-agent':
                ua = v.strip()
            elif k == 'connection':
                conn = v.strip().lower()
        keep = (version == 'HTTP/1.1' and conn != 'close') or conn == 'keep-alive'
        if target.startswith('http://') or target.startswith('https://'):
            target = '/' + target.split('/', 3)[3] if target.count('/') >= 3 else '/'
        self.busy = True
        fault = self.host.fault
        if fault == 'hang':
            self.pending = (start, target, ua)
            self.loop.call_later(self.hang, self._hang_up)
            return
        if fault == 'reset':
            self.log.write(start, time.time(), self.host.addr, target, 0, 0, ua)
            sock = self.transport.get_extra_info('socket')
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            self.transport.abort()
            return
        self.pending = (start, target, ua)
        self.loop.call_later(self.host.latency, self._respond, start, method, target, ua, keep)

    def _hang_up(self):
        if not self.closed:
            self.transport.close()

    def _respond(self, start, method, target, ua, keep):
        if self.closed:
            return
        self.pending = None
        if self.host.fault == '5xx':
            status, ctype, body = 503, b'text/html', b'<html><body>down</body></html>\n'
        else:
            status, ctype, body = self.web.body(self.host, target)
        head = b'HTTP/1.1 %d %s\r\nServer: widebench\r\nContent-Type: %s\r\n' \
               b'Content-Length: %d\r\n%s\r\n' % (
                   status, REASONS.get(status, b'X'), ctype, len(body),
                   b'' if keep else b'Connection: close\r\n')
        self.transport.write(head + body if method != 'HEAD' else head)
        self.log.write(start, time.time(), self.host.addr, target, status,
                       len(body) if method != 'HEAD' else 0, ua)
        self.busy = False
        if not keep:
            self.transport.close()
        elif self.buf:
            self._next()


async def serve(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    web = WideWeb(args.hosts, args.pages, args.depth, args.seed, args.port)
    log = Log(args.log)
    loop = asyncio.get_running_loop()
    servers = []
    for h in web.hosts:
        if h.fault == 'refused':
            continue
        assert h.addr.startswith('127.')
        servers.append(await loop.create_server(
            lambda h=h: HostProtocol(web, h, log, args.hang_seconds, loop),
            h.addr, args.port, reuse_address=True, backlog=64))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.call_later(args.max_seconds, stop.set)

    async def flusher():
        while True:
            await asyncio.sleep(1.0)
            log.f.flush()
    fl = asyncio.ensure_future(flusher())
    print('ready %d' % len(servers), flush=True)
    await stop.wait()
    fl.cancel()
    for s in servers:
        s.close()
    log.close()


def main(argv=None):
    p = web_arguments(__doc__.split('\n')[0])
    p.add_argument('--log', required=True)
    p.add_argument('--hang-seconds', type=float, default=30.0)
    p.add_argument('--max-seconds', type=float, default=7200.0)
    asyncio.run(serve(p.parse_args(argv)))


if __name__ == '__main__':
    main()
