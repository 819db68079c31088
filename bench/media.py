"""Media benchmark (issue 22): gallery pages naming images, crawled in one run by mrcrawl
(the media store: bytes by digest, a Pillow thumbnail each) and by Scrapy's
ImagesPipeline (bytes by URL hash, re-encoded as JPEG, a thumbnail each).

    make bench-media          # bench/.venv-scrapy/bin/python bench/media.py

The web (bench/work/web-media, nginx on loopback as in bench/run.py): ``--hosts`` hosts,
each with ``--pages`` gallery pages naming ``--images`` photos each (JPEG, 1024x768,
distinct bytes) and one logo whose bytes every host shares under its own URL. Both
crawlers start from every gallery page (depth 0: mrcrawl fetches the named files in its
resources-only layer, Scrapy in the same crawl), obey robots.txt, keep one connection
and ``--delay`` seconds per host, and make 320-pixel thumbnails.

Reported per crawler: wall and CPU seconds, requests in the server's log, files and
bytes stored, thumbnails; for mrcrawl also its fetch steps' seconds (the rest is its
merge, XML and index). The physical limit, (largest per-host request count) x delay,
is reported beside them.
"""
import argparse
import collections
import io
import json
import os
import random
import shutil
import sys
import textwrap

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import MRCRAWL, RESULTS, ROOT, SCRAPY_PY, WORK, measure  # noqa: E402
from server import Nginx  # noqa: E402

PORT = 18641

SPIDER = textwrap.dedent('''\
    import json, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.pipelines.images import ImagesPipeline

    class Gallery(scrapy.Spider):
        name = 'gallery'
        start_urls = [u.strip() for u in open(sys.argv[1]) if u.strip()]

        def parse(self, response):
            yield {'url': response.url,
                   'image_urls': [response.urljoin(s) for s in
                                  response.css('img.photo::attr(src)').getall()]}

    process = CrawlerProcess(settings={
        'ROBOTSTXT_OBEY': True, 'CONCURRENT_REQUESTS': 64,
        'CONCURRENT_REQUESTS_PER_DOMAIN': 1, 'DOWNLOAD_DELAY': float(sys.argv[3]),
        'RANDOMIZE_DOWNLOAD_DELAY': False, 'RETRY_ENABLED': False, 'COOKIES_ENABLED': False,
        'LOG_LEVEL': 'WARNING', 'TELNETCONSOLE_ENABLED': False,
        'ITEM_PIPELINES': {'scrapy.pipelines.images.ImagesPipeline': 1},
        'IMAGES_STORE': sys.argv[2], 'IMAGES_THUMBS': {'small': (320, 320)},
        'MEDIA_ALLOW_REDIRECTS': True})
    process.crawl(Gallery)
    process.start()
''')

SITE = textwrap.dedent('''\
    [site]
    name = "gallery"
    hosts = ["127.0.2.*"]
    [resources.photo]
    css = "img.photo"
    attr = "src"
    max_bytes = 5000000
''')


def photo(seed, shared=False):
    """A 1024x768 JPEG of smooth noise: ~100 KB, distinct per seed."""
    rnd = random.Random(seed)
    small = Image.new('RGB', (32, 24))
    small.putdata([tuple(rnd.randrange(256) for _ in range(3)) for _ in range(32 * 24)])
    big = small.resize((1024, 768), Image.BICUBIC)
    buf = io.BytesIO()
    big.save(buf, 'JPEG', quality=85)
    return buf.getvalue()


def generate(web, hosts, pages, images):
    """The gallery web: {host: [files]}, manifest.json and seeds.txt."""
    if os.path.exists(web):
        shutil.rmtree(web)
    ips = ['127.0.2.%d' % (i + 1) for i in range(hosts)]
    logo = photo('logo')
    seeds = []
    for h, ip in enumerate(ips):
        root = os.path.join(web, ip)
        os.makedirs(os.path.join(root, 'img'))
        with open(os.path.join(root, 'img', 'logo.jpg'), 'wb') as f:
            f.write(logo)
        for p in range(pages):
            names = ['img/p%d-%d.jpg' % (p, i) for i in range(images)]
            for i, name in enumerate(names):
                with open(os.path.join(root, name), 'wb') as f:
                    f.write(photo('%d-%d-%d' % (h, p, i)))
            body = ''.join('<img class="photo" src="/%s">' % n for n in names + ['img/logo.jpg'])
            with open(os.path.join(root, 'g%d.html' % p), 'w') as f:
                f.write('<html><head><title>Gallery %d of %s</title></head><body><h1>'
                        'Gallery %d</h1>%s</body></html>' % (p, ip, p, body))
            seeds.append('http://%s:%d/g%d.html' % (ip, PORT, p))
    with open(os.path.join(web, 'manifest.json'), 'w') as f:
        json.dump({'hosts': ips}, f)
    with open(os.path.join(web, 'seeds.txt'), 'w') as f:
        f.write('\n'.join(seeds) + '\n')
    return seeds


def files_under(folder, suffix=''):
    found = [os.path.join(d, n) for d, _, names in os.walk(folder) for n in names
             if n.endswith(suffix)]
    return len(found), sum(os.path.getsize(p) for p in found)


def log_requests(path):
    """(requests, largest per-host request count) in the nginx access log."""
    per_host = collections.Counter()
    with open(path) as f:
        for line in f:
            if 'python-urllib' not in line.lower():
                per_host[line.split()[1]] += 1
    return sum(per_host.values()), max(per_host.values(), default=0)


