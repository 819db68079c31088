"""Profile one step of a finished crawl again, under py-spy, driver and tasks together.

    .venv/bin/python bench/profile_step.py --crawl bench/work/out-cpu1x-mrcrawl \
        --job optimize --layer 3 crawldb/002 out/003 [--src DIR] [--runner local]

Re-runs the job the way the driver does (same resolved conf.json, ``--layer``, inputs
relative to the crawl folder) into a temporary folder, with ``py-spy record
--subprocesses`` sampling the driver and every task process at 100 Hz. Prints the wall
time, the samples per process role (driver, mapper, combiner, reducer; GNU sort is not
Python and shows only as the driver waiting) and the functions with the most samples
(leaf frames, and the project's and mrjob's own frames by inclusive samples).
Needs py-spy (bench/.venv-scrapy/bin/py-spy, installed by ``make bench-deps``).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
PYSPY = os.path.join(BENCH, '.venv-scrapy', 'bin', 'py-spy')
CLASSES = {'fetch': 'MRFetch', 'parse': 'MRParse', 'optimize': 'MROptimize',
           'generate': 'MRGenerate', 'merge': 'MRMerge', 'xml': 'MRHtmlToXml',
           'plan': 'MRPlanFetch', 'mergejoin': 'MRMergeJoin',
           'current': 'MRCurrent', 'anchors': 'MRAnchors', 'indexrows': 'MRIndexRows'}
MODULES = {'xml': 'html_to_xml', 'plan': 'plan_fetch', 'mergejoin': 'merge_join',
           'indexrows': 'index_rows'}


def role(proc_frame):
    for r in ('--mapper', '--combiner', '--reducer'):
        if r in proc_frame:
            return r[2:]
    return 'driver'


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--crawl', required=True)
    p.add_argument('--job', required=True, choices=sorted(CLASSES))
    p.add_argument('--layer', type=int, default=0)
    p.add_argument('--max-depth', type=int, default=None)
    p.add_argument('--runner', default='local')
    p.add_argument('--src', default=None)
    p.add_argument('--rate', type=int, default=100)
    p.add_argument('--top', type=int, default=20)
    p.add_argument('--json', default=None)
    p.add_argument('--job-arg', action='append', default=[],
                   help='an argument passed to the job as is (repeat: --job-arg=--since '
                   '--job-arg=5)')
    p.add_argument('inputs', nargs='+')
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix='mrcrawl-prof-')
    out = os.path.join(tmp, 'out')
    job_args = ['-r', args.runner, '--crawl-conf', os.path.join(args.crawl, 'conf.json'),
                '--output-dir', out, '--layer', str(args.layer)]
    if args.runner == 'local':     # as the driver runs it (drivers/crawl.py)
        sys.path.insert(0, args.src or os.path.dirname(BENCH))
        from drivers.crawl import local_runner_args
        job_args += local_runner_args()
    if args.max_depth is not None:
        job_args += ['--max-depth', str(args.max_depth)]
    job_args += args.job_arg + [os.path.join(args.crawl, i) for i in args.inputs]
    code = ('import logging, sys; logging.basicConfig(level=logging.ERROR); '
            'from jobs.%s import %s as J; j = J(args=%r)\n'
            'try: from drivers.runtime.launch import make_runner\n'
            'except ImportError: make_runner = type(j).make_runner\n'
            'r = make_runner(j); r.__enter__(); r.run(); r.__exit__(None, None, None)'
            % (MODULES.get(args.job, args.job), CLASSES[args.job], job_args))
    env = dict(os.environ)
    if args.src:
        env['PYTHONPATH'] = args.src
    raw = os.path.join(tmp, 'profile.txt')
    t = time.monotonic()
    subprocess.run([PYSPY, 'record', '--subprocesses', '--nonblocking', '--format', 'raw',
                    '--rate', str(args.rate), '-o', raw, '--', sys.executable, '-c', code],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=args.src or os.getcwd())
    wall = time.monotonic() - t
    by_role = collections.Counter()
    by_activity = collections.Counter()
    leaf = collections.Counter()
    inclusive = collections.Counter()
    with open(raw) as f:
        for line in f:
            stack, _, n = line.rstrip('\n').rpartition(' ')
            n = int(n)
            frames = stack.split(';')
            procs = [fr for fr in frames if fr.startswith('process ')]
            code = [fr for fr in frames if not fr.startswith('process ')]
            who = role(procs[-1]) if procs else 'driver'
            by_role[who] += n
            if any('importlib._bootstrap' in fr for fr in code):
                activity = 'importing modules'
            elif any(fr.startswith(('Popen.wait', 'Popen._wait', 'ApplyResult.get',
                                    'Pool.join', 'ApplyResult.wait'))
                     for fr in code):
                activity = 'waiting for a child process'
            else:
                activity = 'running'
            by_activity['%s: %s' % (who, activity)] += n
            if code:
                leaf['%s: %s' % (who, code[-1])] += n
            seen = set()
            for fr in code:
                loc = fr.rsplit(' (', 1)[-1]
                name = fr.split(' (', 1)[0]
                if re.match(r'^[a-z_0-9]+\.py:', loc) or '/jobs/' in loc or '/mrjob/' in loc:
                    key = '%s (%s)' % (name, loc.split('/site-packages/')[-1].rsplit(':', 1)[0])
                    if key not in seen:
                        seen.add(key)
                        inclusive[key] += n
    if os.environ.get('KEEP_PROFILE'):
        shutil.copy(raw, os.environ['KEEP_PROFILE'])
    shutil.rmtree(tmp, ignore_errors=True)
    hz = float(args.rate)
    result = {
        'job': args.job, 'inputs': args.inputs, 'runner': args.runner,
        'wall_seconds_under_pyspy': round(wall, 2),
        'sampled_seconds_by_role': {k: round(v / hz, 2) for k, v in by_role.most_common()},
        'sampled_seconds_by_activity': {k: round(v / hz, 2)
                                        for k, v in by_activity.most_common()},
        'top_leaf_functions_seconds': [(k, round(v / hz, 2)) for k, v in leaf.most_common(args.top)],
        'top_project_and_mrjob_frames_inclusive_seconds': [
            (k, round(v / hz, 2)) for k, v in inclusive.most_common(args.top)],
        'load_avg': os.getloadavg(),
    }
    text = json.dumps(result, indent=1)
    text = re.sub(r'\[\n\s+("[^"\n]*"),\n\s+([0-9.]+)\n\s+\]', r'[\1, \2]', text)
    if args.json:
        with open(args.json, 'w') as f:
            f.write(text)
    print(text)


if __name__ == '__main__':
    main()
