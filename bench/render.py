"""Rendering benchmark (issue 22): a web whose links and headings are built by a script,
crawled in one run by mrcrawl (`render = true`: its own routing fetches each of the
browser's requests) and by Scrapy with scrapy-playwright (the same Debian Chromium).

    make bench-render          # bench/.venv-scrapy/bin/python bench/render.py

The web (bench/work/web-render, nginx on loopback as in bench/run.py): ``--hosts`` hosts,
each an index page and ``--pages`` article pages; every page is an empty shell plus
``/app.js``, which builds its heading and, on the index, the links to the articles.
Without a browser a crawler finds no link and no heading. Both crawlers start from the
indexes (depth 1), obey robots.txt, keep ``--delay`` seconds between requests to a host
and render every page.

nginx serves ``app.js`` with ``Cache-Control: --script-cache`` (default ``max-age=3600``,
as sites serve their scripts; ``no-cache`` asks for revalidation each time). The
``mrcrawl-nocache`` run is mrcrawl with its cache of the browser's requests off
(``render.cache_bytes = 0``), in the same run.

Reported per crawler (the run of median wall of ``--repeat``): wall and CPU seconds,
pages whose heading was found, requests in the server's log, and the smallest gap
between two requests to one host (nginx's log: a gap below the delay is a politeness
violation; scrapy-playwright's browser fetches app.js itself, outside Scrapy's delay).
"""
import argparse
import collections
import json
import os
import shutil
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import MRCRAWL, RESULTS, ROOT, SCRAPY_PY, WORK, measure  # noqa: E402
from server import Nginx  # noqa: E402

PORT = 18651
SHELL = ('<html><head><title>%s</title><script src="/app.js"></script></head>'
         '<body><div id="app" data-page="%s"></div></body></html>')
APP_JS = textwrap.dedent('''\
    document.addEventListener('DOMContentLoaded', function () {
      var app = document.getElementById('app'), page = app.dataset.page, n = %d;
      var html = '<h1 class="heading">Heading of ' + page + '</h1>';
      if (page === 'index') {
        for (var i = 0; i < n; i++) html += '<a href="/a' + i + '.html">article ' + i + '</a> ';
      }
      app.innerHTML = html;
    });
''')

SPIDER = textwrap.dedent('''\
    import json, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess

    class Rendered(scrapy.Spider):
        name = 'rendered'

        async def start(self):
            for url in open(sys.argv[1]):
                if url.strip():
                    yield scrapy.Request(url.strip(), meta={'playwright': True})

        def parse(self, response):
            yield {'url': response.url, 'heading': response.css('h1.heading::text').get()}
            for href in response.css('a::attr(href)').getall():
                yield response.follow(href, meta={'playwright': True})

    process = CrawlerProcess(settings={
        'ROBOTSTXT_OBEY': True, 'CONCURRENT_REQUESTS': 64,
        'CONCURRENT_REQUESTS_PER_DOMAIN': 1, 'DOWNLOAD_DELAY': float(sys.argv[3]),
        'RANDOMIZE_DOWNLOAD_DELAY': False, 'RETRY_ENABLED': False, 'COOKIES_ENABLED': False,
        'DEPTH_LIMIT': 1, 'LOG_LEVEL': 'WARNING', 'TELNETCONSOLE_ENABLED': False,
        'DOWNLOAD_HANDLERS': {
            'http': 'scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler',
            'https': 'scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler'},
        'TWISTED_REACTOR': 'twisted.internet.asyncioreactor.AsyncioSelectorReactor',
        'PLAYWRIGHT_LAUNCH_OPTIONS': {'executable_path': '/usr/bin/chromium',
                                      'args': ['--no-sandbox']},
        'FEEDS': {sys.argv[2]: {'format': 'jsonlines'}}})
    process.crawl(Rendered)
    process.start()
''')

SITE = '[site]\nname = "app"\nhosts = ["127.0.3.*"]\nrender = true\n' \
       '[fields.heading]\ncss = "h1.heading"\n'


def generate(web, hosts, pages):
    if os.path.exists(web):
        shutil.rmtree(web)
    ips = ['127.0.3.%d' % (i + 1) for i in range(hosts)]
    seeds = []
    for ip in ips:
        root = os.path.join(web, ip)
        os.makedirs(root)
        with open(os.path.join(root, 'app.js'), 'w') as f:
            f.write(APP_JS % pages)
        with open(os.path.join(root, 'index.html'), 'w') as f:
            f.write(SHELL % ('Index of ' + ip, 'index'))
        for p in range(pages):
            with open(os.path.join(root, 'a%d.html' % p), 'w') as f:
                f.write(SHELL % ('Article %d of %s' % (p, ip), 'a%d' % p))
        seeds.append('http://%s:%d/' % (ip, PORT))
    with open(os.path.join(web, 'manifest.json'), 'w') as f:
        json.dump({'hosts': ips}, f)
    with open(os.path.join(web, 'seeds.txt'), 'w') as f:
        f.write('\n'.join(seeds) + '\n')
    return hosts * (pages + 1)


