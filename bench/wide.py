"""The wide, slow web (issue 48): thousands of hosts on loopback addresses, each answering
after its own latency, a few percent dead or failing (wide_web.py, served by
wide_server.py). mrcrawl, Scrapy at several concurrencies and Nutch 1.20 crawl it in
turn, each with a fresh server and access log; the log is the ground truth.

    bench/.venv-scrapy/bin/python bench/wide.py wide1k \
        [--crawlers mrcrawl,mrcrawl-t512,scrapy-64,scrapy-256,scrapy-1024,nutch,...]

Crawlers: mrcrawl (defaults), mrcrawl-tN (fetch.threads=N), mrcrawl+KEY=VALUE[+...]
(settings), mrcrawl-yarn (on the test cluster of `make hadoop-up`, OUT on HDFS: run under
``. hadoop/env.sh``), scrapy-N (N requests at
once), nutch (Nutch 1.20 local, its defaults), nutch-no503defer (without the 5-minute
suspension of a host whose robots.txt answers 5xx).

Points: wide1k 1,000 hosts x ~11 pages, wide10k 10,000 x ~11; depth 4, delay 1 s, every
host a seed. Per crawl (bench/results/POINT.json, ``crawls``):

- bound: the politeness bound, from the web's definition: per healthy host, the sum of
  its requests' latencies (robots.txt and every reachable URL) plus a delay between each
  two; the slowest host's. No crawler that keeps the delay can finish sooner;
- cpu_floor_seconds: (crawler CPU s + server CPU s) / cores: the wall the CPU the crawl
  spent needs on this machine at the least; floor_seconds = max(bound, CPU floor);
- politeness_violations: a request to a host starting less than delay - 10 ms after the
  end of the previous response of that host (robots.txt included; an overlapping
  request has a negative gap); violations_after_robots_txt: those right after robots.txt; repeats, robots and beyond-depth requests as analyze.py;
- coverage: reachable URLs (healthy hosts, within the depth, allowed) answered;
  last_healthy_response_seconds: from the crawl's first request to the last response of
  a healthy host (server_span_seconds: to the last of any host, dead ones' time-outs);
- server_cpu_seconds: the server process's user+system CPU over the crawl, measured apart
  from the crawler's (the crawler's is its process tree's rusage).
"""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run import (BENCH, MRCRAWL, RESULTS, ROOT, SCRAPY_PY, WORK, ContainerSampler,  # noqa
                 measure, mrcrawl_steps, nutch_steps, webhdfs, webhdfs_get_dir, yarn_out)
from sources import mrcrawl_source  # noqa: E402
from wide_web import DEFAULT_PORT, WideWeb  # noqa: E402

POINTS = {
    'wide1k': dict(hosts=1000, pages=11, depth=4, delay=1.0),
    'wide10k': dict(hosts=10000, pages=11, depth=4, delay=1.0),
    'widetiny': dict(hosts=50, pages=11, depth=4, delay=1.0),   # smoke test
}
TOLERANCE = 0.010
# What mrcrawl does by default on a slow host (conf/defaults.toml: fetch.read_timeout 15,
# fetch.max_retries 2), given to Scrapy too (its defaults: 180 s, 2 retries).
READ_TIMEOUT, RETRIES = 15.0, 2
# Nutch 1.20 suspends a host whose robots.txt answers 5xx for
# http.robots.503.defer.visits.delay (5 min), up to 3 times, in every fetch round: on
# this web (2 % of hosts answer 503) a round then lasts 15 min or more.
NUTCH_VARIANTS = {'nutch-no503defer': '-Dhttp.robots.503.defer.visits=false'}
AGENTS = {'mrcrawl': 'mrcrawl', 'scrapy': 'scrapybench', 'nutch': 'nutchbench'}


def agent(crawler):
    return AGENTS[crawler.split('-')[0].split('+')[0]]


