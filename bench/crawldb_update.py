"""Cost of one crawl database update (MROptimize) as the crawl grows: time and memory.

    .venv/bin/python bench/crawldb_update.py [--scales 1,10,100] [--runner local]

Scale 1 is a crawl database of 20,000 URLs joined with one layer of 2,000 parsed pages
of 20 links each (half to known URLs, half new). Scale k multiplies both. For each
scale it reports the wall time of MROptimize, the time per input record, the peak RSS
of the largest task process (getrusage of the children) and of the driver process.
Results go to bench/results/crawldb_update.json. Nothing here is timed in CI.
"""
import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from jobs.lib import config  # noqa: E402
from drivers.crawl import local_runner_args  # noqa: E402
from jobs.optimize import MROptimize  # noqa: E402
from drivers.runtime.launch import make_runner  # noqa: E402

BASE_URLS, BASE_PAGES, LINKS = 20000, 2000, 20


def write_inputs(where, scale, rng):
    n_urls, n_pages = BASE_URLS * scale, BASE_PAGES * scale
    hosts = 100 * scale
    db_dir, out_dir = os.path.join(where, 'crawldb'), os.path.join(where, 'out')
    os.makedirs(db_dir)
    os.makedirs(out_dir)
    url = lambda i: 'http://h%d.example/p%d' % (i % hosts, i)   # noqa: E731
    with open(os.path.join(db_dir, 'part-00000'), 'w') as f:
        for i in range(n_urls):
            f.write(json.dumps({'kind': 'db', 'url': url(i), 'status': 'unfetched',
                                'depth': 1, 'inlinks': 1, 'first_seen': '2026-11-30T00:00:00Z',
                                'score': 0.0}) + '\n')
    with open(os.path.join(out_dir, 'part-00000'), 'w') as f:
        for i in range(n_pages):
            links = [{'url': url(rng.randrange(n_urls)) if k % 2 else
                      url(n_urls + rng.randrange(n_urls)), 'text': 'anchor', 'rel': ''}
                     for k in range(LINKS)]
            f.write(json.dumps({'kind': 'page', 'url': url(i), 'depth': 1, 'layer': 1,
                                'status': 'fetched', 'http_status': 200,
                                'final_url': url(i), 'digest': 'sha1:X%d' % i,
                                'fetch_time': '2026-11-30T01:00:00Z', 'links': links,
                                'headers': {}, 'score': 0.001}) + '\n')
    return db_dir, out_dir, n_urls + n_pages


def run(scale, runner, conf_path):
    where = tempfile.mkdtemp(prefix='mrcrawl-bench-db-')
    try:
        db_dir, out_dir, n_in = write_inputs(where, scale, random.Random(scale))
        extra = local_runner_args() if runner == 'local' else []
        job = MROptimize(['-r', runner, '--crawl-conf', conf_path, '--output-dir',
                          os.path.join(where, 'new')] + extra + [db_dir, out_dir])
        t0 = time.monotonic()
        with make_runner(job) as r:
            r.run()
            counters = r.counters()
        seconds = time.monotonic() - t0
        n_out = sum(1 for name in os.listdir(os.path.join(where, 'new'))
                    for _ in open(os.path.join(where, 'new', name)))
        return {'scale': scale, 'input_records': n_in, 'db_records_out': n_out,
                'seconds': round(seconds, 2),
                'us_per_input_record': round(seconds / n_in * 1e6, 1),
                'new_urls': counters[0]['optimize']['new_urls_total'],
                'peak_task_rss_mb': round(
                    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
                'driver_rss_mb': round(
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    finally:
        shutil.rmtree(where, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scales', default='1,10,100')
    ap.add_argument('--runner', default='local')
    args = ap.parse_args()
    fd, conf_path = tempfile.mkstemp(suffix='.json')
    with os.fdopen(fd, 'w') as f:
        json.dump(config.load(), f)
    results = {'load_average': os.getloadavg(), 'runner': args.runner, 'points': []}
    for scale in [int(s) for s in args.scales.split(',')]:
        point = run(scale, args.runner, conf_path)
        print(json.dumps(point), flush=True)
        results['points'].append(point)
    os.makedirs(os.path.join(ROOT, 'bench', 'results'), exist_ok=True)
    with open(os.path.join(ROOT, 'bench', 'results', 'crawldb_update.json'), 'w') as f:
        json.dump(results, f, indent=1)
    os.remove(conf_path)


if __name__ == '__main__':
    main()
