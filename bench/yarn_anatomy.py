"""Where one job's wall time goes on YARN: client, uploads, submission, ApplicationMaster,
localisation, container starts, Python start-up and imports, the task's work, commit.

    . hadoop/env.sh && .venv/bin/python bench/yarn_anatomy.py [--job optimize|generate|trivial]
        [--repeat 3] [--json bench/results/yarn_anatomy.json]

Needs the cluster of ``make hadoop-up`` (or any cluster whose REST APIs answer at
MRCRAWL_RM_URL / MRCRAWL_JHS_URL, default 127.0.0.1:8088 / :19888). Each run is one job
on a one-record input, so all its time is fixed cost. Phases come from four sources:

- the driver: wall time of each of mrjob's runner phases (finding binaries, writing the
  setup wrapper, uploads, ``hadoop jar``, clean-up), and when ``hadoop jar`` printed
  "Submitted application" (the client JVM's start and submission);
- the ResourceManager (``/ws/v1/cluster/apps/ID``): application start and finish;
- the JobHistoryServer (``/ws/v1/history/mapreduce/jobs/ID``, its tasks and attempts):
  when the AM started the job, each attempt's start and finish, and the job's finish
  (output commit is the gap between the last attempt's end and the job's finish);
- the NodeManager log: each container's NEW -> LOCALIZING -> SCHEDULED -> RUNNING ->
  EXITED times (localisation of the job's files and archives, and the container start);
- the tasks' stderr (``PYTHONPROFILEIMPORTTIME=1`` in the task environment): seconds of
  imports before the job's first record.

``--job trivial`` is the cluster's floor: ``hadoop jar streaming -mapper cat -reducer cat``
on the same one-line input, with no Python and nothing shipped.
"""
import argparse
import glob
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from drivers.runtime.launch import make_runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RM = os.environ.get('MRCRAWL_RM_URL', 'http://127.0.0.1:8088')
JHS = os.environ.get('MRCRAWL_JHS_URL', 'http://127.0.0.1:19888')


def rest(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def as_list(x):
    """Hadoop's REST (Jersey) answers a one-element list as the element itself."""
    return x if isinstance(x, list) else [x]


class Clock(logging.Handler):
    """Timestamps of mrjob's log lines (``hadoop jar``'s output comes through them)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append((time.time(), record.getMessage()))

    def first(self, pattern):
        for t, msg in self.lines:
            m = re.search(pattern, msg)
            if m:
                return t, m
        return None, None


def timed_runner(runner):
    """Wrap the runner's phases so each records its wall time in runner.phases."""
    runner.phases = []
    for name in ('_find_binaries_and_jars', '_create_setup_wrapper_scripts',
                 '_add_job_files_for_upload', '_upload_local_files', '_run_job_in_hadoop'):
        fn = getattr(runner, name, None)
        if fn is None:
            continue

        def wrap(fn=fn, name=name):
            def inner(*a, **kw):
                t = time.time()
                try:
                    return fn(*a, **kw)
                finally:
                    runner.phases.append((name.strip('_'), t, time.time()))
            return inner
        setattr(runner, name, wrap())
    return runner


def hdfs_put_input(tmp, base):
    from drivers.runtime.hdfs import WebHDFS
    fs = WebHDFS.from_uri('hdfs:///')
    db = os.path.join(tmp, 'part-00000')
    with open(db, 'w') as f:
        f.write(json.dumps({'kind': 'db', 'url': 'http://127.0.0.1/', 'status': 'unfetched',
                            'depth': 1, 'first_seen': None, 'last_fetch': None,
                            'http_status': None, 'digest': None, 'reason': None,
                            'inlinks': 0, 'layer': None}) + '\n')
    fs.mkdirs(base + '/in')
    fs.client.upload(base + '/in/part-00000', db, overwrite=True)
    return fs


def run_mrcrawl_job(name, conf_path, inp, out):
    """One mrcrawl job on -r hadoop, with the driver's own runner arguments (made before
    the clock starts: a crawl makes them once)."""
    from drivers.runtime import hadoop
    from drivers.crawl import TASK_ENV_ARGS
    from jobs.generate import MRGenerate
    from jobs.optimize import MROptimize
    cls = MRGenerate if name == 'generate' else MROptimize
    with open(conf_path) as f:
        conf = json.load(f)
    args = ['-r', 'hadoop', '--crawl-conf', conf_path, '--output-dir', out] + \
        hadoop.runner_args(conf) + TASK_ENV_ARGS + ['--cmdenv', 'PYTHONPROFILEIMPORTTIME=1',
                                                '--layer', '1']
    if name == 'generate':
        args += ['--max-depth', '3']
    job = cls(args=args + [inp])
    start = time.time()
    with make_runner(job) as runner:
        timed_runner(runner)
        runner.run()
        t_cleanup = time.time()
    end = time.time()
    phases = runner.phases + [('cleanup', t_cleanup, end)]
    return start, end, phases


def run_trivial(inp, out):
    """The cluster's floor: streaming cat/cat, nothing shipped, no Python."""
    jar = os.environ['MRCRAWL_STREAMING_JAR']
    start = time.time()
    proc = subprocess.run([os.environ.get('MRCRAWL_HADOOP_BIN', 'hadoop'), 'jar', jar,
                           '-input', inp, '-output', out, '-mapper', 'cat', '-reducer', 'cat'],
                          capture_output=True, text=True)
    end = time.time()
    if proc.returncode:
        raise SystemExit('trivial job failed:\n' + proc.stderr[-3000:])
    m = re.search(r'Submitted application (application_\d+_\d+)', proc.stderr)
    return start, end, [('hadoop_jar', start, end)], m.group(1) if m else None


CLOCK = Clock()

NM_LINE = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*Container (container_\S+) '
                     r'transitioned from (\w+) to (\w+)')