def run_mrcrawl(web, work, delay, timeout):
    out = os.path.join(work, 'mrcrawl')
    sites = os.path.join(work, 'sites')
    os.makedirs(sites, exist_ok=True)
    with open(os.path.join(sites, 'gallery.toml'), 'w') as f:
        f.write(SITE)
    cmd = MRCRAWL + ['crawl', '--seeds', os.path.join(web, 'seeds.txt'), '--depth', '0',
           '--out', out, '-r', 'local', '--set', 'security.allow_private_networks=true',
           '--set', 'politeness.delay=%s' % delay, '--set', 'parse.sites=["%s"]' % sites,
           '--set', 'filter.deny_extensions=[]']
    result = measure(cmd, timeout, log_path=os.path.join(work, 'mrcrawl.log'))
    fetch = {'seconds': 0.0, 'stored': 0, 'already': 0, 'previews': 0, 'reused': 0}
    for name in sorted(os.listdir(os.path.join(out, 'steps'))):
        if name.startswith('fetch-'):
            with open(os.path.join(out, 'steps', name)) as f:
                step = json.load(f)
            c = step['counters'].get('fetch', {})
            fetch['seconds'] += step['seconds']
            fetch['stored'] += c.get('media_stored_total', 0)
            fetch['already'] += c.get('media_already_stored_total', 0)
            fetch['previews'] += c.get('previews_made_total', 0)
            fetch['reused'] += c.get('previews_reused_total', 0)
    media = os.path.join(out, 'media')
    files, size = files_under(media)
    thumbs, _ = files_under(media, '.preview.jpg')
    result.update(fetch_steps=fetch, files_stored=files - thumbs, thumbnails=thumbs,
                  bytes_stored=size)
    return result


def run_scrapy(web, work, delay, timeout):
    spider = os.path.join(work, 'gallery_spider.py')
    with open(spider, 'w') as f:
        f.write(SPIDER)
    store = os.path.join(work, 'scrapy-images')
    cmd = [SCRAPY_PY, spider, os.path.join(web, 'seeds.txt'), store, str(delay)]
    result = measure(cmd, timeout, log_path=os.path.join(work, 'scrapy.log'))
    files, size = files_under(os.path.join(store, 'full'))
    thumbs, tsize = files_under(os.path.join(store, 'thumbs'))
    result.update(files_stored=files, thumbnails=thumbs, bytes_stored=size + tsize)
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--hosts', type=int, default=8)
    ap.add_argument('--pages', type=int, default=10)
    ap.add_argument('--images', type=int, default=4)
    ap.add_argument('--delay', type=float, default=0.05)
    ap.add_argument('--timeout', type=int, default=1800)
    ap.add_argument('--repeat', type=int, default=3,
                    help='Runs of each crawler, alternating; the run of median wall counts.')
    ap.add_argument('--json', default=os.path.join(RESULTS, 'media.json'))
    a = ap.parse_args(argv)
    web, work = os.path.join(WORK, 'web-media'), os.path.join(WORK, 'media')
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    seeds = generate(web, a.hosts, a.pages, a.images)
    report = {'params': vars(a), 'pages': len(seeds),
              'image_urls': len(seeds) * a.images + a.hosts,
              'distinct_images': len(seeds) * a.images + 1, 'crawlers': {}}
    runs = collections.defaultdict(list)
    for _ in range(a.repeat):
        for name, run in (('mrcrawl', run_mrcrawl), ('scrapy', run_scrapy)):
            for old in ('mrcrawl', 'scrapy-images'):
                shutil.rmtree(os.path.join(work, old), ignore_errors=True)
            log = os.path.join(work, name + '-access.log')
            with Nginx(web, os.path.join(work, 'nginx-' + name), PORT, log) as server:
                result = run(web, work, a.delay, a.timeout)
                result['server_cpu_seconds'] = server.cpu_seconds()
            result['requests'], top = log_requests(log)
            result['bound_seconds'] = round(top * a.delay, 3)
            runs[name].append(result)
    for name, results in runs.items():
        result = sorted(results, key=lambda r: r['wall_seconds'])[len(results) // 2]
        result['all_wall_seconds'] = [r['wall_seconds'] for r in results]
        report['crawlers'][name] = result
        print('%-8s wall %7.1fs cpu %7.1fs  requests %5d  stored %4d files %6.1f MB  '
              'thumbnails %4d  bound %.1fs' % (
                  name, result['wall_seconds'], result['cpu_seconds'], result['requests'],
                  result['files_stored'], result['bytes_stored'] / 1e6,
                  result['thumbnails'], result['bound_seconds']))
    m, s = report['crawlers']['mrcrawl'], report['crawlers']['scrapy']
    report['wall_ratio_mrcrawl_to_scrapy'] = round(m['wall_seconds'] / s['wall_seconds'], 3)
    report['cpu_ratio_mrcrawl_to_scrapy'] = round(m['cpu_seconds'] / s['cpu_seconds'], 3)
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, 'w') as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print('wall mrcrawl/scrapy %.2f, cpu %.2f -> %s' % (
        report['wall_ratio_mrcrawl_to_scrapy'], report['cpu_ratio_mrcrawl_to_scrapy'], a.json))


if __name__ == '__main__':
    os.chdir(ROOT)
    main()
