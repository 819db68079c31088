"""The wide, slow web of issue 48: thousands of hosts on loopback addresses, each with
its own latency, a few percent of them faulty. Defined in memory from a seeded RNG, so
the server (wide_server.py) and the judge (wide.py) build the same web from the same
arguments, and nothing is written to disk but the seeds and the manifest.

    python bench/wide_web.py --hosts 1000 --pages 11 --depth 4 --out DIR   # seeds + manifest

Host i is 127.(20 + i // 250).(1 + i % 250), all on one port (default 18647; the nginx
web of gen_web.py is 127.0.X.Y:18631). Per host, from the RNG:

- latency: seconds from a request's last header byte to its response, the same for every
  request of the host (so the politeness bound is exact): log-normal, median 0.12 s,
  sigma 0.8, clipped to 0.02..1.0 s (0.3 % of hosts at the 1 s clip);
- fault (about 5 %): ``hang`` 1 % (accepts, reads the request, never answers; the server
  closes the connection after --hang-seconds), ``reset`` 1 % (closes with a TCP RST on
  the first request), ``refused`` 1 % (nothing listens: connection refused), ``5xx`` 2 %
  (503 for every URL, robots.txt included). Their pages are not reachable;
- robots.txt: 85 % of hosts ``Disallow: /private/`` (and link to /private/ pages), the
  others answer 404 (everything allowed);
- pages: ``pages`` (+-2, at least depth + 1) pages within the depth: / (the seed, level
  0) and /p/L-K.html on levels 1..depth (a spanning tree: each page links its children),
  plus /private/x.html linked from / (disallowed by robots.txt, or a level-1 page where
  there is none) and one page one level beyond the depth. Every page links / and its
  parent, a same-level sibling, and with p = 0.3 another host's / (cross-host links go
  to seeds only, so a page's level is its depth from its own seed);
- page size: 2..40 KB of pseudo-text paragraphs (log-normal, median ~9 KB).

The politeness bound of a host is the sum of its requests' latencies (robots.txt + every
reachable URL) plus one delay between each two of them; the web's bound is the slowest
healthy host's.
"""
import argparse
import json
import math
import os
import random

FIRST_OCTET2 = 20
PER_X = 250
DEFAULT_PORT = 18647
FAULTS = (('hang', 0.01), ('reset', 0.01), ('refused', 0.01), ('5xx', 0.02))
ROBOTS_SHARE = 0.85
CROSS_LINK_P = 0.3
LAT_MEDIAN, LAT_SIGMA, LAT_MIN, LAT_MAX = 0.12, 0.8, 0.02, 1.0
ROBOTS_TXT = b'User-agent: *\nDisallow: /private/\n'

_WORDS = None


def _paragraphs(n=256, seed=4848):
    """A fixed pool of pseudo-text paragraphs (bytes), ~500-700 bytes each."""
    global _WORDS
    rng = random.Random(seed)
    letters = 'etaoinshrdlucmfwypvbgkqjxz'
    _WORDS = [''.join(rng.choice(letters[:12 + rng.randrange(14)])
                      for _ in range(2 + int(rng.expovariate(0.3)))) for _ in range(2000)]
    out = []
    for _ in range(n):
        words = [rng.choice(_WORDS) for _ in range(90 + rng.randrange(30))]
        out.append(('<p>' + ' '.join(words) + '.</p>\n').encode())
    return out


def host_addr(i):
    return '127.%d.%d.%d' % (FIRST_OCTET2 + i // (PER_X * 250), 20 + (i // PER_X) % 250,
                             1 + i % PER_X)


class Host:
    __slots__ = ('i', 'addr', 'latency', 'fault', 'robots', 'pages')

    def __init__(self, i, addr, latency, fault, robots):
        self.i, self.addr, self.latency, self.fault, self.robots = (
            i, addr, latency, fault, robots)
        self.pages = {}      # path -> (level, [links], n_paragraphs, para_offset)


