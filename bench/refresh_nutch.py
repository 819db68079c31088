"""Apache Nutch 1.20's refresh cost on bench/refresh.py's web: first crawl, 1 % change,
one refresh round with every known page due.

    bench/.venv-scrapy/bin/python bench/refresh_nutch.py cpu1x [--change 0.01]

Nutch in local mode (bench/nutch/setup.sh first), one step a JVM, with
bench/nutch/crawl.sh's settings (-D below) and bench/run.py's for the point: the
point's delay (cpu1x: 0), 64 fetcher threads, one connection per host.

1. generates the point's web afresh in bench/work/web-POINT-nutch-refresh, served by
   nginx on PORT (bench/refresh.py's + 1), a fresh nginx per cycle as refresh.py does;
2. first crawl: inject, depth + 1 rounds of generate / fetch / parse / updatedb (as
   bench/run.py's `nutch` crawler), then invertlinks (every segment) and dedup once, as
   bin/crawl does before indexing; no index (setup.sh builds no indexer plugin);
3. changes the web with bench/gen_web.py --change (edits, deletions, additions);
4. one refresh round: generate -adddays ADDDAYS (every crawldb entry due: a fetched page
   is due 30 days after its fetch, a gone one 45 days), fetch, parse, updatedb,
   invertlinks (the new segment, into the linkdb), dedup;
5. writes bench/results/refresh-nutch-POINT.json: per cycle the seconds per step, the
   "fetch" seconds (fetch + parse: mrcrawl parses inside its fetch), the "non-fetch"
   seconds (generate, updatedb, invertlinks, dedup; inject excluded), their ratio
   refresh / first, nginx's status counts (refresh.statuses, as refresh.py counts them)
   and the crawldb's counts (readdb -stats, not timed).
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import refresh  # noqa: E402
import run  # noqa: E402
from server import Nginx  # noqa: E402

#: Its own port and nginx folder: not bench/run.py's nor bench/refresh.py's.
PORT = refresh.PORT + 1
NUTCH_RT = os.path.join(run.WORK, 'nutch', 'runtime', 'local')
JAVA_HOME = '/usr/lib/jvm/java-17-openjdk-amd64'
#: Days added to "now" for the refresh's generate: past a fetched page's 30-day interval
#: and a gone page's 45 days (db.fetch.interval.default * 1.5), below the 90-day maximum.
ADDDAYS = 60
FETCH_KINDS = ('fetch', 'parse')
NON_FETCH_KINDS = ('generate', 'updatedb', 'invertlinks', 'dedup')


def settings(delay, threads, crawl):
    """bench/nutch/crawl.sh's -D options (local mode)."""
    return ['-Dhttp.agent.name=nutchbench', '-Dfetcher.server.delay=%s' % delay,
            '-Dfetcher.server.min.delay=%s' % delay, '-Dfetcher.threads.per.queue=1',
            '-Dfetcher.queue.mode=byHost', '-Dfetcher.threads.fetch=%d' % threads,
            '-Ddb.ignore.external.links=false', '-Ddb.max.outlinks.per.page=-1',
            '-Dmapreduce.job.reduces=1', '-Dmapreduce.map.speculative=false',
            '-Dmapreduce.reduce.speculative=false', '-Dmapreduce.map.output.compress=true',
            '-Dhadoop.tmp.dir=%s/.hadoop-tmp' % crawl,
            '-Dmapreduce.jobtracker.staging.root.dir=%s/.hadoop-tmp/staging' % crawl]