def server_log(path):
    """(requests, the smallest gap in seconds between two requests to one host)."""
    times = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            if 'python-urllib' not in line.lower():
                parts = line.split()
                times[parts[1]].append(float(parts[0]))
    gaps = [b - a for t in times.values() for a, b in zip(sorted(t), sorted(t)[1:])]
    return sum(len(t) for t in times.values()), round(min(gaps, default=0.0), 3)


def run_mrcrawl(web, work, delay, timeout, *settings):
    out, sites = os.path.join(work, 'mrcrawl'), os.path.join(work, 'sites')
    os.makedirs(sites, exist_ok=True)
    with open(os.path.join(sites, 'app.toml'), 'w') as f:
        f.write(SITE)
    cmd = MRCRAWL + ['crawl', '--seeds', os.path.join(web, 'seeds.txt'), '--depth', '1',
           '--out', out, '-r', 'local', '--set', 'security.allow_private_networks=true',
           '--set', 'politeness.delay=%s' % delay, '--set', 'parse.sites=["%s"]' % sites]
    for setting in settings:
        cmd += ['--set', setting]
    result = measure(cmd, timeout, log_path=os.path.join(work, 'mrcrawl.log'))
    found = 0
    for layer in sorted(os.listdir(os.path.join(out, 'out'))):
        folder = os.path.join(out, 'out', layer)
        for name in os.listdir(folder):
            if name.startswith('part-'):
                with open(os.path.join(folder, name)) as f:
                    found += sum(1 for line in f
                                 if (json.loads(line).get('fields') or {}).get('heading'))
    result['headings_found'] = found
    return result


def run_scrapy(web, work, delay, timeout):
    spider, items = os.path.join(work, 'render_spider.py'), os.path.join(work, 'scrapy.jl')
    with open(spider, 'w') as f:
        f.write(SPIDER)
    result = measure([SCRAPY_PY, spider, os.path.join(web, 'seeds.txt'), items, str(delay)],
                     timeout, log_path=os.path.join(work, 'scrapy.log'))
    with open(items) as f:
        result['headings_found'] = sum(1 for line in f if json.loads(line).get('heading'))
    return result


#: (name, run, mrcrawl settings), run in this order in each repetition.
CRAWLERS = (('mrcrawl', run_mrcrawl, ()), ('scrapy', run_scrapy, ()),
            ('mrcrawl-nocache', run_mrcrawl, ('render.cache_bytes=0',)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--hosts', type=int, default=8)
    ap.add_argument('--pages', type=int, default=10)
    ap.add_argument('--delay', type=float, default=0.2)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--timeout', type=int, default=1800)
    ap.add_argument('--script-cache', default='max-age=3600')
    ap.add_argument('--json', default=os.path.join(RESULTS, 'render.json'))
    a = ap.parse_args(argv)
    web, work = os.path.join(WORK, 'web-render'), os.path.join(WORK, 'render')
    pages = generate(web, a.hosts, a.pages)
    runs = collections.defaultdict(list)
    for _ in range(a.repeat):
        for name, run, settings in CRAWLERS:
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            log = os.path.join(work, name + '-access.log')
            with Nginx(web, os.path.join(work, 'nginx'), PORT, log, locations=(
                    '        location ~ \\.js$ { add_header Cache-Control "%s"; }'
                    % a.script_cache)):
                result = run(web, work, a.delay, a.timeout, *settings)
            result['requests'], result['min_gap_seconds'] = server_log(log)
            runs[name].append(result)
    # Per host, a delay apart: robots.txt, the index and app.js, then layer 1's articles
    # and app.js once more (a new fetch task, a new cache): 14 requests, 13 delays;
    # without a cache, app.js once per page: 23 requests.
    report = {'params': vars(a), 'pages': pages,
              'bound_seconds': round((a.pages + 3) * a.delay, 3),
              'bound_seconds_without_cache': round((2 * a.pages + 2) * a.delay, 3),
              'crawlers': {}}
    for name, results in runs.items():
        result = sorted(results, key=lambda r: r['wall_seconds'])[len(results) // 2]
        result['all_wall_seconds'] = [r['wall_seconds'] for r in results]
        report['crawlers'][name] = result
        print('%-15s wall %6.1fs %s cpu %6.1fs  headings %3d/%d  requests %4d  min gap %.3fs'
              % (name, result['wall_seconds'], result['all_wall_seconds'],
                 result['cpu_seconds'], result['headings_found'], pages,
                 result['requests'], result['min_gap_seconds']))
    m, s = report['crawlers']['mrcrawl'], report['crawlers']['scrapy']
    report['wall_ratio_mrcrawl_to_scrapy'] = round(m['wall_seconds'] / s['wall_seconds'], 3)
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, 'w') as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print('bound %.1fs (%.1fs without a cache); wall mrcrawl/scrapy %.2f -> %s' % (
        report['bound_seconds'], report['bound_seconds_without_cache'],
        report['wall_ratio_mrcrawl_to_scrapy'], a.json))


if __name__ == '__main__':
    os.chdir(ROOT)
    main()