class WideWeb:
    def __init__(self, hosts=1000, pages=11, depth=4, seed=48, port=DEFAULT_PORT):
        self.n, self.pages_per_host, self.depth, self.seed, self.port = (
            hosts, pages, depth, seed, port)
        if hosts > 250 * PER_X * 50:
            raise ValueError('too many hosts')
        rng = random.Random(seed)
        self.hosts = []
        for i in range(hosts):
            lat = math.exp(math.log(LAT_MEDIAN) + LAT_SIGMA * rng.gauss(0, 1))
            lat = round(min(LAT_MAX, max(LAT_MIN, lat)), 3)
            u, fault, acc = rng.random(), None, 0.0
            for name, share in FAULTS:
                acc += share
                if u < acc:
                    fault = name
                    break
            self.hosts.append(Host(i, host_addr(i), lat, fault, rng.random() < ROBOTS_SHARE))
        self.by_addr = {h.addr: h for h in self.hosts}
        for h in self.hosts:
            self._pages(h, random.Random('%d-%d' % (seed, h.i)))
        self.paras = _paragraphs()

    def url(self, h, path):
        return 'http://%s:%d%s' % (h.addr, self.port, path)

    def _pages(self, h, rng):
        d = self.depth
        n = max(d + 1, self.pages_per_host + rng.randrange(-2, 3))
        # pages per level 1..d: at least one each, the rest spread towards the top levels
        per = [1] * d
        for _ in range(n - 1 - d):
            per[min(d - 1, int(rng.expovariate(1.2)))] += 1
        levels = [['/']] + [['/p/%d-%d.html' % (lv, k) for k in range(c)]
                            for lv, c in enumerate(per, 1)]
        beyond = '/p/%d-0.html' % (d + 1)
        levels.append([beyond])
        parent = {'/': None}
        children = {p: [] for lv in levels for p in lv}
        for lv in range(1, len(levels)):
            for k, p in enumerate(levels[lv]):
                par = levels[lv - 1][k % len(levels[lv - 1])] if k < len(levels[lv - 1]) \
                    else rng.choice(levels[lv - 1])
                parent[p] = par
                children[par].append(p)
        private = '/private/x.html'
        for lv, paths in enumerate(levels):
            for k, p in enumerate(paths):
                links = list(children[p])
                if p != '/':
                    links.append('/')
                    if parent[p] != '/':
                        links.append(parent[p])
                    sib = paths[(k + 1) % len(paths)]
                    if sib != p:
                        links.append(sib + '#s')
                else:
                    links.append(private)
                    links.append('/#top')
                if rng.random() < CROSS_LINK_P:
                    o = self.hosts[rng.randrange(self.n)] if self.hosts else h
                    links.append(self.url(o, '/'))
                size = min(40000, max(2000, int(9000 * math.exp(0.6 * rng.gauss(0, 1)))))
                h.pages[p] = (lv, links, max(1, size // 600), rng.randrange(256))
        h.pages[private] = (1, ['/'], 3, rng.randrange(256))

    # ------------------------------------------------------------------ serving
    def body(self, h, path):
        """(status, content type, body bytes) of *path* on host *h* (fault hosts aside)."""
        if path == '/robots.txt':
            return (200, b'text/plain', ROBOTS_TXT) if h.robots else (
                404, b'text/plain', b'not found\n')
        page = h.pages.get(path.split('#', 1)[0])
        if page is None:
            return 404, b'text/html', b'<html><body>not found</body></html>\n'
        lv, links, npara, off = page
        paras = self.paras
        parts = [b'<!DOCTYPE html>\n<html><head><title>host %d page %s</title></head><body>\n'
                 b'<h1>%s</h1>\n' % (h.i, path.encode(), path.encode())]
        for j in range(npara):
            parts.append(paras[(off + j) % 256])
        parts.append(b'<ul>\n')
        for ln in links:
            parts.append(b'<li><a href="%s">%s</a></li>\n' % (ln.encode(), ln.encode()))
        parts.append(b'</ul>\n</body></html>\n')
        return 200, b'text/html; charset=utf-8', b''.join(parts)

    # ------------------------------------------------------------------ judging
    def manifest(self, delay):
        """Reachable URLs within the depth (BFS over the links written; robots.txt and
        faults applied), the disallowed and beyond-depth URLs, and the politeness bound."""
        from urllib.parse import urljoin
        start = [self.url(h, '/') for h in self.hosts]
        dist = {u: 0 for u in start}
        frontier = list(start)
        beyond, disallowed = set(), set()
        while frontier:
            nxt = []
            for u in frontier:
                addr = u.split('/')[2].split(':')[0]
                h = self.by_addr[addr]
                path = '/' + u.split('/', 3)[3]
                if h.fault or path not in h.pages:
                    continue
                for ln in h.pages[path][1]:
                    v = urljoin(u, ln).split('#', 1)[0]
                    if v in dist:
                        continue
                    vh = self.by_addr[v.split('/')[2].split(':')[0]]
                    vpath = '/' + v.split('/', 3)[3]
                    if vh.robots and vpath.startswith('/private/'):
                        disallowed.add(v)
                        continue
                    if dist[u] + 1 > self.depth:
                        beyond.add(v)
                        continue
                    dist[v] = dist[u] + 1
                    nxt.append(v)
            frontier = nxt
        reachable = {}
        for u in dist:
            h = self.by_addr[u.split('/')[2].split(':')[0]]
            if not h.fault:
                reachable.setdefault(h.addr, []).append('/' + u.split('/', 3)[3])
        per_host = {}
        for h in self.hosts:
            if h.fault:
                continue
            n = 1 + len(reachable.get(h.addr, ()))        # robots.txt + its pages
            per_host[h.addr] = round(n * h.latency + (n - 1) * delay, 3)
        slowest = max(per_host, key=per_host.get)
        faults = {}
        for h in self.hosts:
            if h.fault:
                faults[h.fault] = faults.get(h.fault, 0) + 1
        lats = sorted(h.latency for h in self.hosts)
        return {
            'args': dict(hosts=self.n, pages=self.pages_per_host, depth=self.depth,
                         seed=self.seed, port=self.port, delay=delay),
            # "ip path" keys, as analyze.py's
            'reachable': sorted('%s %s' % (a, p) for a, ps in reachable.items() for p in ps),
            'disallowed': sorted(disallowed),
            'beyond_depth': sorted(beyond),
            'robots_disallow': {h.addr: ['/private/'] for h in self.hosts if h.robots},
            'faults': faults,
            'fault_hosts': {h.addr: h.fault for h in self.hosts if h.fault},
            'latency_quantiles': {'p%d' % (q * 100): lats[min(len(lats) - 1, int(q * len(lats)))]
                                  for q in (0.5, 0.9, 0.99)} | {'max': lats[-1],
                                                                'mean': round(sum(lats) / len(lats), 4)},
            'bound_seconds': per_host[slowest],
            'bound_host': slowest,
            'bound_host_requests': 1 + len(reachable.get(slowest, ())),
            'bound_host_latency': self.by_addr[slowest].latency,
        }

    def seeds(self):
        return [self.url(h, '/') for h in self.hosts]


def web_arguments(description):
    """An argument parser with the options that make a WideWeb (wide_server.py too)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument('--hosts', type=int, default=1000)
    p.add_argument('--pages', type=int, default=11)
    p.add_argument('--depth', type=int, default=4)
    p.add_argument('--seed', type=int, default=48)
    p.add_argument('--port', type=int, default=DEFAULT_PORT)
    return p


def main(argv=None):
    p = web_arguments(__doc__.split('\n')[0])
    p.add_argument('--delay', type=float, default=1.0)
    p.add_argument('--out', required=True)
    a = p.parse_args(argv)
    web = WideWeb(a.hosts, a.pages, a.depth, a.seed, a.port)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, 'seeds.txt'), 'w') as f:
        f.write('\n'.join(web.seeds()) + '\n')
    m = web.manifest(a.delay)
    with open(os.path.join(a.out, 'manifest.json'), 'w') as f:
        json.dump(m, f)
    print(json.dumps({k: m[k] for k in ('faults', 'latency_quantiles', 'bound_seconds',
                                        'bound_host', 'bound_host_requests')}
                     | {'reachable': len(m['reachable'])}))


if __name__ == '__main__':
    main()