def nm_transitions(app_id):
    """{container: {state: epoch seconds}} from the NodeManager logs, for *app_id*."""
    key = app_id.replace('application_', '')
    out = {}
    for path in glob.glob(os.path.join(os.environ['HADOOP_LOG_DIR'], 'nodemanager*.log')):
        with open(path, errors='replace') as f:
            for line in f:
                if key not in line or 'transitioned' not in line:
                    continue
                m = NM_LINE.match(line)
                if m:
                    t = time.mktime(time.strptime(m.group(1)[:19], '%Y-%m-%d %H:%M:%S')) + \
                        int(m.group(1)[20:]) / 1000
                    out.setdefault(m.group(2), {}).setdefault(m.group(4), t)
                    out[m.group(2)].setdefault('_' + m.group(3), t)
    return out


def task_imports(app_id):
    """Seconds of top-level imports per task (PYTHONPROFILEIMPORTTIME lines in stderr)."""
    res = []
    for path in glob.glob(os.path.join(os.environ['HADOOP_LOG_DIR'], 'userlogs', app_id,
                                       '*', 'stderr')):
        total = 0
        with open(path, errors='replace') as f:
            for line in f:
                m = re.match(r'import time:\s+\d+ \|\s+(\d+) \| (\s*)\S', line)
                if m and not m.group(2):      # top level: its cumulative counts once
                    total += int(m.group(1))
        if total:
            res.append(total / 1e6)
    return res


