"""The peer crawler: Scrapy, configured like mrcrawl. Runs in bench/.venv-scrapy.

    bench/.venv-scrapy/bin/python bench/scrapy_spider.py --seeds S --depth 3 --delay 0.5 --out F

Equivalent settings: robots.txt obeyed, one request at a time per host
(CONCURRENT_REQUESTS_PER_DOMAIN=1, hosts are IP literals so each is its own slot), a
fixed delay (DOWNLOAD_DELAY, not randomised), DEPTH_LIMIT = mrcrawl's --depth (seeds are
depth 0), 64 hosts at once (mrcrawl: fetch.threads=32 in each of its 2 fetch reducers),
no retries (``--retries N``: RETRY_TIMES), no AutoThrottle, no HTTP cache, cookies off. Crawl order: Scrapy's default
(depth-first, LIFO queues) unless ``--bfs`` (DEPTH_PRIORITY=1 with FIFO queues).

Per page it does the work mrcrawl's parse job does: extract links from <a>/<area>
href (and frames), the title and the visible text, and writes one JSON line per page
(url, status, depth, title, text, links) to ``--out``.
"""
import argparse

import scrapy
from scrapy.crawler import CrawlerProcess


class BenchSpider(scrapy.Spider):
    name = 'bench'

    def __init__(self, seeds_file=None, **kw):
        super().__init__(**kw)
        with open(seeds_file) as f:
            self.start_urls = [line.strip() for line in f if line.strip()]

    def parse(self, response):
        if not isinstance(response, scrapy.http.TextResponse):
            return
        hrefs = response.xpath('//a/@href | //area/@href | //frame/@src | //iframe/@src').getall()
        links = []
        for href in hrefs:
            links.append(response.urljoin(href))
            yield response.follow(href, callback=self.parse)
        yield {
            'url': response.url,
            'status': response.status,
            'depth': response.meta.get('depth', 0),
            'title': response.xpath('normalize-space(//title)').get(),
            'text': ' '.join(t.strip() for t in response.xpath(
                '//body//text()[not(ancestor::script) and not(ancestor::style)]').getall()
                if t.strip()),
            'links': links,
        }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--seeds', required=True)
    p.add_argument('--depth', type=int, required=True)
    p.add_argument('--delay', type=float, required=True)
    p.add_argument('--out', required=True)
    p.add_argument('--concurrency', type=int, default=64)
    p.add_argument('--bfs', action='store_true')
    p.add_argument('--download-timeout', type=float, default=180.0,
                   help='DOWNLOAD_TIMEOUT (Scrapy default 180; mrcrawl read_timeout 15)')
    p.add_argument('--retries', type=int, default=0,
                   help='RETRY_TIMES; 0 (default) turns retries off')
    args = p.parse_args(argv)
    settings = {
        'BOT_NAME': 'scrapybench',
        'USER_AGENT': 'scrapybench/1.0',
        'ROBOTSTXT_OBEY': True,
        'CONCURRENT_REQUESTS': args.concurrency,
        'CONCURRENT_REQUESTS_PER_DOMAIN': 1,
        'DOWNLOAD_DELAY': args.delay,
        'RANDOMIZE_DOWNLOAD_DELAY': False,
        'DEPTH_LIMIT': args.depth,
        'RETRY_ENABLED': args.retries > 0,
        'RETRY_TIMES': args.retries,
        'DOWNLOAD_TIMEOUT': args.download_timeout,
        'AUTOTHROTTLE_ENABLED': False,
        'HTTPCACHE_ENABLED': False,
        'COOKIES_ENABLED': False,
        'TELNETCONSOLE_ENABLED': False,
        'LOG_LEVEL': 'WARNING',
        'FEEDS': {args.out: {'format': 'jsonlines', 'overwrite': True}},
    }
    if args.bfs:
        settings.update({
            'DEPTH_PRIORITY': 1,
            'SCHEDULER_DISK_QUEUE': 'scrapy.squeues.PickleFifoDiskQueue',
            'SCHEDULER_MEMORY_QUEUE': 'scrapy.squeues.FifoMemoryQueue',
        })
    process = CrawlerProcess(settings)
    process.crawl(BenchSpider, seeds_file=args.seeds)
    process.start()


if __name__ == '__main__':
    main()
