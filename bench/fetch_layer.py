"""One fetch layer, mrcrawl (MRFetch, local runner) against Scrapy, on loopback hosts.

Starts HOSTS fixture sites on 127.0.0.2, 127.0.0.3, ... (PAGES pages each), then fetches
the same URL list with the same politeness twice: once with mrcrawl's fetch job, once
with a Scrapy spider (ROBOTSTXT_OBEY, CONCURRENT_REQUESTS_PER_DOMAIN=1, DOWNLOAD_DELAY,
RANDOMIZE_DOWNLOAD_DELAY=False, no link following). Prints, for each, the wall time,
the lower bound (largest per-host URL count x delay), and what each server logged:
requests, and the smallest gap between two requests to one host.

Scrapy lives in its own virtual environment (it is not a dependency of mrcrawl):

    python3 -m venv bench/.venv-scrapy && bench/.venv-scrapy/bin/pip install scrapy
    .venv/bin/python bench/fetch_layer.py [--hosts 20] [--pages 20] [--delay 0.5]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from drivers.crawl import local_runner_args  # noqa: E402
from drivers.fixtures.site import FixtureSite  # noqa: E402
from jobs.lib import config  # noqa: E402
from drivers.runtime.launch import make_runner  # noqa: E402

SCRAPY_PYTHON = os.path.join(ROOT, 'bench', '.venv-scrapy', 'bin', 'python')

SPIDER = r'''
import sys, json
import scrapy
from scrapy.crawler import CrawlerProcess

urls = [u.strip() for u in open(sys.argv[1]) if u.strip()]
delay = float(sys.argv[2])
got = []

class Layer(scrapy.Spider):
    name = 'layer'
    start_urls = urls
    def parse(self, response):
        got.append((response.url, response.status))   # no links followed

process = CrawlerProcess(settings={
    'ROBOTSTXT_OBEY': True, 'CONCURRENT_REQUESTS_PER_DOMAIN': 1,
    'CONCURRENT_REQUESTS': 256, 'DOWNLOAD_DELAY': delay,
    'RANDOMIZE_DOWNLOAD_DELAY': False, 'DOWNLOAD_DELAY_JITTER': 0,  # 2.19's new name
    'DEPTH_LIMIT': 0, 'LOG_LEVEL': 'ERROR', 'REMOTE_CONTROL_ENABLED': False,
    'TELNETCONSOLE_ENABLED': False, 'USER_AGENT': 'mrcrawl-bench-scrapy/1',
    'RETRY_ENABLED': False, 'COOKIES_ENABLED': False,
})
process.crawl(Layer)
process.start()
print(json.dumps({'responses': len(got)}))
'''


def server_stats(sites, since):
    reqs = [r for s in sites for r in s.requests if r['t'] >= since]
    gaps = []
    for s in sites:
        t = sorted(r['t'] for r in s.requests if r['t'] >= since)
        gaps += [b - a for a, b in zip(t, t[1:])]
    return {'requests': len(reqs),
            'robots_requests': sum(1 for r in reqs if r['path'] == '/robots.txt'),
            'min_gap_per_host': round(min(gaps), 3) if gaps else None}


def run_mrcrawl(urls, delay, work, runner_args):
    from jobs.fetch import MRFetch
    conf = config.load(overrides=['security.allow_private_networks=true',
                                  'politeness.delay=%s' % delay, 'fetch.threads=64'])
    conf_path = os.path.join(work, 'conf.json')
    with open(conf_path, 'w') as f:
        json.dump(conf, f)
    in_path = os.path.join(work, 'in.jsonl')
    with open(in_path, 'w') as f:
        f.writelines(json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n' for u in urls)
    out = os.path.join(work, 'doc-%d' % time.monotonic_ns())
    job = MRFetch(['-r', 'local', '--crawl-conf', conf_path, '--output-dir', out]
                  + local_runner_args() + runner_args + [in_path])
    start = time.monotonic()
    with make_runner(job) as runner:
        runner.run()
        docs = [v for _, v in job.parse_output(runner.cat_output())]
    seconds = time.monotonic() - start
    statuses = {}
    for d in docs:
        statuses[d['status']] = statuses.get(d['status'], 0) + 1
    return seconds, {'docs': len(docs), 'statuses': statuses}


def run_scrapy(urls, delay, work):
    url_file = os.path.join(work, 'urls.txt')
    with open(url_file, 'w') as f:
        f.writelines(u + '\n' for u in urls)
    spider = os.path.join(work, 'spider.py')
    with open(spider, 'w') as f:
        f.write(SPIDER)
    start = time.monotonic()
    out = subprocess.run([SCRAPY_PYTHON, spider, url_file, str(delay)], check=True,
                         capture_output=True, text=True)
    seconds = time.monotonic() - start
    return seconds, json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--hosts', type=int, default=20)
    ap.add_argument('--pages', type=int, default=20)
    ap.add_argument('--delay', type=float, default=0.5)
    ap.add_argument('--num-cores', type=int, action='append', default=[],
                    help='Also run mrcrawl with this --num-cores (local runner); repeatable.')
    args = ap.parse_args()
    sites = [FixtureSite('127.0.0.%d' % (i + 2)).start() for i in range(args.hosts)]
    urls = [s.url('/a.html?p=%d' % p) for s in sites for p in range(args.pages)]
    bound = args.pages * args.delay
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix='mrcrawl-bench-') as work:
            variants = [('mrcrawl MRFetch, local runner (default cores=%d)' % os.cpu_count(),
                         [])] + [('mrcrawl MRFetch, local runner --num-cores %d' % n,
                                  ['--num-cores', str(n)]) for n in args.num_cores]
            for name, extra in variants:
                since = time.monotonic()
                seconds, info = run_mrcrawl(urls, args.delay, work, extra)
                rows.append((name, seconds, info, server_stats(sites, since)))
            if os.path.exists(SCRAPY_PYTHON):
                since = time.monotonic()
                seconds, info = run_scrapy(urls, args.delay, work)
                rows.append(('Scrapy', seconds, info, server_stats(sites, since)))
            else:
                print('Scrapy venv missing (%s): skipped' % SCRAPY_PYTHON)
    finally:
        for s in sites:
            s.stop()
    print('%d hosts x %d pages, delay %.2f s: lower bound = %d x %.2f = %.1f s'
          % (args.hosts, args.pages, args.delay, args.pages, args.delay, bound))
    for name, seconds, info, stats in rows:
        print('%-52s %7.1f s  (%.2f x bound)  %s  server: %s'
              % (name, seconds, seconds / bound, json.dumps(info), json.dumps(stats)))


if __name__ == '__main__':
    main()
