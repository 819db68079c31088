"""Run benchmark points: generate the web, serve it with nginx, crawl it with mrcrawl and
with Scrapy in turn, judge each crawl from nginx's log, write bench/results/.

    bench/.venv-scrapy/bin/python bench/run.py polite cpu1x [--crawlers mrcrawl,scrapy]
    bench/.venv-scrapy/bin/python bench/run.py --summary      # only rebuild summary.md

Points (name: hosts x pages per host, depth, delay):
    polite  20 x 60,   depth 3, delay 0.5   politeness-bound
    yarn20  20 x 60,   depth 3, delay 0     a job's fixed cost on YARN dominates
    cpu1x   100 x 200, depth 5, delay 0     ~20,000 pages, CPU-bound
    cpu4x   200 x 400, depth 5, delay 0     ~80,000 pages
    cpu10x  400 x 500, depth 5, delay 0     ~200,000 pages
    tiny    10 x 50,   depth 2, delay 0     smoke test of the harness

Each crawler runs as a child process in its own session; a sampler reads every process
of its tree every 0.2 s (VmHWM from /proc, the kernel's own peak, so short peaks between
samples are not missed): the driver (the process started) and the largest other process
(a task) are reported apart. CPU seconds are the child's rusage (it and every descendant
it waited for). On YARN the tasks are the NodeManagers' children, outside that tree, so
two more figures: the machine's busy CPU seconds over the crawl (/proc/stat) less
nginx's and less the idle rate measured for 10 s before (crawl_machine_cpu_seconds: the
client, the containers and the daemons' work for the crawl), and each container's peak
resident memory, sampled with its whole process tree (containers). Wall time is from
start to exit. Every crawl has a time limit (--timeout) after which its process group is
killed and the run is marked failed.
"""
import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import urllib.request

import psutil

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
WORK = os.path.join(BENCH, 'work')
RESULTS = os.path.join(BENCH, 'results')
sys.path.insert(0, BENCH)

from analyze import analyze  # noqa: E402
from sources import mrcrawl_source  # noqa: E402
from server import Nginx  # noqa: E402

POINTS = {
    'tiny': dict(hosts=10, pages=50, depth=2, delay=0.0),
    # issue 17: where a job's fixed cost on YARN dominates (--crawlers mrcrawl-yarn,...)
    'yarn20': dict(hosts=20, pages=60, depth=3, delay=0.0),
    # issue 20: pages link images too, which a text crawler should not spend a slot on
    'polite': dict(hosts=20, pages=60, depth=3, delay=0.5, images=True),
    'cpu1x': dict(hosts=100, pages=200, depth=5, delay=0.0),
    'cpu4x': dict(hosts=200, pages=400, depth=5, delay=0.0),
    'cpu10x': dict(hosts=400, pages=500, depth=5, delay=0.0),
    # issue 8's soak run: >= 100,000 pages over >= 200 hosts (run with --crawlers mrcrawl)
    'soak': dict(hosts=200, pages=520, depth=5, delay=0.0),
}
PORT = 18631
#: The mrcrawl command of the code a run crawls with (the work tree's or a commit's).
MRCRAWL = [os.path.join(ROOT, '.venv', 'bin', 'python'),
           os.path.join(BENCH, 'mrcrawl_any.py')]
SCRAPY_PY = os.path.join(BENCH, '.venv-scrapy', 'bin', 'python')


def generate(name, p):
    web = os.path.join(WORK, 'web-' + name)
    want = dict(hosts=p['hosts'], pages=p['pages'], depth=p['depth'], port=PORT,
                images=p.get('images', False))
    man = os.path.join(web, 'manifest.json')
    if os.path.exists(man):
        with open(man) as f:
            have = json.load(f)['args']
        if all(have.get(k) == v for k, v in want.items()):
            return web
    subprocess.run(['rm', '-rf', web], check=True)
    t = time.monotonic()
    subprocess.run([sys.executable, os.path.join(BENCH, 'gen_web.py'), '--out', web,
                    '--hosts', str(p['hosts']), '--pages', str(p['pages']),
                    '--depth', str(p['depth']), '--port', str(PORT),
                    '--delay', str(p['delay'] or 0.5)] +
                   (['--images'] if p.get('images') else []), check=True)
    print('generated %s in %.1fs' % (web, time.monotonic() - t), flush=True)
    return web


