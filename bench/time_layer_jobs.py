"""Wall time of one layer's jobs for two versions of mrcrawl, back to back on the same
machine (no profiler; local runner with the crawl's own options), so that a change is
compared under the same load.

    python3 bench/time_layer_jobs.py --layer 3 \
        --before CRAWL_DIR SRC_DIR --after CRAWL_DIR SRC_DIR [--json OUT]

Each side is a finished crawl of the polite web (its conf.json, in/, doc/, crawldb/) and
the source tree that made it (e.g. bench/work/src-<commit>, or a `git archive` export).
Jobs re-run: plan (if the crawl has plan/), fetch, parse (if the crawl has doc/),
optimize, generate (of the layer, from crawldb/L-1); nginx serves the polite web for the
fetch steps (bench/work/web-polite, port 18631).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from server import Nginx  # noqa: E402

PY = os.path.join(os.path.dirname(BENCH), '.venv', 'bin', 'python')
CLS = {'plan': ('plan_fetch', 'MRPlanFetch'), 'fetch': ('fetch', 'MRFetch'),
       'parse': ('parse', 'MRParse'), 'optimize': ('optimize', 'MROptimize'),
       'generate': ('generate', 'MRGenerate')}
LOCAL = ['-r', 'local', '--no-bootstrap-mrjob', '--sort-bin', "sort -t '\t' -k 1,1 -s -S 64M",
         '--cmdenv', 'SETUPTOOLS_USE_DISTUTILS=stdlib']


def jobs_of(crawl, layer, depth):
    L, P = '%03d' % layer, '%03d' % (layer - 1)
    out = []
    if os.path.isdir(os.path.join(crawl, 'plan')):
        out.append(('plan', ['in/' + L], []))
    out.append(('fetch', ['in/' + L], []))
    if os.path.isdir(os.path.join(crawl, 'doc')):
        out.append(('parse', ['doc/' + L], []))
    out.append(('optimize', ['crawldb/' + P, 'out/' + L], []))
    out.append(('generate', ['crawldb/' + P], ['--max-depth', str(depth)]))
    return out


def run_job(job, crawl, src, inputs, extra, layer):
    tmp = tempfile.mkdtemp(prefix='mrcrawl-time-')
    mod, cls = CLS[job]
    args = LOCAL + ['--crawl-conf', os.path.join(crawl, 'conf.json'), '--output-dir',
                    os.path.join(tmp, 'out'), '--layer', str(layer)] + extra + [
                        os.path.join(crawl, i) for i in inputs]
    code = ('import logging; logging.basicConfig(level=logging.ERROR); '
            'from jobs.%s import %s as J; j = J(args=%r)\n'
            'try: from drivers.runtime.launch import make_runner\n'
            'except ImportError: make_runner = type(j).make_runner\n'
            'r = make_runner(j); r.__enter__(); r.run(); r.__exit__(None, None, None)'
            % (mod, cls, args))
    t = time.monotonic()
    res = subprocess.run([PY, '-c', code], cwd=src, env=dict(os.environ, PYTHONPATH=src),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t
    shutil.rmtree(tmp, ignore_errors=True)
    if res.returncode:
        raise SystemExit('%s failed:\n%s' % (job, res.stderr[-2000:]))
    return round(wall, 2)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--layer', type=int, default=3)
    p.add_argument('--depth', type=int, default=3)
    p.add_argument('--before', nargs=2, metavar=('CRAWL', 'SRC'), required=True)
    p.add_argument('--after', nargs=2, metavar=('CRAWL', 'SRC'), required=True)
    p.add_argument('--json', default=None)
    args = p.parse_args(argv)
    sides = {'before': args.before, 'after': args.after}
    plan = {side: jobs_of(crawl, args.layer, args.depth) for side, (crawl, _) in sides.items()}
    kinds = [k for k in CLS if any(j[0] == k for s in plan.values() for j in s)]
    rows = []
    web = os.path.join(BENCH, 'work', 'web-polite')
    with Nginx(web, os.path.join(BENCH, 'work', 'nginx'), 18631,
               os.path.join(BENCH, 'work', 'logs', 'time-layer-jobs.access.log')):
        for kind in kinds:        # before and after of one kind back to back
            for side in ('before', 'after'):
                for job, inputs, extra in plan[side]:
                    if job == kind:
                        crawl, src = sides[side]
                        wall = run_job(job, crawl, src, inputs, extra, args.layer)
                        rows.append({'side': side, 'job': job, 'seconds': wall,
                                     'load_avg_1min': round(os.getloadavg()[0], 2)})
                        print('%-7s %-9s %6.2f s' % (side, job, wall), flush=True)
    total = {s: round(sum(r['seconds'] for r in rows if r['side'] == s), 2) for s in sides}
    print('total: before %.2f s, after %.2f s' % (total['before'], total['after']))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'layer': args.layer, 'before': args.before, 'after': args.after,
                       'rows': rows, 'total_seconds': total}, f, indent=1)


if __name__ == '__main__':
    main()
