"""What one mrcrawl job costs before it does any work, on the local and inline runners.

    .venv/bin/python bench/job_overhead.py [--src DIR] [--repeat 3] [--json OUT]

Runs two jobs of the crawl on a one-record input (so all their time is fixed overhead):
MRGenerate (map-only, as generate and parse) and MROptimize (mapper, combiner, sort,
reducer, as optimize, fetch and merge), each ``--repeat`` times on ``-r inline`` and
``-r local``, and reports the median seconds. Then, for one local run of each:

- cProfile of the driver process (where the driver's own time goes, top functions by
  cumulative time);
- strace -f of the whole job: programs executed (python tasks, sort) and processes and
  threads created;
- the start-up cost of one task process: ``python -c pass`` against importing each job
  module (what every mapper/reducer/combiner process pays before its first record).

``--src`` puts another copy of the code first on PYTHONPATH (bench/run.py exports
commits there); default: the installed work tree.
"""
import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def setup(tmp):
    from jobs.lib import config
    conf = config.load(None, ['security.allow_private_networks=true'])
    conf_path = os.path.join(tmp, 'conf.json')
    with open(conf_path, 'w') as f:
        json.dump(conf, f)
    db = os.path.join(tmp, 'crawldb')
    os.makedirs(db)
    with open(os.path.join(db, 'part-00000'), 'w') as f:
        f.write(json.dumps({'kind': 'db', 'url': 'http://127.0.0.1/', 'status': 'unfetched',
                            'depth': 1, 'first_seen': None, 'last_fetch': None,
                            'http_status': None, 'digest': None, 'reason': None,
                            'inlinks': 0, 'layer': None}) + '\n')
    return conf_path, db


# Runner variants timed besides the defaults: (label, runner, extra mrjob options).
VARIANTS = [('inline', 'inline', []), ('local', 'local', []),
            ('local --no-bootstrap-mrjob', 'local', ['--no-bootstrap-mrjob'])]


def job_args(name, runner, conf_path, db, out, extra=()):
    args = ['-r', runner, '--crawl-conf', conf_path, '--output-dir', out] + list(extra)
    if name == 'generate':
        return args + ['--max-depth', '3', '--layer', '1', db]
    return args + ['--layer', '1', db]


def job_class(name):
    if name == 'generate':
        from jobs.generate import MRGenerate
        return MRGenerate
    from jobs.optimize import MROptimize
    return MROptimize


def run_once(name, runner, conf_path, db, tmp, extra=()):
    out = tempfile.mkdtemp(dir=tmp)
    shutil.rmtree(out)
    from drivers.runtime.launch import make_runner
    job = job_class(name)(args=job_args(name, runner, conf_path, db, out, extra))
    t = time.monotonic()
    with make_runner(job) as r:
        r.run()
    return time.monotonic() - t