def warm_cache(web):
    """Read every file once so neither crawler pays for the disk on its first visit."""
    for dp, _, fns in os.walk(web):
        for fn in fns:
            with open(os.path.join(dp, fn), 'rb') as f:
                while f.read(1 << 20):
                    pass


def _hwm(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_busy_seconds():
    """CPU seconds this machine has spent busy since boot, over every core (/proc/stat:
    all but idle and iowait)."""
    with open('/proc/stat') as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]
    return busy / os.sysconf('SC_CLK_TCK')


def idle_busy_rate(seconds=10.0):
    """Busy CPU seconds per second of this machine while no crawl runs (the daemons of a
    running test cluster, anything else): subtracted from a crawl's machine CPU."""
    b0, t0 = machine_busy_seconds(), time.monotonic()
    time.sleep(seconds)
    return (machine_busy_seconds() - b0) / (time.monotonic() - t0)


_CONTAINER = re.compile(r'(container_(?:e\d+_)?\d+_\d+_\d+_\d+)')


class ContainerSampler:
    """Peak resident memory of each YARN container of the local test cluster: the
    process tree under each NodeManager's child (launch script, task or AM JVM, and the
    Python it streams to), summed per sample. A task's own counters cannot give this:
    Hadoop samples the tree every few seconds and loses a Python child that exits
    between samples."""

    def __init__(self):
        self.peaks = {}      # container id -> [peak bytes, kind]
        self._nms = None

    def nodemanagers(self):
        if self._nms is None:
            self._nms = [p for p in psutil.process_iter(['cmdline']) if any(
                'nodemanager.NodeManager' in a for a in (p.info['cmdline'] or ()))]
        return self._nms

    def sample(self):
        for nm in self.nodemanagers():
            try:
                launchers = nm.children()
            except psutil.Error:
                self._nms = None      # a NodeManager went away: look again next time
                continue
            for top in launchers:
                total, cid, kind = 0, None, 'task'
                try:
                    procs = [top] + top.children(recursive=True)
                except psutil.Error:
                    continue
                for pr in procs:
                    try:
                        total += pr.memory_info().rss
                        argv = ' '.join(pr.cmdline())
                    except psutil.Error:
                        continue
                    m = _CONTAINER.search(argv)
                    cid = cid or (m and m.group(1))
                    if 'MRAppMaster' in argv:
                        kind = 'am'
                if cid is None:
                    continue
                peak = self.peaks.setdefault(cid, [0, kind])
                peak[0] = max(peak[0], total)
                if kind == 'am':
                    peak[1] = 'am'

    def summary(self):
        if not self.peaks:
            return None
        by_kind = {}
        for cid, (peak, kind) in self.peaks.items():
            by_kind.setdefault(kind, []).append((peak, cid))
        out = {'containers_seen': len(self.peaks)}
        for kind, peaks in by_kind.items():
            peak, cid = max(peaks)
            out['%s_peak_mb' % kind] = round(peak / 2**20, 1)
            out['%s_peak_container' % kind] = cid
            out['%s_containers' % kind] = len(peaks)
        return out