def anatomy(start, end, phases, app_id, submitted_at):
    """One job's phases, in seconds, in the order they happen."""
    app = rest('%s/ws/v1/cluster/apps/%s' % (RM, app_id))['app']
    job_id = app_id.replace('application_', 'job_')
    job = tasks = None
    for _ in range(50):     # the JHS picks the job's history up a moment after it ended
        try:
            job = rest('%s/ws/v1/history/mapreduce/jobs/%s' % (JHS, job_id))['job']
            tasks = rest('%s/ws/v1/history/mapreduce/jobs/%s/tasks' % (JHS, job_id))
            break
        except Exception:
            time.sleep(0.2)
    attempts = []
    for t in as_list((tasks or {}).get('tasks', {}).get('task', [])):
        a = rest('%s/ws/v1/history/mapreduce/jobs/%s/tasks/%s/attempts' % (
            JHS, job_id, t['id']))['taskAttempts']['taskAttempt']
        a = as_list(a)
        attempts += [(x['startTime'] / 1000, x['finishTime'] / 1000, t['type']) for x in a]
    cont = nm_transitions(app_id)
    res = {'app_id': app_id, 'wall': end - start, 'uber': job and job.get('uberized')}
    ph = {n: b - a for n, a, b in phases}
    res['client'] = {k: round(v, 3) for k, v in ph.items()}
    hadoop_bin = os.environ.get('MRCRAWL_HADOOP_BIN', 'hadoop')
    res['client_jvms'] = sum(1 for _, msg in CLOCK.lines if msg.startswith('> ' + hadoop_bin)) \
        or 1
    jar_phase = [p for p in phases if p[0] in ('run_job_in_hadoop', 'hadoop_jar')][0]
    if submitted_at:
        res['jar_client_start_to_submitted'] = round(submitted_at - jar_phase[1], 3)
    app_start, app_end = app['startedTime'] / 1000, app['finishedTime'] / 1000
    res['rm_app_seconds'] = round(app_end - app_start, 3)
    am = sorted(cont.items())[0][1] if cont else {}
    if am:
        res['am_localizing'] = round(am.get('SCHEDULED', 0) - am.get('LOCALIZING', 0), 3)
        res['am_container_start'] = round(am.get('RUNNING', 0) - am.get('SCHEDULED', 0), 3)
        res['app_start_to_am_running'] = round(am.get('RUNNING', 0) - app_start, 3)
    if job:
        res['am_running_to_job_start'] = round(job['startTime'] / 1000 - am.get('RUNNING', 0), 3) \
            if am else None
        if attempts:
            first = min(a[0] for a in attempts)
            last = max(a[1] for a in attempts)
            res['job_start_to_first_task'] = round(first - job['startTime'] / 1000, 3)
            res['tasks_span'] = round(last - first, 3)
            res['task_attempts'] = [{'type': k, 'seconds': round(b - a, 3)}
                                    for a, b, k in sorted(attempts)]
            res['last_task_to_job_finish (commit)'] = round(job['finishTime'] / 1000 - last, 3)
        res['job_finish_to_app_finish'] = round(app_end - job['finishTime'] / 1000, 3)
    others = [v for k, v in sorted(cont.items())[1:]]
    if others:
        res['task_containers_localizing'] = [round(c.get('SCHEDULED', 0) - c.get('LOCALIZING', 0), 3)
                                             for c in others]
        res['task_containers_start'] = [round(c.get('RUNNING', 0) - c.get('SCHEDULED', 0), 3)
                                        for c in others]
    res['task_python_imports'] = [round(x, 3) for x in task_imports(app_id)]
    res['client_after_app_finish'] = round(end - app_end, 3)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--job', choices=('optimize', 'generate', 'trivial'), default='optimize')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--json', help='append the runs to this JSON file')
    args = ap.parse_args()
    clock = CLOCK
    logging.getLogger('mrjob').addHandler(clock)
    logging.getLogger('mrjob').setLevel(logging.DEBUG)
    from jobs.lib import config
    tmp = tempfile.mkdtemp(prefix='yarn-anatomy-')
    conf_path = os.path.join(tmp, 'conf.json')
    with open(conf_path, 'w') as f:
        json.dump(config.load(None, ['security.allow_private_networks=true']), f)
    base = '/tmp/mrcrawl-anatomy/%s' % uuid.uuid4().hex[:8]
    fs = hdfs_put_input(tmp, base)
    runs = []
    for i in range(args.repeat):
        out = '%s/out-%d' % (base, i)
        clock.lines.clear()
        if args.job == 'trivial':
            start, end, phases, app_id = run_trivial(base + '/in', out)
            submitted = None
        else:
            start, end, phases = run_mrcrawl_job(args.job, conf_path,
                                                 'hdfs://' + base + '/in', 'hdfs://' + out)
            submitted, m = clock.first(r'Submitted application (application_\d+_\d+)')
            app_id = m.group(1)
        r = anatomy(start, end, phases, app_id, submitted)
        runs.append(r)
        print(json.dumps(r, indent=1), flush=True)
    fs.rm(base)
    walls = [r['wall'] for r in runs]
    summary = {'job': args.job, 'runs': runs, 'median_wall': round(statistics.median(walls), 3),
               'at': time.strftime('%Y-%m-%dT%H:%M:%S')}
    print('%s: median wall %.2f s over %d run(s): %s' % (
        args.job, summary['median_wall'], len(walls), ', '.join('%.2f' % w for w in walls)))
    if args.json:
        have = []
        if os.path.exists(args.json):
            with open(args.json) as f:
                have = json.load(f)
        have.append(summary)
        with open(args.json, 'w') as f:
            json.dump(have, f, indent=1)


if __name__ == '__main__':
    main()
