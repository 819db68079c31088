"""A crawl cycle's refresh cost: crawl a web, change 1 % of it, run the next cycle.

    bench/.venv-scrapy/bin/python bench/refresh.py cpu1x [--change 0.01] [--repeat 3]
        [--reuse]

1. generates the point's web afresh (bench/work/web-POINT-refresh: it gets changed);
2. crawls it with mrcrawl (the point's depth, no delay), keeping the first cycle's step
   times (OUT/steps/*.json; the second cycle overwrites those of the final outputs);
3. changes it (bench/gen_web.py --change: edits, deletions, additions);
4. runs the next cycle with recrawl.interval = 0 (every known page due: conditional
   requests, which nginx answers 304 for unchanged files);
5. writes bench/results/refresh-POINT.json: per cycle, the fetch seconds (fetch steps)
   and the rest (every other step: crawl database update, generate, merge, index,
   XML, current, delta), the 304s and 200s from nginx's log, and the delta's counts.

``--repeat N`` runs step 4 N times, each from the same first crawl: the changed web
and a snapshot of the crawl after cycle 1 (OUT-cycle1, hard links), so that the
machine's swings show as a spread; the ratio is the median refresh's (with an even N,
the lower middle one's), and every run is kept. ``--reuse`` skips steps 1-3 and
refreshes the snapshot a former run left, to measure a change of the code in minutes
(its first crawl was made by the code of then).

The issue's target: the refresh cycle's non-fetch steps take at most 15 % of their time
in the first crawl. This measures where they stand; nothing here is timed in tests.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import run  # noqa: E402
from server import Nginx  # noqa: E402

#: Its own port and nginx folder: it may run beside bench/run.py.
PORT = run.PORT + 1


def split(kinds):
    fetch = sum(v for k, v in kinds.items() if k in ('fetch', 'plan'))
    return round(fetch, 3), round(sum(kinds.values()) - fetch, 3)


def statuses(log):
    """HTTP status counts of an nginx access log."""
    counts = collections.Counter()
    with open(log, 'rb') as f:
        for line in f:
            parts = line.split(b'"')
            if len(parts) > 2:
                fields = parts[2].split()
                if fields:
                    counts[fields[0].decode()] += 1
    return dict(counts)


#: Files at least this big are hard-linked into and out of the first cycle's snapshot
#: (OUT-cycle1); smaller ones (state, reports, step files, which the driver rewrites in
#: place) are copied.
LINK_MIN_BYTES = 1 << 20


def clone(src, dst):
    """*dst* as a copy of the crawl folder *src*: big files hard-linked (the crawl
    writes new files, it does not rewrite its part files), the rest copied."""
    shutil.rmtree(dst, ignore_errors=True)
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in files:
            a, b = os.path.join(root, name), os.path.join(dst, rel, name)
            if os.stat(a).st_size >= LINK_MIN_BYTES:
                os.link(a, b)
            else:
                shutil.copy2(a, b)


def big_files(folder):
    """{path: (size, mtime)} of the files under *folder* that clone() hard-links."""
    stats = {}
    for root, _, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(root, name))
            if st.st_size >= LINK_MIN_BYTES:
                stats[os.path.join(root, name)] = (st.st_size, st.st_mtime_ns)
    return stats


def cycle_figures(out, n, wall, log, before):
    """One cycle's figures from OUT/steps and the nginx *log* (*before*: the step files
    of the cycle before it, for n = 2)."""
    steps_dir = os.path.join(out, 'steps')
    mine = None
    if n == 2:
        # This cycle's steps: its layers' and every final step it rewrote.
        with open(os.path.join(out, 'cycles', '002.json')) as f:
            first = json.load(f)['first_layer']
        mine = {fn for fn in os.listdir(steps_dir) if fn not in before or any(
            fn.endswith('-%03d.json' % layer) for layer in range(first, first + 99))
            or not fn[:-5].split('-')[-1].isdigit()}
        mine.discard('inject.json')
    kinds = run.mrcrawl_steps(out, mine)['seconds_by_kind']
    fetch, rest = split(kinds)
    return {'cycle': n, 'wall_seconds': wall, 'fetch_seconds': fetch,
            'non_fetch_seconds': rest, 'seconds_by_kind': kinds,
            'http_statuses': statuses(log)}


def run_cycle(args, web, out, n, settings):
    """Run cycle *n* of mrcrawl on *out*; (wall seconds, the nginx log)."""
    point = run.POINTS[args.point]
    log = os.path.join(run.WORK, 'logs', 'refresh-%s-%d.access.log' % (args.point, n))
    # A fresh nginx per cycle: its open_file_cache would serve the changed files'
    # old metadata for up to a minute.
    with Nginx(web, os.path.join(run.WORK, 'nginx-refresh'), PORT, log):
        t = time.monotonic()
        res = subprocess.run(run.crawl_cmd('mrcrawl', web, point, out, settings),
                             cwd=run.ROOT, capture_output=True, text=True)
        wall = time.monotonic() - t
    if res.returncode:
        sys.exit('cycle %d failed:\n%s' % (n, res.stderr[-3000:]))
    return round(wall, 3), log


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('point', choices=sorted(run.POINTS))
    p.add_argument('--change', type=float, default=0.01)
    p.add_argument('--repeat', type=int, default=1,
                   help='run the refresh cycle this many times, each from the same '
                   'first crawl (a snapshot of it); the ratio is the median\'s')
    p.add_argument('--reuse', action='store_true',
                   help='skip the web and the first crawl: refresh the snapshot a '
                   'former run left (OUT-cycle1, its changed web); the first cycle\'s '
                   'figures are that run\'s')
    args = p.parse_args(argv)
    point = run.POINTS[args.point]
    web = os.path.join(run.WORK, 'web-%s-refresh' % args.point)
    out = os.path.join(run.WORK, 'out-refresh-%s' % args.point)
    snap = out + '-cycle1'
    result = {'point': args.point, 'params': point, 'change': args.change,
              'started': time.strftime('%Y-%m-%dT%H:%M:%S'),
              'load_avg_before': [round(x, 2) for x in os.getloadavg()]}
    os.makedirs(os.path.join(run.WORK, 'logs'), exist_ok=True)
    if args.reuse:
        with open(snap + '.json') as f:
            saved = json.load(f)
        first, result['changes'] = saved['cycle'], saved['changes']
        result['reused_first_cycle_of'] = saved['started']
    else:
        shutil.rmtree(web, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sys.executable, os.path.join(BENCH, 'gen_web.py'), '--out', web,
                        '--hosts', str(point['hosts']), '--pages', str(point['pages']),
                        '--depth', str(point['depth']), '--port', str(PORT)],
                       check=True, stdout=subprocess.DEVNULL)
        wall, log = run_cycle(args, web, out, 1, [])
        first = cycle_figures(out, 1, wall, log, None)
        print(json.dumps(first), flush=True)
        changed = subprocess.run(
            [sys.executable, os.path.join(BENCH, 'gen_web.py'), '--out', web,
             '--change', str(args.change)], check=True, capture_output=True, text=True)
        result['changes'] = json.loads(changed.stdout)
        clone(out, snap)
        with open(snap + '.json', 'w') as f:
            json.dump({'cycle': first, 'changes': result['changes'],
                       'started': result['started']}, f)
    before = set(os.listdir(os.path.join(snap, 'steps')))
    snapped = big_files(snap)
    refreshes = []
    for i in range(args.repeat):
        if args.reuse or i:
            clone(snap, out)
        # The last run's files deleted and written, on disk before this run starts.
        os.sync()
        wall, log = run_cycle(args, web, out, 2, ['recrawl.interval=0'])
        if big_files(snap) != snapped:
            sys.exit('a refresh wrote into a file it shares with the snapshot %s' % snap)
        refreshes.append(cycle_figures(out, 2, wall, log, before))
        print(json.dumps(refreshes[-1]), flush=True)
    # The median refresh stands for the cycle; every run is kept.
    ranked = sorted(refreshes, key=lambda c: c['non_fetch_seconds'])
    cycles = [first, ranked[(len(ranked) - 1) // 2]]
    if args.repeat > 1:
        result['refreshes'] = refreshes
    delta = os.path.join(out, 'steps', 'delta-002.json')
    if os.path.exists(delta):
        with open(delta) as f:
            result['delta'] = json.load(f)['counters'].get('delta', {})
    result['cycles'] = cycles
    result['non_fetch_ratio'] = round(cycles[1]['non_fetch_seconds'] /
                                      cycles[0]['non_fetch_seconds'], 3)
    os.makedirs(run.RESULTS, exist_ok=True)
    with open(os.path.join(run.RESULTS, 'refresh-%s.json' % args.point), 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(json.dumps({k: result[k] for k in ('non_fetch_ratio', 'delta', 'changes')
                      if k in result}))


if __name__ == '__main__':
    main()
