"""Where the local runner's tasks overtake the inline runner, by input size and steps.

    .venv/bin/python bench/inline_vs_local.py [OUT] [--sizes 2,5,11,22] [--runs 2]

OUT is a finished crawl of a later cycle (default: the cpu4x refresh bench's,
bench/work/out-refresh-cpu4x: `make bench-refresh POINT=cpu4x` makes it). Each job runs
on the first MB of its input file (whole lines), on both runners with the crawl's own
runner arguments (forked tasks, byte-range splits: drivers/runtime/runners.py), *runs* times;
the medians go to bench/results/inline_vs_local.json. runner.uber_max_bytes (per step
of a job, drivers/crawl.py runner_for) is set where the two meet. Nothing here is timed
in tests.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))

from drivers.crawl import Crawl, local_runner_args  # noqa: E402
from jobs.anchors import MRAnchors  # noqa: E402
from jobs.current import MRCurrent  # noqa: E402
from jobs.generate import MRGenerate  # noqa: E402
from jobs.merge import MRMerge  # noqa: E402
from jobs.optimize import MROptimize  # noqa: E402


def first_part(folder):
    return os.path.join(folder, sorted(n for n in os.listdir(folder)
                                       if n.startswith('part-'))[0])


def head(path, mb, into):
    """The whole lines of the first *mb* MB of *path*, as a one-file folder."""
    folder = os.path.join(into, '%s-%d' % (os.path.basename(os.path.dirname(path)), mb))
    os.makedirs(folder, exist_ok=True)
    with open(path, 'rb') as f:
        data = f.read(mb * 1000 * 1000)
    with open(os.path.join(folder, 'part-00000'), 'wb') as f:
        f.write(data[:data.rfind(b'\n') + 1])
    return folder


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('out', nargs='?', default=os.path.join(BENCH, 'work', 'out-refresh-cpu4x'))
    p.add_argument('--sizes', default='2,5,11,22')
    p.add_argument('--runs', type=int, default=2)
    args = p.parse_args(argv)
    db = os.path.join(args.out, 'crawldb', sorted(os.listdir(os.path.join(args.out,
                                                                          'crawldb')))[-1])
    current = os.path.join(args.out, 'current')
    jobs = [('generate', MRGenerate, ['--recrawl-at', '2100-01-01T00:00:00Z',
                                      '--max-depth', '9', '--layer', '99'], first_part(db)),
            ('optimize', MROptimize, ['--layer', '99'], first_part(db)),
            ('current', MRCurrent, [], first_part(current)),
            ('anchors', MRAnchors, [], first_part(current)),
            ('merge', MRMerge, [], first_part(current))]
    results, load = [], os.getloadavg()
    with tempfile.TemporaryDirectory(prefix='mrcrawl-ivl-') as tmp:
        for mb in [int(s) for s in args.sizes.split(',')]:
            for name, cls, extra, source in jobs:
                folder = head(source, mb, tmp)
                row = {'job': name, 'mb': mb, 'steps': len(cls(args=extra).steps())}
                for runner in ('inline', 'local'):
                    runner_args = local_runner_args() if runner == 'local' else [
                        '--num-cores', '1']
                    seconds = []
                    for _ in range(args.runs):
                        job_args = ['-r', runner, '--crawl-conf',
                                    os.path.join(args.out, 'conf.json'), '--output-dir',
                                    os.path.join(tmp, 'o%d' % time.monotonic_ns()),
                                    '--cleanup-on-failure', 'ALL', '--quiet'] + \
                            runner_args + extra + [folder]
                        start = time.monotonic()
                        Crawl.run_job(cls, job_args)
                        seconds.append(round(time.monotonic() - start, 3))
                    row[runner] = statistics.median(seconds)
                print(json.dumps(row), flush=True)
                results.append(row)
    with open(os.path.join(BENCH, 'results', 'inline_vs_local.json'), 'w') as f:
        json.dump({'out': args.out, 'load_avg_before': load, 'rows': results},
                  f, indent=1)


if __name__ == '__main__':
    main()