def measure(cmd, timeout, env=None, cwd=ROOT, log_path=None, containers=None):
    """Run *cmd*, sample its process tree (and with *containers*, a ContainerSampler,
    the cluster's containers); return wall, cpu, memory and exit status."""
    out = open(log_path, 'wb') if log_path else subprocess.DEVNULL
    start = time.monotonic()
    busy0 = machine_busy_seconds()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    root = psutil.Process(proc.pid)
    peaks = {}          # pid -> (peak bytes, short command)
    tree_peak = 0
    procs_seen = set()
    status = rusage = None
    timed_out = False
    while True:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, rusage = st, ru
            break
        if time.monotonic() - start > timeout:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, rusage = os.wait4(proc.pid, 0)
            break
        try:
            kids = root.children(recursive=True)
        except psutil.NoSuchProcess:
            kids = []
        total = 0
        for pr in [root] + kids:
            hwm = _hwm(pr.pid)
            if hwm is None:
                continue
            procs_seen.add(pr.pid)
            try:
                rss = pr.memory_info().rss
                total += rss
            except psutil.Error:
                pass
            if pr.pid not in peaks:
                try:
                    argv = pr.cmdline()
                    name = '%s: %s' % (os.path.basename(argv[0]) if argv else '?',
                                       ' '.join(argv)[-140:])
                except psutil.Error:
                    name = '?'
                peaks[pr.pid] = (hwm, name)
            elif hwm > peaks[pr.pid][0]:
                peaks[pr.pid] = (hwm, peaks[pr.pid][1])
        tree_peak = max(tree_peak, total)
        if containers is not None:
            containers.sample()
        time.sleep(0.2)
    wall = time.monotonic() - start
    machine_busy = machine_busy_seconds() - busy0
    if log_path:
        out.close()
    driver = peaks.get(proc.pid, (0, ''))[0]
    others = sorted(((v[0], v[1]) for k, v in peaks.items() if k != proc.pid), reverse=True)
    task_peak = max(others, default=(0, ''))
    # The local runner sorts with GNU sort, whose buffer is not Python's: report apart.
    py_peak = max((o for o in others if o[1].startswith('python')), default=(0, ''))
    sort_peak = max((o for o in others if o[1].startswith('sort:')), default=(0, ''))
    return {
        'exit_status': os.waitstatus_to_exitcode(status) if status is not None else None,
        'timed_out': timed_out,
        'wall_seconds': round(wall, 3),
        'cpu_user_seconds': round(rusage.ru_utime, 3),
        'cpu_system_seconds': round(rusage.ru_stime, 3),
        'cpu_seconds': round(rusage.ru_utime + rusage.ru_stime, 3),
        'maxrss_any_process_mb': round(rusage.ru_maxrss / 1024, 1),
        'driver_peak_mb': round(driver / 2**20, 1),
        'task_peak_mb': round(task_peak[0] / 2**20, 1),
        'task_peak_cmd': task_peak[1],
        'python_task_peak_mb': round(py_peak[0] / 2**20, 1),
        'python_task_peak_cmd': py_peak[1],
        'sort_peak_mb': round(sort_peak[0] / 2**20, 1),
        'top_task_peaks': [{'mb': round(b / 2**20, 1), 'cmd': c[:120]} for b, c in others[:5]],
        'tree_peak_rss_mb': round(tree_peak / 2**20, 1),
        'processes_seen': len(procs_seen),
        'machine_busy_seconds': round(machine_busy, 3),
        'containers': containers.summary() if containers is not None else None,
    }