class Steps:
    """Runs `bin/nutch TOOL ...` one JVM at a time, timing each; every step of the run
    counts against one deadline."""

    def __init__(self, crawl, logs, deadline):
        self.crawl, self.logs, self.deadline = crawl, logs, deadline
        self.env = dict(os.environ, JAVA_HOME=JAVA_HOME, NUTCH_HOME=NUTCH_RT,
                        NUTCH_CONF_DIR=os.path.join(NUTCH_RT, 'conf'), NUTCH_LOG_DIR=logs)
        self.n = 0

    def __call__(self, tool, *args, ok=(0,)):
        self.n += 1
        log = os.path.join(self.logs, '%02d-%s.log' % (self.n, tool))
        left = self.deadline - time.monotonic()
        if left <= 0:
            sys.exit('time limit reached before %s' % tool)
        t = time.monotonic()
        with open(log, 'wb') as out:
            proc = subprocess.Popen([os.path.join(NUTCH_RT, 'bin', 'nutch'), tool] +
                                    list(args), env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = proc.wait(left)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                sys.exit('time limit reached during %s (log: %s)' % (tool, log))
        sec = round(time.monotonic() - t, 3)
        print('  %-11s %7.1fs  rc=%d' % (tool, sec, rc), flush=True)
        if rc not in ok:
            with open(log, errors='replace') as f:
                tail = f.read()[-3000:]
            sys.exit('%s failed (rc %d, %s):\n%s' % (tool, rc, log, tail))
        return rc, sec, log


def by_agent(log, agent='nutchbench'):
    """Status counts of the crawler's requests (by user agent), robots.txt apart, and the
    set of page URLs it got a 200 or a 304 for."""
    pages, robots, urls = collections.Counter(), collections.Counter(), set()
    with open(log, 'rb') as f:
        for line in f:
            parts = line.decode('utf-8', 'replace').split('"')
            if len(parts) < 4 or agent not in parts[3]:
                continue
            addr, uri = parts[0].split()[1], parts[1]
            status = parts[2].split()[0]
            if uri == '/robots.txt':
                robots[status] += 1
            else:
                pages[status] += 1
                if status in ('200', '304'):
                    urls.add(addr + ' ' + uri)
    return dict(pages), dict(robots), urls


def readdb_stats(step, crawldb):
    """Status counts of the crawldb (readdb -stats; its seconds are not counted). Local
    mode logs them to the step's output or to NUTCH_LOG_DIR/hadoop.log: the last report."""
    _, _, log = step('readdb', crawldb, '-stats')
    text = ''
    for path in (log, os.path.join(step.logs, 'hadoop.log')):
        try:
            with open(path, errors='replace') as f:
                t = f.read()
        except OSError:
            continue
        if 'TOTAL urls' in t:
            text = t[t.rfind('Statistics for CrawlDb'):]
            break
    out = {}
    for m in re.finditer(r'(TOTAL urls|status \d+ \(\w+\)):\s+(\d+)', text):
        out[m.group(1)] = int(m.group(2))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('point', choices=sorted(run.POINTS))
    p.add_argument('--change', type=float, default=0.01)
    p.add_argument('--threads', type=int, default=64)
    p.add_argument('--timeout', type=float, default=2400.0,
                   help='Seconds the whole run may take. Default: %(default)s')
    args = p.parse_args(argv)
    deadline = time.monotonic() + args.timeout
    if not os.access(os.path.join(NUTCH_RT, 'bin', 'nutch'), os.X_OK):
        sys.exit('no %s/bin/nutch: run bash bench/nutch/setup.sh' % NUTCH_RT)
    point = run.POINTS[args.point]
    web = os.path.join(run.WORK, 'web-%s-nutch-refresh' % args.point)
    crawl = os.path.join(run.WORK, 'out-refresh-nutch-%s' % args.point)
    for d in (web, crawl):
        shutil.rmtree(d, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(BENCH, 'gen_web.py'), '--out', web,
                    '--hosts', str(point['hosts']), '--pages', str(point['pages']),
                    '--depth', str(point['depth']), '--port', str(PORT)], check=True,
                   stdout=subprocess.DEVNULL)
    os.makedirs(os.path.join(crawl, 'logs'))
    os.makedirs(os.path.join(run.WORK, 'logs'), exist_ok=True)
    step = Steps(crawl, os.path.join(crawl, 'logs'), deadline)
    D = settings(point['delay'], args.threads, crawl)
    crawldb, segments = os.path.join(crawl, 'crawldb'), os.path.join(crawl, 'segments')
    linkdb = os.path.join(crawl, 'linkdb')
    rounds = point['depth'] + 1
    result = {'point': args.point, 'params': point, 'change': args.change,
              'crawler': 'nutch 1.20 local', 'threads': args.threads,
              'rounds_first': rounds, 'refresh_generate_adddays': ADDDAYS, 'index': None,
              'started': time.strftime('%Y-%m-%dT%H:%M:%S'),
              'load_avg_before': [round(x, 2) for x in os.getloadavg()]}
    cycles, first_urls = [], set()

    def one_round(extra):
        rc, sec, log = step('generate', *D, crawldb, segments, '-numFetchers', '1',
                            '-noFilter', *extra, ok=(0, 1))
        times = [('generate', sec)]
        if rc == 1:
            print('  nothing due', flush=True)
            return times, False
        seg = os.path.join(segments, sorted(os.listdir(segments))[-1])
        for tool, a in (('fetch', [seg, '-threads', str(args.threads)]), ('parse', [seg]),
                        ('updatedb', [crawldb, seg])):
            times.append((tool, step(tool, *D, *a)[1]))
        return times, seg

    for n in (1, 2):
        if n == 2:
            changed = subprocess.run(
                [sys.executable, os.path.join(BENCH, 'gen_web.py'), '--out', web,
                 '--change', str(args.change)], check=True, capture_output=True, text=True)
            result['changes'] = json.loads(changed.stdout)
        access = os.path.join(run.WORK, 'logs', 'refresh-nutch-%s-%d.access.log' %
                              (args.point, n))
        times, segs = [], []
        print('[cycle %d]' % n, flush=True)
        # A fresh nginx per cycle (refresh.py: open_file_cache keeps old metadata).
        with Nginx(web, os.path.join(run.WORK, 'nginx-nutch-refresh'), PORT, access):
            t = time.monotonic()
            if n == 1:
                times.append(('inject', step('inject', *D, crawldb,
                                             os.path.join(web, 'seeds.txt'))[1]))
                for r in range(rounds):
                    got, seg = one_round([])
                    times += got
                    if not seg:
                        break
                    segs.append(seg)
                times.append(('invertlinks', step('invertlinks', *D, linkdb, '-dir', segments,
                                                  '-noNormalize', '-nofilter')[1]))
            else:
                got, seg = one_round(['-adddays', str(ADDDAYS)])
                times += got
                if seg:
                    segs.append(seg)
                    times.append(('invertlinks', step('invertlinks', *D, linkdb, seg,
                                                      '-noNormalize', '-nofilter')[1]))
            times.append(('dedup', step('dedup', *D, crawldb, '-group', 'none')[1]))
            wall = time.monotonic() - t
        kinds = {}
        for k, s in times:
            kinds[k] = round(kinds.get(k, 0) + s, 3)
        fetch = round(sum(kinds.get(k, 0) for k in FETCH_KINDS), 3)
        rest = round(sum(kinds.get(k, 0) for k in NON_FETCH_KINDS), 3)
        pages, robots, urls = by_agent(access)
        c = {'cycle': n, 'wall_seconds': round(wall, 3), 'fetch_seconds': fetch,
             'non_fetch_seconds': rest, 'seconds_by_kind': kinds,
             'steps': [[k, s] for k, s in times], 'segments': len(segs),
             'http_statuses': refresh.statuses(access),
             'nutch_page_statuses': pages, 'nutch_robots_statuses': robots,
             'pages_fetched': sum(pages.get(s, 0) for s in ('200', '304')),
             'crawldb': readdb_stats(step, crawldb)}
        if n == 1:
            first_urls = urls
        else:
            c['urls_not_fetched_in_first_crawl'] = len(urls - first_urls)
            c['first_crawl_urls_not_fetched_in_refresh'] = len(first_urls - urls)
        cycles.append(c)
        print(json.dumps({k: v for k, v in c.items() if k != 'steps'}), flush=True)
    result['cycles'] = cycles
    result['non_fetch_ratio'] = round(cycles[1]['non_fetch_seconds'] /
                                      cycles[0]['non_fetch_seconds'], 3)
    result['finished'] = time.strftime('%Y-%m-%dT%H:%M:%S')
    os.makedirs(run.RESULTS, exist_ok=True)
    with open(os.path.join(run.RESULTS, 'refresh-nutch-%s.json' % args.point), 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(json.dumps({k: result[k] for k in ('non_fetch_ratio', 'changes') if k in result}))


if __name__ == '__main__':
    main()