def crawl_cmd(crawler, seeds, p, out, nutch_threads):
    if crawler.startswith('mrcrawl'):
        # mrcrawl-yarn: the test cluster of `make hadoop-up` (. hadoop/env.sh), OUT on HDFS
        yarn = crawler.startswith('mrcrawl-yarn')
        cmd = MRCRAWL + ['crawl', '--seeds', seeds, '--depth', str(p['depth']),
               '--out', yarn_out(out) if yarn else out, '-r', 'hadoop' if yarn else 'local',
               '--set', 'security.allow_private_networks=true',
               '--set', 'politeness.delay=%s' % p['delay']]
        if crawler.startswith('mrcrawl-t'):          # mrcrawl-t512: fetch.threads=512
            cmd += ['--set', 'fetch.threads=%d' % int(crawler[len('mrcrawl-t'):])]
        for setting in crawler.split('+')[1:]:       # mrcrawl+fetch.follow_hops=3
            cmd += ['--set', setting]
        return cmd
    if crawler.startswith('scrapy-'):                # scrapy-64: CONCURRENT_REQUESTS=64
        return [SCRAPY_PY, os.path.join(BENCH, 'scrapy_spider.py'), '--seeds', seeds,
                '--depth', str(p['depth']), '--delay', str(p['delay']), '--out',
                out + '.jsonl', '--concurrency', crawler.split('-')[1],
                '--download-timeout', str(READ_TIMEOUT), '--retries', str(RETRIES)]
    if crawler.startswith('nutch'):
        return ['bash', os.path.join(BENCH, 'nutch', 'crawl.sh'), '--mode', 'local',
                '--seeds', seeds, '--crawl-dir', out, '--rounds', str(p['depth'] + 1),
                '--delay', str(p['delay']), '--threads', str(nutch_threads),
                '--logs', os.path.join(out, 'logs')]
    raise ValueError(crawler)


class Server:
    """wide_server.py in its own process: started fresh for each crawl."""

    def __init__(self, p, port, log):
        self.cmd = [sys.executable, os.path.join(BENCH, 'wide_server.py'),
                    '--hosts', str(p['hosts']), '--pages', str(p['pages']),
                    '--depth', str(p['depth']), '--port', str(port), '--log', log,
                    '--max-seconds', '7200']
        self.log = log

    def __enter__(self):
        if os.path.exists(self.log):
            os.remove(self.log)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith('ready'):
            self.proc.kill()
            raise RuntimeError('wide_server.py did not start: %r' % line)
        self.listening = int(line.split()[1])
        self.ps = psutil.Process(self.proc.pid)
        return self

    def cpu_seconds(self):
        t = self.ps.cpu_times()
        return t.user + t.system

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def judge(manifest, log_path, delay, ua):
    reachable = set(manifest['reachable'])
    beyond = {'%s %s' % (u.split('/')[2].split(':')[0], '/' + u.split('/', 3)[3])
              for u in manifest['beyond_depth']}
    disallow = manifest['robots_disallow']
    faulty = manifest['fault_hosts']
    by_host = defaultdict(list)
    seen, statuses = Counter(), Counter()
    answered = set()
    robots = robots_viol = beyond_hits = to_faulty = unanswered = 0
    first = last = last_healthy = None
    with open(log_path, errors='replace') as f:
        for line in f:
            head, _, rest = line.rstrip('\n').partition(' "')
            path, _, rest = rest.partition('" ')
            status_s, _, ua_q = rest.partition(' ')
            if ua not in ua_q:
                continue
            start, end, ip = head.split(' ')
            start, end, status = float(start), float(end), int(status_s.split()[0])
            first = start if first is None else min(first, start)
            last = end if last is None else max(last, end)
            by_host[ip].append((start, end, path == '/robots.txt'))
            if ip in faulty:
                to_faulty += 1
            else:
                last_healthy = end if last_healthy is None else max(last_healthy, end)
            if status == 0:
                unanswered += 1
            if path == '/robots.txt':
                robots += 1
                continue
            key = '%s %s' % (ip, path)
            seen[key] += 1
            statuses[status] += 1
            if 0 < status < 400:
                answered.add(key)
            if any(path.startswith(d) for d in disallow.get(ip, ())):
                robots_viol += 1
            if key in beyond:
                beyond_hits += 1
    violations, after_robots, min_gap, gaps_by_host = 0, 0, None, Counter()
    for ip, reqs in by_host.items():
        reqs.sort()
        for (s0, e0, robots0), (s1, e1, _) in zip(reqs, reqs[1:]):
            gap = s1 - e0
            min_gap = gap if min_gap is None else min(min_gap, gap)
            if gap < delay - TOLERANCE:
                violations += 1
                after_robots += robots0
                gaps_by_host[ip] += 1
    covered = len(answered & reachable)
    return {
        'pages': sum(seen.values()), 'distinct_urls': len(seen),
        'repeats': sum(n - 1 for n in seen.values() if n > 1),
        'reachable': len(reachable), 'covered': covered,
        'coverage': round(covered / len(reachable), 4),
        'beyond_depth': beyond_hits, 'robots_requests': robots,
        'robots_violations': robots_viol, 'politeness_violations': violations,
        'hosts_with_violations': len(gaps_by_host),
        'violations_after_robots_txt': after_robots,
        'min_gap_same_host': round(min_gap, 4) if min_gap is not None else None,
        'requests_to_faulty_hosts': to_faulty, 'unanswered_requests': unanswered,
        'statuses': {str(k): v for k, v in sorted(statuses.items())},
        'hosts_requested': len(by_host),
        'server_span_seconds': round(last - first, 3) if first is not None else None,
        # how much of the span the faulty hosts' timeouts and retries add at the end
        'last_healthy_response_seconds': round(last_healthy - first, 3)
        if last_healthy is not None else None,
    }