def crawl_cmd(crawler, web, p, out, settings=()):
    seeds = os.path.join(web, 'seeds.txt')
    if crawler in ('mrcrawl', 'mrcrawl-yarn', 'mrcrawl-yarn-all'):
        # mrcrawl-yarn: the single-node cluster of `make hadoop-up`, OUT on HDFS;
        # mrcrawl-yarn-all: every job on YARN, none in the driver (hadoop.local_max_bytes).
        yarn = crawler.startswith('mrcrawl-yarn')
        if crawler == 'mrcrawl-yarn-all':
            settings = ['hadoop.local_max_bytes=0'] + list(settings)
        cmd = MRCRAWL + ['crawl', '--seeds', seeds, '--depth', str(p['depth']),
               '--out', yarn_out(out) if yarn else out, '-r', 'hadoop' if yarn else 'local',
               '--set', 'security.allow_private_networks=true',
               '--set', 'politeness.delay=%s' % p['delay']]
        for s in settings:
            cmd += ['--set', s]
        return cmd
    if crawler in FOLLOW:
        return crawl_cmd('mrcrawl', web, p, out, list(settings) + follow_settings(crawler, p))
    if crawler in VARIANTS:
        return [os.path.join(ROOT, '.venv', 'bin', 'python'),
                os.path.join(BENCH, 'mrcrawl_variant.py')] + [
                    '--runner-opt=' + o for o in VARIANTS[crawler]] + ['--'] + crawl_cmd(
                        'mrcrawl', web, p, out)[1:]
    if crawler in ('scrapy', 'scrapy-bfs'):
        cmd = [SCRAPY_PY, os.path.join(BENCH, 'scrapy_spider.py'), '--seeds', seeds,
               '--depth', str(p['depth']), '--delay', str(p['delay']),
               '--out', out + '.jsonl']
        return cmd + (['--bfs'] if crawler == 'scrapy-bfs' else [])
    if crawler in ('nutch', 'nutch-yarn'):
        # Apache Nutch 1.20 (bench/nutch/, built by `make bench-nutch`): local mode, or
        # deploy mode on the cluster of `make hadoop-up` with the crawl dir on HDFS.
        # depth + 1 rounds: the seeds, then one round per layer; one connection per host.
        yarn = crawler == 'nutch-yarn'
        return ['bash', os.path.join(BENCH, 'nutch', 'crawl.sh'),
                '--mode', 'yarn' if yarn else 'local', '--seeds', seeds,
                '--crawl-dir', yarn_out(out) if yarn else out,
                '--rounds', str(p['depth'] + 1), '--delay', str(p['delay']),
                '--threads', '64', '--logs', os.path.join(out, 'logs')]
    raise ValueError(crawler)


# mrcrawl with extra mrjob options (proposals measured before they are made).
VARIANTS = {'mrcrawl-nobootstrap': ['--no-bootstrap-mrjob']}
# mrcrawl (local runner) with in-fetch following (fetch.follow_hops): one hop, which keeps
# every depth a layered crawl's, or as many as the point's depth. Compared with the
# asynchronous bound, as Scrapy is.
FOLLOW = {'mrcrawl-follow': 1, 'mrcrawl-follow-all': None}


def follow_settings(crawler, p):
    return ['fetch.follow_hops=%d' % (FOLLOW[crawler] or p['depth'])] \
        if crawler in FOLLOW else []
AGENTS = {'mrcrawl': 'mrcrawl', 'scrapy': 'scrapybench', 'scrapy-bfs': 'scrapybench',
          'mrcrawl-nobootstrap': 'mrcrawl', 'mrcrawl-yarn': 'mrcrawl',
          'mrcrawl-yarn-all': 'mrcrawl', 'mrcrawl-follow': 'mrcrawl',
          'mrcrawl-follow-all': 'mrcrawl'}
AGENTS.update({'nutch': 'nutchbench', 'nutch-yarn': 'nutchbench'})


def yarn_out(out):
    return 'hdfs:///bench/' + os.path.basename(out)


def webhdfs(path, op, method='GET'):
    """One WebHDFS request (no JVM) to the cluster of hadoop/env.sh."""
    base = os.environ.get('MRCRAWL_WEBHDFS_URL', 'http://127.0.0.1:9870') + '/webhdfs/v1'
    user = os.environ.get('HADOOP_USER_NAME') or os.environ.get('USER', 'root')
    path = path[len('hdfs://'):] if path.startswith('hdfs://') else path
    req = urllib.request.Request('%s%s?op=%s&user.name=%s' % (base, path, op, user),
                                 method=method)
    with urllib.request.urlopen(req) as r:
        return r.read()


def webhdfs_get_dir(uri, local):
    """Copy the files of the HDFS folder *uri* into *local*."""
    names = [f['pathSuffix'] for f in json.loads(webhdfs(uri, 'LISTSTATUS'))[
        'FileStatuses']['FileStatus'] if f['type'] == 'FILE']
    os.makedirs(local, exist_ok=True)
    for name in names:
        with open(os.path.join(local, name), 'wb') as f:
            f.write(webhdfs(uri + '/' + name, 'OPEN'))