def strace_job(name, conf_path, db, tmp, src):
    """Programs executed and processes/threads created by one local-runner job."""
    if not shutil.which('strace'):
        return None
    trace = os.path.join(tmp, 'strace-%s.txt' % name)
    out = os.path.join(tmp, 'strace-out-%s' % name)
    code = ('import sys; sys.argv=["x"]; from bench_job_overhead_entry import one; '
            'one(%r, %r, %r, %r)' % (name, conf_path, db, out))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (os.path.dirname(os.path.abspath(__file__)), src) if p))
    with open(os.path.join(tmp, 'bench_job_overhead_entry.py'), 'w') as f:
        f.write('import sys\nsys.path.insert(0, %r)\nfrom job_overhead import job_class, job_args\n'
                'def one(name, conf, db, out):\n'
                '    job = job_class(name)(args=job_args(name, "local", conf, db, out))\n'
                '    try:\n        from drivers.runtime.launch import make_runner\n'
                '    except ImportError:   # a tree from before the launch module\n'
                '        make_runner = type(job).make_runner\n'
                '    with make_runner(job) as r:\n        r.run()\n'
                % os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = tmp + os.pathsep + env['PYTHONPATH']
    t = time.monotonic()
    subprocess.run(['strace', '-f', '-qq', '-z', '-e', 'trace=execve,clone,clone3,fork,vfork',
                    '-o', trace, sys.executable, '-c', code], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t
    execs, threads, procs = [], 0, 0
    with open(trace) as f:
        for line in f:
            if 'execve(' in line:
                prog = line.split('execve(', 1)[1].split(',', 1)[0].strip('"')
                argv = line.split('[', 1)[1].split(']', 1)[0] if '[' in line else ''
                execs.append((os.path.basename(prog), argv[:200]))
            elif ('clone(' in line or 'clone3(' in line) and 'resumed' not in line:
                if 'CLONE_THREAD' in line:
                    threads += 1
                else:
                    procs += 1
    # strace -f writes "<unfinished ...>"/"resumed" pairs; the flags are on the first half.
    return {'wall_seconds_under_strace': round(wall, 3),
            'programs_executed': len(execs),
            'python_processes': sum(1 for p, _ in execs if p.startswith('python')),
            'sort_processes': sum(1 for p, _ in execs if p == 'sort'),
            'other_programs': sorted({p for p, _ in execs
                                      if not p.startswith('python') and p != 'sort'}),
            'processes_forked': procs, 'threads_created': threads,
            'examples': [a for _, a in execs[:4]]}


def task_startup(src, repeat):
    """Seconds for a fresh python to start, and to import each job module."""
    env = dict(os.environ)
    if src:
        env['PYTHONPATH'] = src
    res = {}
    for label, code in [('python -c pass', 'pass'),
                        ('import mrjob.job', 'import mrjob.job'),
                        ('import jobs.generate', 'import jobs.generate'),
                        ('import jobs.optimize', 'import jobs.optimize'),
                        ('import jobs.parse', 'import jobs.parse'),
                        ('import jobs.fetch', 'import jobs.fetch'),
                        ('import jobs.merge', 'import jobs.merge')]:
        times = []
        for _ in range(repeat):
            t = time.monotonic()
            r = subprocess.run([sys.executable, '-c', code], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.monotonic() - t)
            if r.returncode:
                times = [float('nan')]
                break
        res[label] = round(statistics.median(times), 3)
    imp = subprocess.run([sys.executable, '-X', 'importtime', '-c', 'import jobs.optimize'],
                         env=env, capture_output=True, text=True).stderr
    rows = []
    for line in imp.splitlines():
        if line.startswith('import time:') and '|' in line:
            parts = [p.strip() for p in line[len('import time:'):].split('|')]
            try:
                rows.append((int(parts[1]), parts[2]))
            except ValueError:
                pass
    top = sorted((r for r in rows if not r[1].startswith(' ' * 3)), reverse=True)[:12]
    res['import_jobs_optimize_top_us'] = [
        {'module': m.strip(), 'cumulative_us': us} for us, m in top]
    return res


def profile_local(name, conf_path, db, tmp, top=25):
    prof = cProfile.Profile()
    out = tempfile.mkdtemp(dir=tmp)
    shutil.rmtree(out)
    from drivers.runtime.launch import make_runner
    job = job_class(name)(args=job_args(name, 'local', conf_path, db, out))
    prof.enable()
    with make_runner(job) as r:
        r.run()
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats('cumulative').print_stats(top)
    return s.getvalue()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--src', default=None)
    p.add_argument('--repeat', type=int, default=3)
    p.add_argument('--json', default=None)
    p.add_argument('--profile-out', default=None)
    args = p.parse_args(argv)
    if args.src:
        sys.path.insert(0, args.src)
        os.environ['PYTHONPATH'] = args.src + os.pathsep + os.environ.get('PYTHONPATH', '')
    import logging
    logging.basicConfig(level=logging.ERROR)
    tmp = tempfile.mkdtemp(prefix='mrcrawl-overhead-')
    try:
        conf_path, db = setup(tmp)
        result = {'load_avg_before': os.getloadavg(), 'jobs': {}}
        for name in ('generate', 'optimize'):
            row = {}
            for label, runner, extra in VARIANTS:
                times = [run_once(name, runner, conf_path, db, tmp, extra)
                         for _ in range(args.repeat)]
                row[label] = {'median_seconds': round(statistics.median(times), 3),
                               'all': [round(t, 3) for t in times]}
            row['strace_local'] = strace_job(name, conf_path, db, tmp, args.src)
            result['jobs'][name] = row
            print(json.dumps({name: row}), flush=True)
        result['task_startup'] = task_startup(args.src, args.repeat)
        print(json.dumps({'task_startup': result['task_startup']}), flush=True)
        profiles = {name: profile_local(name, conf_path, db, tmp) for name in ('generate', 'optimize')}
        result['load_avg_after'] = os.getloadavg()
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(result, f, indent=1)
        text = ''.join('== cProfile of the driver, one local %s job ==\n%s\n' % kv
                       for kv in profiles.items())
        if args.profile_out:
            with open(args.profile_out, 'w') as f:
                f.write(text)
        else:
            print(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
