"""Generate a deterministic synthetic multi-host web as static files for nginx.

    python bench/gen_web.py --hosts 20 --pages 60 --depth 3 --port 18631 --out bench/work/web-polite

Every host is a loopback address 127.0.X.Y (X from 10, Y from 10) on one port. Each host
has an index page (its seed, depth 0) and ``--pages`` HTML pages in all within the
depth, spread over layers 1..depth in host-specific proportions (so the largest host of
one layer is not the largest of the next), plus a few pages one hop beyond the depth
and, on most hosts, a robots.txt that disallows /private/ with pages there that are
linked but must not be fetched. Links:

- a spanning tree inside each host gives every page its level (link hops from the
  index); every other link points to a level at most one deeper than the linking page,
  so a page's shortest distance from the seeds is exactly its level;
- same-level and upward links (navigation), cross-host absolute links, links with
  ``#fragments`` and relative spellings, links to /private/, and duplicate URLs
  (``page.html?ref=...``: the same file under a second URL, as real sites do).

Page sizes are log-normal (median about 18 KB of HTML), text drawn from a fixed
pseudo-word vocabulary. The same arguments always give byte-identical files.

Writes ``OUT/<ip>/...`` (nginx roots), ``OUT/seeds.txt`` and ``OUT/manifest.json``: for
every URL reachable from the seeds (robots-allowed), its shortest link distance, found by
a breadth-first search over the generated links (not assumed from the levels), the
disallowed prefixes per host, and the politeness lower bounds for a given delay.

``--images``: every page also links an image with ``<a href=".../N.png">`` and embeds
one with ``<img>`` (small PNG files under /img/), as real pages do. A text crawler should
spend no politeness slot on them: they are not in the manifest's reachable URLs, and
their requests are counted apart by the analysis (``requests_to_images``).

``--change F`` changes a web generated before, in place, as time changes a real one (a
crawl cycle's refresh is measured on it, bench/refresh.py): a fraction F of its
reachable pages (not the seeds), half edited (a paragraph added: a new digest, the same
links), a quarter deleted (404), and as many new pages added, each linked from an
edited page one level up. ``OUT/changes.json`` lists them (``ip path``).
"""
import argparse
import json
import os
import random
import struct
import zlib
from collections import defaultdict, deque

WORDS_RNG_SEED = 1234