def run_point(name, crawlers, timeout, port, nutch_threads, src='worktree'):
    p = POINTS[name]
    web_dir = os.path.join(WORK, 'web-' + name)
    os.makedirs(web_dir, exist_ok=True)
    t = time.monotonic()
    web = WideWeb(p['hosts'], p['pages'], p['depth'], port=port)
    manifest = web.manifest(p['delay'])
    seeds = os.path.join(web_dir, 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write('\n'.join(web.seeds()) + '\n')
    with open(os.path.join(web_dir, 'manifest.json'), 'w') as f:
        json.dump(manifest, f)
    print('%s: web of %d hosts, %d reachable URLs, faults %s, bound %.2f s (%s, %d '
          'requests at %.3f s), built in %.1f s' % (
              name, p['hosts'], len(manifest['reachable']), manifest['faults'],
              manifest['bound_seconds'], manifest['bound_host'],
              manifest['bound_host_requests'], manifest['bound_host_latency'],
              time.monotonic() - t), flush=True)
    del web
    cores = os.cpu_count()
    result = {'point': name, 'params': p, 'port': port,
              'reachable_urls': len(manifest['reachable']), 'faults': manifest['faults'],
              'latency_quantiles': manifest['latency_quantiles'],
              'bound_seconds': manifest['bound_seconds'], 'bound_host': manifest['bound_host'],
              'bound_host_requests': manifest['bound_host_requests'],
              'bound_host_latency': manifest['bound_host_latency'],
              'machine': {'cpus': cores, 'python': platform.python_version(),
                          'kernel': platform.release()},
              'started': time.strftime('%Y-%m-%dT%H:%M:%S'), 'crawls': {}}
    pythonpath, result['mrcrawl_source'] = mrcrawl_source(src)
    path = os.path.join(RESULTS, name + '.json')
    for crawler in crawlers:
        env = dict(os.environ)
        if crawler.startswith('mrcrawl') and pythonpath:
            env['PYTHONPATH'] = pythonpath
        if crawler in NUTCH_VARIANTS:
            env['NUTCH_EXTRA_D'] = NUTCH_VARIANTS[crawler]
        out = os.path.join(WORK, 'out-%s-%s' % (name, crawler))
        subprocess.run(['rm', '-rf', out, out + '.jsonl'], check=True)
        yarn = crawler.startswith('mrcrawl-yarn')
        if yarn:
            webhdfs(yarn_out(out), 'DELETE&recursive=true', 'DELETE')
        logs = os.path.join(WORK, 'logs')
        os.makedirs(logs, exist_ok=True)
        log = os.path.join(logs, '%s-%s.access.log' % (name, crawler))
        print('%s: %s ...' % (name, crawler), flush=True)
        with Server(p, port, log) as server:
            load_before = os.getloadavg()
            started = time.strftime('%Y-%m-%dT%H:%M:%S')
            cpu0 = server.cpu_seconds()
            m = measure(crawl_cmd(crawler, seeds, p, out, nutch_threads), timeout, env=env,
                        cwd=pythonpath or ROOT,
                        log_path=os.path.join(logs, '%s-%s.stdout' % (name, crawler)),
                        containers=ContainerSampler() if yarn else None)
            m['server_cpu_seconds'] = round(server.cpu_seconds() - cpu0, 3)
            m['load_avg_before'] = [round(x, 2) for x in load_before]
            m['load_avg_after'] = [round(x, 2) for x in os.getloadavg()]
            m['started'] = started
            m['server_listening'] = server.listening
        m.update(judge(manifest, log, p['delay'], agent(crawler)))
        m['bound_seconds'] = manifest['bound_seconds']
        m['wall_over_bound'] = round(m['wall_seconds'] / manifest['bound_seconds'], 3)
        m['pages_per_second'] = round(m['pages'] / m['wall_seconds'], 2)
        m['cpu_seconds_per_page'] = round(m['cpu_seconds'] / m['pages'], 5) if m['pages'] else None
        m['cpu_floor_seconds'] = round((m['cpu_seconds'] + m['server_cpu_seconds']) / cores, 2)
        m['floor_seconds'] = max(m['bound_seconds'], m['cpu_floor_seconds'])
        m['wall_over_floor'] = round(m['wall_seconds'] / m['floor_seconds'], 3)
        if yarn and m['exit_status'] == 0:
            webhdfs_get_dir(yarn_out(out) + '/steps', os.path.join(out, 'steps'))
        if crawler.startswith('mrcrawl'):
            m['mrcrawl_source'] = result['mrcrawl_source']
            m['steps'] = mrcrawl_steps(out)
        if crawler.startswith('nutch'):
            m['nutch_extra_d'] = NUTCH_VARIANTS.get(crawler)
            m['nutch_threads'] = nutch_threads
            m['nutch_steps'] = nutch_steps(os.path.join(logs, '%s-%s.stdout' % (name, crawler)))
        result['crawls'][crawler] = m
        print(json.dumps({crawler: {k: m.get(k) for k in (
            'exit_status', 'timed_out', 'wall_seconds', 'wall_over_bound', 'cpu_seconds',
            'server_cpu_seconds', 'cpu_floor_seconds', 'pages', 'coverage',
            'pages_per_second', 'politeness_violations', 'min_gap_same_host', 'repeats',
            'robots_violations', 'beyond_depth', 'load_avg_before', 'load_avg_after')}}),
            flush=True)
        save(result, path)
    return result


def save(result, path):
    """Write the results; crawlers not rerun this time keep their last result."""
    os.makedirs(RESULTS, exist_ok=True)
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if old.get('bound_seconds') == result['bound_seconds']:
            for crawler, m in old.get('crawls', {}).items():
                result['crawls'].setdefault(crawler, m)
    scrapy = {c: m for c, m in result['crawls'].items()
              if c.startswith('scrapy-') and m.get('exit_status') == 0}
    if scrapy:
        result['scrapy_fastest'] = min(scrapy, key=lambda c: scrapy[c]['wall_seconds'])
    with open(path, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)


def rejudge(name, path):
    with open(path) as f:
        result = json.load(f)
    with open(os.path.join(WORK, 'web-' + name, 'manifest.json')) as f:
        manifest = json.load(f)
    for crawler, m in result['crawls'].items():
        log = os.path.join(WORK, 'logs', '%s-%s.access.log' % (name, crawler))
        if os.path.exists(log):
            m.update(judge(manifest, log, result['params']['delay'], agent(crawler)))
    with open(path, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)


def table(path):
    with open(path) as f:
        r = json.load(f)
    # A killed crawl's rusage lacks the processes it had not waited for (mrcrawl's tasks,
    # Nutch's JVM): its CPU and CPU floor are marked *, a lower bound.
    lines = ['| crawler | wall s | x bound | pages/s | coverage | polite viol. (hosts) '
             '| robots viol. | repeats | crawler CPU s | server CPU s | CPU floor s '
             '| load before / after |', '|' + '---|' * 12]
    for c, m in sorted(r['crawls'].items(), key=lambda kv: kv[1]['started']):
        star = '*' if m['exit_status'] != 0 else ''
        lines.append('| %s | %.1f | %.2f | %.1f | %.3f | %d (%d) | %d | %d | %.1f%s | %.1f | %.1f%s | %s / %s |' % (
            c + ('' if m['exit_status'] == 0 else ' (exit %s)' % m['exit_status']),
            m['wall_seconds'], m['wall_over_bound'], m['pages_per_second'], m['coverage'],
            m['politeness_violations'], m['hosts_with_violations'], m['robots_violations'],
            m['repeats'], m['cpu_seconds'], star, m['server_cpu_seconds'],
            m['cpu_floor_seconds'], star, '/'.join('%.1f' % x for x in m['load_avg_before']),
            '/'.join('%.1f' % x for x in m['load_avg_after'])))
    return '\n'.join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('point', choices=sorted(POINTS))
    ap.add_argument('--crawlers', default='mrcrawl,scrapy-64,scrapy-256,nutch-no503defer,'
                    'mrcrawl+fetch.follow_hops=0')
    ap.add_argument('--timeout', type=float, default=1800.0,
                    help='Seconds one crawl may take before it is killed. Default: %(default)s')
    ap.add_argument('--port', type=int, default=DEFAULT_PORT)
    ap.add_argument('--nutch-threads', type=int, default=200)
    ap.add_argument('--mrcrawl-src', default='worktree')
    ap.add_argument('--table', action='store_true', help='Only print the results table.')
    ap.add_argument('--rejudge', action='store_true',
                    help='Judge the kept access logs again (bench/work/logs) into the results.')
    a = ap.parse_args(argv)
    path = os.path.join(RESULTS, a.point + '.json')
    if a.rejudge:
        rejudge(a.point, path)
    elif not a.table:
        run_point(a.point, a.crawlers.split(','), a.timeout, a.port, a.nutch_threads,
                  a.mrcrawl_src)
    print(table(path))


if __name__ == '__main__':
    main()
