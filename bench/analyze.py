"""Judge one crawl from nginx's access log (the ground truth) and the web's manifest.

    python bench/analyze.py WEB_DIR/manifest.json ACCESS_LOG --delay 0.5 [--agent mrcrawl]

Counts, from the requests the server actually saw (only those whose User-Agent contains
``--agent``):

- pages: requests for anything but robots.txt; distinct_urls; repeats (same URL twice);
- coverage: share of the URLs reachable within the depth (manifest) that were requested
  and answered below 400 (a reachable page exists: a 4xx/5xx for it is the server
  failing, which must not count as covered);
- beyond_depth: requests for URLs farther than the depth;
- robots_violations: requests for paths the host's robots.txt disallows;
- politeness_violations: consecutive requests to one host closer than delay - 10 ms
  (by $msec, the time nginx logged the response; robots.txt requests included);
- robots_requests, requests_to_images (/img/: gen_web.py --images), and the status codes.
"""
import argparse
import json
from collections import Counter, defaultdict

TOLERANCE = 0.010


def parse_log(path, agent):
    """Yield (t, ip, uri, status, bytes) of the lines whose user agent contains *agent*."""
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            head, _, ua = line.rstrip('\n').rpartition(' "')
            if agent and agent not in ua:
                continue
            t, ip, _host, rest = head.split(' ', 3)
            uri_q, _, tail = rest[1:].partition('" ')
            status, nbytes, _rt = tail.split(' ')
            yield float(t), ip, uri_q, int(status), int(nbytes)


def analyze(manifest, log_path, delay, agent):
    reachable = manifest['reachable']
    beyond = set(manifest['beyond_depth'])
    disallow = manifest['robots_disallow']
    by_host = defaultdict(list)
    seen = Counter()
    answered = set()     # URLs answered below 400
    statuses = Counter()
    robots_requests = robots_violations = beyond_hits = nbytes = images = 0
    first = last = None
    for t, ip, uri, status, size in parse_log(log_path, agent):
        first = t if first is None else min(first, t)
        last = t if last is None else max(last, t)
        by_host[ip].append(t)
        if uri == '/robots.txt':
            robots_requests += 1
            continue
        statuses[status] += 1
        nbytes += size
        if uri.startswith('/img/'):
            images += 1
        # The fragment never reaches the server; the path is compared as sent.
        seen['%s %s' % (ip, uri)] += 1
        if status < 400:
            answered.add('%s %s' % (ip, uri))
        path = uri.split('?', 1)[0]
        if any(path.startswith(p) for p in disallow.get(ip, ())):
            robots_violations += 1
        if '%s %s' % (ip, uri) in beyond:
            beyond_hits += 1
    violations, min_gap = 0, None
    for ip, times in by_host.items():
        times.sort()
        for a, b in zip(times, times[1:]):
            gap = b - a
            min_gap = gap if min_gap is None else min(min_gap, gap)
            if gap < delay - TOLERANCE:
                violations += 1
    covered = sum(1 for u in reachable if u in answered)
    return {
        'pages': sum(seen.values()),
        'distinct_urls': len(seen),
        'repeats': sum(n - 1 for n in seen.values() if n > 1),
        'reachable': len(reachable),
        'covered': covered,
        'coverage': round(covered / len(reachable), 4) if reachable else None,
        'beyond_depth': beyond_hits,
        'robots_requests': robots_requests,
        'requests_to_images': images,
        'robots_violations': robots_violations,
        'politeness_violations': violations,
        'min_gap_same_host': round(min_gap, 4) if min_gap is not None else None,
        'statuses': {str(k): v for k, v in sorted(statuses.items())},
        'bytes': nbytes,
        'server_span_seconds': round(last - first, 3) if first is not None else None,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('manifest')
    p.add_argument('log')
    p.add_argument('--delay', type=float, default=0.0)
    p.add_argument('--agent', default='')
    args = p.parse_args(argv)
    with open(args.manifest) as f:
        manifest = json.load(f)
    print(json.dumps(analyze(manifest, args.log, args.delay, args.agent), indent=1))


if __name__ == '__main__':
    main()
