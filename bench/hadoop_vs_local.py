"""The fixture-site crawl (depth 2) on the local runner and on the single-node Hadoop.

    make hadoop-up && . hadoop/env.sh && .venv/bin/python bench/hadoop_vs_local.py

Prints and saves (bench/results/hadoop_vs_local.json) the wall time of each crawl and
the seconds of every step (from OUT/steps/*.json), so the cost of one job on YARN can
be read off. Not part of CI (tests/test_hadoop.py checks correctness).
"""
import json
import os
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from drivers.crawl import Crawl  # noqa: E402
from drivers.fixtures.site import FixtureSite  # noqa: E402
from jobs.lib import config  # noqa: E402

SETTINGS = ['security.allow_private_networks=true', 'politeness.delay=0.2']


def crawl(site, out, runner):
    fd, seeds = tempfile.mkstemp(suffix='.txt')
    with os.fdopen(fd, 'w') as f:
        f.write(site.url('/') + '\n')
    c = Crawl(out, config.load(overrides=SETTINGS), runner=runner, depth=2,
              progress=lambda m: None)
    t0 = time.monotonic()
    c.run(seeds)
    wall = time.monotonic() - t0
    os.remove(seeds)
    steps = {}
    for name in c.fs.listdir(c.path('steps')):
        steps[name[:-5]] = json.loads(c.fs.read_text(c.path('steps', name)))['seconds']
    return {'runner': runner, 'wall_seconds': round(wall, 1), 'jobs': len(steps) - 1,
            'step_seconds': steps}


def main():
    results = {'load_average_before': os.getloadavg()}
    with FixtureSite() as site:
        results['local'] = crawl(site, tempfile.mkdtemp(prefix='mrcrawl-local-'), 'local')
        results['hadoop'] = crawl(site, 'hdfs:///mrcrawl-bench/%s' % uuid.uuid4().hex[:8],
                                  'hadoop')
    jobs = [v for k, v in results['hadoop']['step_seconds'].items() if k != 'inject']
    results['hadoop']['seconds_per_job_median'] = sorted(jobs)[len(jobs) // 2]
    print(json.dumps(results, indent=1))
    os.makedirs(os.path.join(ROOT, 'bench', 'results'), exist_ok=True)
    with open(os.path.join(ROOT, 'bench', 'results', 'hadoop_vs_local.json'), 'w') as f:
        json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