def yarn_floor(repeat=3):
    """The cluster's floor for one job, measured in the same run: a trivial streaming job
    (cat/cat on one line, nothing shipped), by bench/yarn_anatomy.py."""
    path = os.path.join(WORK, 'yarn_floor.json')
    if os.path.exists(path):
        os.remove(path)
    subprocess.run([os.path.join(ROOT, '.venv', 'bin', 'python'),
                    os.path.join(BENCH, 'yarn_anatomy.py'), '--job', 'trivial', '--repeat',
                    str(repeat), '--json', path], check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        runs = json.load(f)[0]['runs']
    walls = sorted(r['wall'] for r in runs)
    print('yarn floor (trivial streaming job): %s s' % ', '.join('%.2f' % w for w in walls),
          flush=True)
    return {'trivial_job_seconds': [round(w, 3) for w in walls],
            'median_seconds': round(walls[len(walls) // 2], 3)}


def mrcrawl_steps(out, names=None):
    """Seconds per step kind from mrcrawl's report (steps/*.json; only the files
    *names* if given), the number of jobs, the median job's seconds, and how many jobs
    ran on each runner."""
    steps_dir = os.path.join(out, 'steps')
    per_kind, n, each, runners, on_yarn = {}, {}, [], {}, []
    if not os.path.isdir(steps_dir):
        return None
    for fn in sorted(os.listdir(steps_dir)):
        if names is not None and fn not in names:
            continue
        with open(os.path.join(steps_dir, fn)) as f:
            s = json.load(f)
        kind = fn.split('-')[0].replace('.json', '')
        if kind == 'inject' or s.get('made_by'):   # made_by: written by another job
            continue
        per_kind[kind] = round(per_kind.get(kind, 0) + s.get('seconds', 0), 3)
        n[kind] = n.get(kind, 0) + 1
        if 'runner' in s:      # steps/index.json is the driver's Parquet step, no job
            each.append(s['seconds'])
            runners[s['runner']] = runners.get(s['runner'], 0) + 1
            if 'hadoop' in s['runner']:      # a YARN job (with a part in the driver)
                on_yarn.append(s['seconds'])
    # steps/index.json's seconds include its indexrows job's: index is the Parquet part.
    if 'index' in per_kind and 'indexrows' in per_kind:
        per_kind['index'] = round(per_kind['index'] - per_kind['indexrows'], 3)
    each.sort()
    on_yarn.sort()
    return {'median_yarn_job_seconds': on_yarn[len(on_yarn) // 2] if on_yarn else None,
            'seconds_by_kind': per_kind, 'jobs_by_kind': n,
            'jobs': sum(n.values()), 'job_seconds': round(sum(per_kind.values()), 3),
            'median_job_seconds': each[len(each) // 2] if each else None,
            'jobs_by_runner': runners}


def nutch_steps(stdout_path):
    """Seconds per step kind (inject, generate, fetch, parse, updatedb, hdfs-prep) from
    bench/nutch/crawl.sh's output: one JVM (local) or one `hadoop jar` (YARN) a step."""
    per_kind, n = {}, {}
    try:
        with open(stdout_path, errors='replace') as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and line.startswith('  ') and parts[1].endswith('s'):
                    try:
                        sec = float(parts[1][:-1])
                    except ValueError:
                        continue
                    per_kind[parts[0]] = round(per_kind.get(parts[0], 0) + sec, 3)
                    n[parts[0]] = n.get(parts[0], 0) + 1
    except OSError:
        return None
    return {'seconds_by_kind': per_kind, 'steps_by_kind': n, 'steps': sum(n.values()),
            'step_seconds': round(sum(per_kind.values()), 3)}


def run_point(name, crawlers, timeout, src='worktree', settings=()):
    p = POINTS[name]
    web = generate(name, p)
    with open(os.path.join(web, 'manifest.json')) as f:
        manifest = json.load(f)
    warm_cache(web)
    delay = p['delay']
    bounds = {'layered_seconds': round(manifest['bound_urls_layered'] * delay, 3),
              'async_seconds': round(manifest['bound_urls_async'] * delay, 3),
              'layered_urls': manifest['bound_urls_layered'],
              'async_urls': manifest['bound_urls_async']}
    result = {'point': name, 'params': p, 'reachable_urls': len(manifest['reachable']),
              'web_files': manifest['files'], 'layers': manifest['layers'],
              'bounds': bounds, 'machine': {
                  'cpus': os.cpu_count(), 'python': platform.python_version(),
                  'kernel': platform.release()},
              'started': time.strftime('%Y-%m-%dT%H:%M:%S'), 'crawls': {}}
    pythonpath, result['mrcrawl_source'] = mrcrawl_source(src)
    if any(c.endswith('-yarn') for c in crawlers):
        result['yarn_floor'] = yarn_floor()
    for crawler in crawlers:
        env = dict(os.environ)
        if crawler.startswith('mrcrawl') and pythonpath:
            env['PYTHONPATH'] = pythonpath
        out = os.path.join(WORK, 'out-%s-%s' % (name, crawler))
        subprocess.run(['rm', '-rf', out, out + '.jsonl'], check=True)
        if crawler.startswith('mrcrawl-yarn'):
            webhdfs(yarn_out(out), 'DELETE&recursive=true', 'DELETE')
        log = os.path.join(WORK, 'logs', '%s-%s.access.log' % (name, crawler))
        os.makedirs(os.path.dirname(log), exist_ok=True)
        load_before = os.getloadavg()
        started = time.strftime('%Y-%m-%dT%H:%M:%S')
        print('%s: %s crawling %d reachable URLs...' % (name, crawler, len(manifest['reachable'])),
              flush=True)
        idle_rate = idle_busy_rate()
        with Nginx(web, os.path.join(WORK, 'nginx'), PORT, log) as server:
            cpu0 = server.cpu_seconds()
            m = measure(crawl_cmd(crawler, web, p, out, settings), timeout, env=env,
                        cwd=pythonpath or ROOT,
                        log_path=os.path.join(WORK, 'logs', '%s-%s.stdout' % (name, crawler)),
                        containers=ContainerSampler() if crawler.endswith('-yarn')
                        or crawler == 'mrcrawl-yarn-all' else None)
            m['nginx_cpu_seconds'] = round(server.cpu_seconds() - cpu0, 3)
        # Every CPU second the crawl cost this machine: its client, its YARN containers
        # and the cluster's daemons at work for it, less nginx and the idle rate.
        m['idle_busy_per_second'] = round(idle_rate, 3)
        m['crawl_machine_cpu_seconds'] = round(
            m['machine_busy_seconds'] - m['nginx_cpu_seconds'] - idle_rate * m['wall_seconds'], 3)
        m['nginx_errors'] = server.errors()
        if m['nginx_errors']:
            print('%s: %s: nginx logged %d error(s) at level crit or worse (%s): the server '
                  'failed part of this run' % (name, crawler, m['nginx_errors'],
                                               os.path.join(WORK, 'nginx', 'error.log')),
                  flush=True)
        m['started'] = started
        m['mrcrawl_source'] = result['mrcrawl_source'] if crawler.startswith('mrcrawl') else None
        m['load_avg_before'] = [round(x, 2) for x in load_before]
        m['load_avg_after'] = [round(x, 2) for x in os.getloadavg()]
        a = analyze(manifest, log, delay, AGENTS[crawler])
        m.update(a)
        pages = a['pages']
        m['pages_per_second'] = round(pages / m['wall_seconds'], 2) if pages else 0
        m['cpu_seconds_per_page'] = round(m['cpu_seconds'] / pages, 5) if pages else None
        m['machine_cpu_seconds_per_page'] = round(
            m['crawl_machine_cpu_seconds'] / pages, 5) if pages else None
        m['wall_seconds_per_page'] = round(m['wall_seconds'] / pages, 5) if pages else None
        if delay:
            layered = crawler.startswith('mrcrawl') and crawler not in FOLLOW
            bound = bounds['layered_seconds'] if layered else bounds['async_seconds']
            m['bound_kind'] = 'layered' if layered else 'async'
            m['bound_seconds'] = bound
            m['wall_over_bound'] = round(m['wall_seconds'] / bound, 3)
            m['wall_over_layered_bound'] = round(m['wall_seconds'] / bounds['layered_seconds'], 3)
            m['wall_over_async_bound'] = round(m['wall_seconds'] / bounds['async_seconds'], 3)
        if crawler.startswith('mrcrawl-yarn') and m['exit_status'] == 0:
            webhdfs_get_dir(yarn_out(out) + '/steps', os.path.join(out, 'steps'))
        if crawler.startswith('mrcrawl'):
            m['steps'] = mrcrawl_steps(out)
            m['settings'] = list(settings) + follow_settings(crawler, p)
        if crawler.startswith('nutch'):
            m['nutch_steps'] = nutch_steps(os.path.join(WORK, 'logs', '%s-%s.stdout' % (
                name, crawler)))
        result['crawls'][crawler] = m
        print(json.dumps({crawler: {k: m[k] for k in (
            'exit_status', 'wall_seconds', 'cpu_seconds', 'pages', 'coverage',
            'pages_per_second', 'driver_peak_mb', 'task_peak_mb', 'robots_violations',
            'politeness_violations', 'crawl_machine_cpu_seconds',
            'machine_cpu_seconds_per_page', 'containers')}}), flush=True)
    same_xml(name, result)
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name + '.json')
    if os.path.exists(path):   # crawlers not rerun keep their last result
        with open(path) as f:
            old = json.load(f)
        for crawler, m in old.get('crawls', {}).items():
            result['crawls'].setdefault(crawler, m)
    with open(path, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return result


def same_xml(name, result):
    """The YARN crawls' xml/ against the local runner's, when both ran in this run
    (compare_xml.py): result['xml_vs_local'][crawler]."""
    from compare_xml import compare
    crawls = result['crawls']
    local = crawls.get('mrcrawl')
    if not local or local['exit_status'] != 0:
        return
    for crawler in ('mrcrawl-yarn', 'mrcrawl-yarn-all'):
        if crawls.get(crawler, {}).get('exit_status') != 0:
            continue
        out = os.path.join(WORK, 'out-%s-%s' % (name, crawler))
        webhdfs_get_dir(yarn_out(out) + '/xml', os.path.join(out, 'xml'))
        got = compare(os.path.join(WORK, 'out-%s-mrcrawl' % name, 'xml'),
                      os.path.join(out, 'xml'))
        result.setdefault('xml_vs_local', {})[crawler] = got
        print('%s: %s xml/ against the local runner\'s: %s' % (name, crawler, json.dumps(got)),
              flush=True)


def summarize():
    rows = []
    for name in POINTS:
        path = os.path.join(RESULTS, name + '.json')
        if not os.path.exists(path):
            continue
        with open(path) as f:
            r = json.load(f)
        for crawler, m in r['crawls'].items():
            rows.append((r, crawler, m))
    lines = ['# Benchmark results', '',
             'Written by `bench/run.py` from the runs below (one run each; bench/README.md '
             'explains every column). Machine: 2 cores, shared with other work: note the '
             'load average.', '',
             '| point | crawler | reachable | pages | coverage | wall s | bound s | wall/bound '
             '| pages/s | CPU s/page | driver MB | task MB | robots viol. | polite viol. '
             '| repeats | beyond depth | load before |',
             '|' + '---|' * 17]
    for r, crawler, m in rows:
        lines.append('| %s | %s | %d | %d | %s | %.1f | %s | %s | %.1f | %s | %.0f | %.0f | %d | %d | %d | %d | %s |' % (
            r['point'], crawler + ('' if m['exit_status'] == 0 else ' (exit %s)' % m['exit_status']),
            r['reachable_urls'], m['pages'], m['coverage'], m['wall_seconds'],
            m.get('bound_seconds', '-'), m.get('wall_over_bound', '-'), m['pages_per_second'],
            m['cpu_seconds_per_page'], m['driver_peak_mb'], m['task_peak_mb'],
            m['robots_violations'], m['politeness_violations'], m['repeats'],
            m['beyond_depth'], '/'.join('%.1f' % x for x in m['load_avg_before'])))
    ratios = []
    for name in POINTS:
        path = os.path.join(RESULTS, name + '.json')
        if os.path.exists(path):
            with open(path) as f:
                c = json.load(f)['crawls']
            if 'mrcrawl' in c and 'scrapy' in c and c['scrapy']['pages_per_second']:
                ratios.append('| %s | %.2f |' % (name, c['mrcrawl']['pages_per_second']
                                                 / c['scrapy']['pages_per_second']))
    if ratios:
        lines += ['', '| point | mrcrawl pages/s over Scrapy pages/s |', '|---|---|'] + ratios
    steps = [(r['point'] + ' ' + c, m['steps']) for r, c, m in rows
             if c.startswith('mrcrawl') and m.get('steps')]
    if steps:
        lines += ['', 'mrcrawl: seconds spent in each kind of job (from OUT/steps/*.json), '
                  'and the number of jobs:', '',
                  '| point | jobs | fetch | parse | optimize | generate | merge | xml |',
                  '|---|---|---|---|---|---|---|---|']
        for point, s in steps:
            k = s['seconds_by_kind']
            lines.append('| %s | %d | %s |' % (point, s['jobs'], ' | '.join(
                '%.1f' % k.get(x, 0) for x in ('fetch', 'parse', 'optimize', 'generate',
                                               'merge', 'xml'))))
    earlier = []
    for run in sorted(d for d in os.listdir(RESULTS) if d.startswith('run')
                      and os.path.isdir(os.path.join(RESULTS, d))):
        for name in POINTS:
            path = os.path.join(RESULTS, run, name + '.json')
            if os.path.exists(path):
                with open(path) as f:
                    for crawler, m in json.load(f)['crawls'].items():
                        earlier.append((name, crawler, run, m))
    for r, crawler, m in rows:
        earlier.append((r['point'], crawler, 'latest', m))
    if earlier:
        lines += ['', 'Every run kept (results/run*/ are earlier runs; a run that appears in '
                  'two folders is listed twice):', '',
                  '| point | crawler | folder | started | mrcrawl code | wall s | pages/s | CPU s '
                  '| coverage | load before |', '|---|---|---|---|---|---|---|---|---|---|']
        for name, crawler, run, m in sorted(earlier, key=lambda e: (
                list(POINTS).index(e[0]), e[1], e[3].get('started', ''))):
            src = m.get('mrcrawl_source') or '-'
            lines.append('| %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %s | %s |' % (
                name, crawler, run, m.get('started', '?'), src.split(' ')[-1][:12] if src != '-'
                else '-', m['wall_seconds'],
                m['pages_per_second'], m['cpu_seconds'], m['coverage'],
                '/'.join('%.1f' % x for x in m['load_avg_before'])))
    with open(os.path.join(RESULTS, 'summary.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('points', nargs='*', help='Any of: %s.' % ', '.join(POINTS))
    p.add_argument('--crawlers', default='mrcrawl,scrapy')
    p.add_argument('--timeout', type=float, default=3600.0,
                   help='Seconds one crawl may take before it is killed. Default: %(default)s')
    p.add_argument('--mrcrawl-src', default='worktree',
                   help='mrcrawl code to run: worktree, or a git revision exported read-only '
                        'under bench/work/src-<commit>. Default: %(default)s')
    p.add_argument('--summary', action='store_true', help='Only rebuild results/summary.md.')
    p.add_argument('--set', action='append', default=[], metavar='SECTION.KEY=VALUE',
                   help='A setting for every mrcrawl crawl of this run (a variant measured '
                        'before it becomes a default).')
    args = p.parse_args(argv)
    unknown = [n for n in args.points if n not in POINTS]
    if unknown:
        p.error('unknown point(s): %s' % ', '.join(unknown))
    for name in args.points:
        run_point(name, args.crawlers.split(','), args.timeout, args.mrcrawl_src, args.set)
    summarize()


if __name__ == '__main__':
    main()