def host_ip(i):
    return '127.0.%d.%d' % (10 + i // 200, 10 + i % 200)


def make_vocab(rng, n=3000):
    letters = 'etaoinshrdlcumwfgypbvkjxqz'
    weights = [12, 9, 8, 7, 7, 6, 6, 6, 5, 4, 4, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]
    return [''.join(rng.choices(letters, weights, k=rng.randint(2, 11))) for _ in range(n)]


def make_sentences(rng, vocab, n=4000):
    out = []
    for _ in range(n):
        words = rng.choices(vocab, k=rng.randint(6, 24))
        out.append(' '.join(words).capitalize() + '.')
    return out


class Host:
    def __init__(self, index, ip, has_robots):
        self.index = index
        self.ip = ip
        self.has_robots = has_robots
        self.levels = []      # levels[l] = list of page paths at level l
        self.children = defaultdict(list)
        self.private = []


def build(args):
    rng = random.Random(args.seed)
    hosts = []
    for i in range(args.hosts):
        h = Host(i, host_ip(i), has_robots=rng.random() < 0.85)
        # Pages within the depth, split over levels 1..depth with host-specific weights.
        n = max(args.depth, args.pages - 1)
        weights = [rng.gammavariate(args.skew, 1.0) + 0.05 for _ in range(args.depth)]
        total = sum(weights)
        sizes = [max(1, int(n * w / total)) for w in weights]
        sizes[-1] += n - sum(sizes)
        if sizes[-1] < 1:   # rounding took too much from the last level
            sizes[sizes.index(max(sizes))] -= 1 - sizes[-1]
            sizes[-1] = 1
        beyond = max(1, int(round(args.pages * args.beyond)))
        counter = 0
        h.levels.append(['/'])
        for size in sizes + [beyond]:
            level = []
            for _ in range(size):
                counter += 1
                # Pages live in a few folders, so relative links have something to resolve.
                level.append('/%s/%d.html' % ('abcd'[counter % 4], counter))
            h.levels.append(level)
        for l in range(1, len(h.levels)):
            for path in h.levels[l]:
                h.children[rng.choice(h.levels[l - 1])].append(path)
        if h.has_robots:
            h.private = ['/private/%d.html' % k for k in range(1, 4)]
        hosts.append(h)
    return rng, hosts


def page_links(rng, h, hosts, level, path, args):
    """The links (href, anchor) of one page: every target at most level+1 deep."""
    links = [(c, None) for c in h.children.get(path, ())]
    links.append(('/', 'Home'))
    same = [p for l in range(0, min(level + 1, len(h.levels) - 1) + 1) for p in h.levels[l]]
    for _ in range(rng.randint(args.links // 2, args.links)):
        links.append((rng.choice(same), None))
    for _ in range(rng.randint(0, args.cross)):
        other = hosts[rng.randrange(len(hosts))]
        if other is h:
            continue
        lv = rng.randint(0, min(level + 1, len(other.levels) - 1))
        target = rng.choice(other.levels[lv])
        links.append(('http://%s:%d%s' % (other.ip, args.port, target), None))
    if h.private and rng.random() < 0.3:
        links.append((rng.choice(h.private), 'Members'))
    out = []
    folder = path.rsplit('/', 1)[0] + '/'
    for href, text in links:
        r = rng.random()
        if href.startswith('/') and href != '/' and r < 0.2 and href.startswith(folder):
            href = href[len(folder):]                 # same-folder relative spelling
        elif href.startswith('/') and href != '/' and r < 0.3 and folder != '/':
            href = '..' + href                        # ../a/3.html from /b/x.html
        elif r < 0.36:
            href = href + '#section-%d' % rng.randint(1, 5)
        elif r < 0.36 + args.dup_rate and not href.startswith('http') and href != '/':
            href = href + '?ref=nav'
        out.append((href, text))
    return out


def render(rng, h, title, links, sentences, args):
    size = min(args.max_size, max(args.min_size, int(rng.lognormvariate(args.median_log, 0.6))))
    parts = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
             '<title>%s</title>\n<meta name="viewport" content="width=device-width">\n'
             '<link rel="stylesheet" href="/static/site.css"></head>\n<body>\n'
             '<header><nav><a href="/">Home</a> | <a href="/about.html#team">About</a></nav>'
             '</header>\n<main><h1>%s</h1>\n' % (title, title)]
    length = sum(len(p) for p in parts)
    pending = list(links)
    rng.shuffle(pending)
    per_par = max(1, len(pending) // 8 + 1)
    while length < size or pending:
        sent = rng.choices(sentences, k=rng.randint(3, 8))
        if pending:
            chunk, pending = pending[:per_par], pending[per_par:]
            for href, text in chunk:
                anchor = text or ' '.join(rng.choice(sentences).split()[:rng.randint(1, 4)])
                sent.insert(rng.randrange(len(sent) + 1), '<a href="%s">%s</a>' % (href, anchor))
        p = '<p>%s</p>\n' % ' '.join(sent)
        parts.append(p)
        length += len(p)
    parts.append('</main>\n<footer><p>&copy; %s. All rights reserved.</p></footer>\n'
                 '</body></html>\n' % h.ip)
    return ''.join(parts)


def _png():
    """A 1x1 grey PNG: what the image links of --images serve."""
    def chunk(kind, data):
        return (struct.pack('>I', len(data)) + kind + data +
                struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 0, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(b'\x00\x80')) + chunk(b'IEND', b''))


PNG = _png()
IMAGES_PER_HOST = 40


def with_images(rng, root, html):
    """*html* with a link to an image and an embedded one, both under /img/ (written)."""
    linked, shown = ('/img/%d.png' % rng.randrange(IMAGES_PER_HOST) for _ in range(2))
    for name in (linked, shown):
        if not os.path.exists(os.path.join(root, name.lstrip('/'))):
            os.makedirs(os.path.join(root, 'img'), exist_ok=True)
            with open(os.path.join(root, name.lstrip('/')), 'wb') as f:
                f.write(PNG)
    return html.replace('</main>', '<p><a href="%s">Picture</a> <img src="%s" alt="">'
                        '</p>\n</main>' % (linked, shown), 1)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def change(args):
    """Edit, delete and add pages of the web in ``args.out`` (see the module doc)."""
    with open(os.path.join(args.out, 'manifest.json')) as f:
        manifest = json.load(f)
    rng = random.Random(args.seed * 7919 + 1)
    depth = manifest['args']['depth']
    pages = sorted(k for k, d in manifest['reachable'].items()
                   if d > 0 and '?' not in k and not k.endswith(' /about.html'))
    n = max(4, round(args.change * len(pages)))
    picked = rng.sample(pages, n)
    edited, deleted = picked[:n // 2], picked[n // 2:n // 2 + n // 4]
    # Each new page hangs off an edited page one level up, within the depth.
    parents = set([k for k in edited if manifest['reachable'][k] < depth][:len(deleted)])
    added = []

    def file_of(key):
        ip, path = key.split(' ', 1)
        return os.path.join(args.out, ip, 'index.html' if path == '/' else path.lstrip('/'))

    for i, key in enumerate(edited):
        with open(file_of(key), encoding='utf-8') as f:
            html = f.read()
        extra = '<p>Updated: a new paragraph, number %d of this change.</p>\n' % i
        if key in parents:
            ip = key.split(' ', 1)[0]
            new_path = '/new/%d.html' % i
            added.append('%s %s' % (ip, new_path))
            extra += '<p><a href="%s">A new page</a></p>\n' % new_path
            write(file_of(added[-1]), '<!DOCTYPE html>\n<html lang="en"><head><meta '
                  'charset="utf-8"><title>New page %d</title></head><body><main><h1>New '
                  'page %d</h1><p>Added by the change.</p></main></body></html>\n' % (i, i))
        write(file_of(key), html.replace('</main>', extra + '</main>', 1))
    for key in deleted:
        os.remove(file_of(key))
    out = {'fraction': args.change, 'reachable': len(pages) + len(manifest['hosts']),
           'edited': edited, 'deleted': deleted, 'added': added}
    with open(os.path.join(args.out, 'changes.json'), 'w') as f:
        json.dump(out, f, indent=0, sort_keys=True)
    print(json.dumps({k: len(v) if isinstance(v, list) else v for k, v in out.items()}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--hosts', type=int, default=20)
    p.add_argument('--pages', type=int, default=60, help='Pages within the depth, per host.')
    p.add_argument('--depth', type=int, default=3)
    p.add_argument('--port', type=int, default=18631)
    p.add_argument('--seed', type=int, default=9)
    p.add_argument('--out', required=True)
    p.add_argument('--links', type=int, default=24, help='Most extra same-host links a page has.')
    p.add_argument('--cross', type=int, default=3, help='Most cross-host links a page has.')
    p.add_argument('--skew', type=float, default=20.0,
                   help='Gamma shape of the per-host level weights (smaller: more uneven).')
    p.add_argument('--beyond', type=float, default=0.05,
                   help='Pages one hop past the depth, as a fraction of --pages.')
    p.add_argument('--dup-rate', type=float, default=0.004,
                   help='Share of links spelt as a duplicate URL (?ref=...).')
    p.add_argument('--median-log', type=float, default=9.8, help='ln(median page bytes).')
    p.add_argument('--min-size', type=int, default=3000)
    p.add_argument('--max-size', type=int, default=150000)
    p.add_argument('--delay', type=float, default=0.5, help='Delay for the bounds in the manifest.')
    p.add_argument('--images', action='store_true',
                   help='Link and embed an image on every page (see above).')
    p.add_argument('--change', type=float, default=None, metavar='F',
                   help='Change a fraction F of the pages of the web in --out (see above).')
    args = p.parse_args(argv)
    if args.change is not None:
        return change(args)

    rng, hosts = build(args)
    text_rng = random.Random(WORDS_RNG_SEED)
    sentences = make_sentences(text_rng, make_vocab(text_rng))
    by_ip = {h.ip: h for h in hosts}
    graph = {}   # (ip, path) -> targets as (ip, path-with-query) after resolution
    from urllib.parse import urljoin, urldefrag, urlsplit
    for h in hosts:
        root = os.path.join(args.out, h.ip)
        base = 'http://%s:%d' % (h.ip, args.port)
        if h.has_robots:
            write(os.path.join(root, 'robots.txt'),
                  'User-agent: *\nDisallow: /private/\n\nSitemap: %s/sitemap.xml\n' % base)
        write(os.path.join(root, 'about.html'),
              '<html><head><title>About %s</title></head><body><p>About.</p>'
              '<a href="/">Home</a></body></html>\n' % h.ip)
        pages = [(0, '/')] + [(l, path) for l in range(1, len(h.levels)) for path in h.levels[l]]
        pages += [(len(h.levels) - 1, path) for path in h.private]
        for level, path in pages:
            links = page_links(rng, h, hosts, level, path, args)
            title = 'Page %s on %s' % (path, h.ip)
            html = render(rng, h, title, links, sentences, args)
            if args.images:
                # Its own generator, so that the pages stay byte-identical to a web
                # generated without --images.
                html = with_images(random.Random('%s %s' % (h.ip, path)), root, html)
            fname = 'index.html' if path == '/' else path.lstrip('/')
            write(os.path.join(root, fname), html)
            url = base + path
            targets = []
            for href, _ in links + [('/about.html#team', None)]:
                t = urldefrag(urljoin(url, href))[0]
                s = urlsplit(t)
                targets.append((s.hostname, s.path + ('?' + s.query if s.query else '')))
            graph[(h.ip, path)] = targets

    # Breadth-first search from the seeds over the real links; robots-disallowed URLs are
    # known but not expanded (a polite crawler never fetches them).
    dist = {}
    queue = deque()
    for h in hosts:
        dist[(h.ip, '/')] = 0
        queue.append((h.ip, '/'))
    while queue:
        node = queue.popleft()
        ip, path = node
        if path.startswith('/private/') and by_ip[ip].has_robots:
            continue
        file_path = path.split('?', 1)[0]
        for t in graph.get((ip, file_path), ()):
            if t not in dist:
                dist[t] = dist[node] + 1
                queue.append(t)
    reachable = {}
    disallowed = set()
    per_layer_host = defaultdict(lambda: defaultdict(int))
    for (ip, path), d in dist.items():
        if path.startswith('/private/') and by_ip[ip].has_robots:
            if d <= args.depth:
                disallowed.add('%s %s' % (ip, path))
            continue
        if d <= args.depth:
            reachable['%s %s' % (ip, path)] = d
            per_layer_host[d][ip] += 1
    layered = sum(max(c.values()) for c in per_layer_host.values())
    per_host = defaultdict(int)
    for d, c in per_layer_host.items():
        for ip, n in c.items():
            per_host[ip] += n
    asynchronous = max(per_host.values())
    manifest = {
        'args': vars(args),
        'hosts': [h.ip for h in hosts],
        'port': args.port,
        'seeds': ['http://%s:%d/' % (h.ip, args.port) for h in hosts],
        'robots_disallow': {h.ip: ['/private/'] for h in hosts if h.has_robots},
        'reachable': reachable,
        'disallowed_linked': sorted(disallowed),
        'beyond_depth': sorted('%s %s' % k for k, d in dist.items() if d > args.depth),
        'layers': {str(d): {'urls': sum(c.values()), 'max_per_host': max(c.values())}
                   for d, c in sorted(per_layer_host.items())},
        'bound_urls_layered': layered,
        'bound_urls_async': asynchronous,
        'files': sum(len(h.levels[l]) for h in hosts for l in range(len(h.levels))),
    }
    with open(os.path.join(args.out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=0, sort_keys=True)
    with open(os.path.join(args.out, 'seeds.txt'), 'w') as f:
        f.write(''.join(s + '\n' for s in manifest['seeds']))
    total_bytes = sum(os.path.getsize(os.path.join(dp, fn))
                      for dp, _, fns in os.walk(args.out) for fn in fns)
    print(json.dumps({'hosts': len(hosts), 'reachable_urls': len(reachable),
                      'layers': manifest['layers'], 'bound_urls_layered': layered,
                      'bound_urls_async': asynchronous,
                      'bound_seconds_layered': layered * args.delay,
                      'bound_seconds_async': asynchronous * args.delay,
                      'bytes': total_bytes}))


if __name__ == '__main__':
    main()
