"""Disk used by the merge: the six-step MRMerge of d2cde7f against MRMerge + MRMergeJoin.

    PYTHONPATH=$PWD .venv/bin/python bench/merge_disk.py [--pages 5000] [--only old|new]

Writes N synthetic page records in two layer folders (out/000, out/001) with realistic
sizes (~20 KB text: ~12 KB of a per-host boilerplate plus ~8 KB of main text; 50 links
of anchor text each), 10% exact copies of another page (same digest, other URL), 10%
near copies (a few words of the main text changed), 5% refetched in the second layer,
and the anchors/ records those links make. Each merge runs on the local runner with
the crawl's options (drivers.crawl.local_runner_args()) and ``--local-tmp-dir`` (and
TMPDIR, so GNU sort's spill files count too) under one folder whose size ``du -sb``
polls every 0.5 s: the peak is the disk the merge needs besides its input and output.
The old job is ``git show d2cde7f:jobs/merge.py`` saved to a temporary module. Both
outputs are compared record by record (the new one's extra ``resources`` field aside).
Results go to bench/results/merge_disk.json.
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ['PYTHONPATH'] = os.pathsep.join(
    [ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p])

from drivers.crawl import local_runner_args  # noqa: E402
from jobs.lib import config  # noqa: E402
from jobs.merge import MRMerge  # noqa: E402
from jobs.merge_join import MRMergeJoin  # noqa: E402
from drivers.runtime.launch import make_runner  # noqa: E402

OLD_COMMIT = 'd2cde7f'
VOCAB = ['w%d' % i for i in range(5000)]
HOSTS = 50


def words(rng, n):
    return ' '.join(rng.choice(VOCAB) for _ in range(n))


def url(i):
    return 'http://h%d.example/articles/page-%d.html' % (i % HOSTS, i)


def write_inputs(where, n, rng):
    """out/000, out/001 and anchors/ under *where*; returns their sizes in bytes."""
    boiler = {h: words(rng, 1700) for h in range(HOSTS)}      # ~12 KB per host
    mains = {}
    inlinks = {}
    dirs = {d: os.path.join(where, d) for d in ('out/000', 'out/001', 'anchors')}
    for d in dirs.values():
        os.makedirs(d)
    files = {L: open(os.path.join(dirs['out/%03d' % L], 'part-00000'), 'w') for L in (0, 1)}
    for i in range(n):
        kind = rng.random()
        if i > 10 and kind < 0.10:                           # exact copy of an earlier page
            src = rng.randrange(i)
            main, digest = mains[src]
        elif i > 10 and kind < 0.20:                         # near copy: 3 words changed
            w = mains[rng.randrange(i)][0].split()
            for k in rng.sample(range(len(w)), 3):
                w[k] = 'changed%d' % rng.randrange(10 ** 6)
            main, digest = ' '.join(w), 'sha1:N%d' % i
        else:
            main, digest = words(rng, 1150), 'sha1:U%d' % i   # ~8 KB
        mains[i] = (main, digest)
        links = []
        for _ in range(50):
            j = rng.randrange(n)
            text = words(rng, 3)
            links.append({'url': url(j), 'text': text, 'rel': ''})
            inlinks.setdefault(url(j), set()).add((url(i), text))
        layer = 1 if rng.random() < 0.5 else 0
        for L in ((0, 1) if rng.random() < 0.05 else (layer,)):
            rec = {'kind': 'page', 'url': url(i), 'depth': L, 'layer': L,
                   'status': 'fetched', 'reason': None, 'http_status': 200,
                   'final_url': url(i), 'redirects': [], 'content_type': 'text/html',
                   'fetch_time': '2026-11-30T0%d:%02d:%02dZ' % (L, i % 60, i // 60 % 60),
                   'elapsed': 0.05, 'length': 40000, 'truncated': False, 'digest': digest,
                   'encoding': 'utf-8', 'headers': {'etag': '"%d"' % i}, 'attempts': 1,
                   'title': 'Page %d %s' % (i, words(rng, 5)),
                   'text': boiler[i % HOSTS] + ' ' + main, 'main_text': main,
                   'links': links, 'canonical': None, 'noindex': False, 'nofollow': False,
                   'site': None, 'fields': None, 'fields_checksum': None,
                   'refetch_interval': None, 'relevance': None, 'on_topic': None,
                   'link_depth_step': 1, 'description': words(rng, 20),
                   'headings': [{'level': 1, 'text': words(rng, 6)}], 'language': 'en'}
            files[L].write(json.dumps(rec) + '\n')
    for f in files.values():
        f.close()
    with open(os.path.join(dirs['anchors'], 'part-00000'), 'w') as f:
        for target, anchors in sorted(inlinks.items()):
            f.write(json.dumps({'kind': 'anchors', 'url': target, 'anchors': [
                {'from': a, 'text': t} for a, t in sorted(anchors)][:100]}) + '\n')
    return dirs, {d: du(p) for d, p in dirs.items()}


def du(path):
    out = subprocess.run(['du', '-sb', path], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out else 0


class PeakDisk:
    """Polls ``du -sb`` of a folder every 0.5 s in a thread; ``peak`` is the largest."""

    def __init__(self, path):
        self.path, self.peak, self._stop = path, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, du(self.path))
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_job(job_cls, conf_path, inputs, output, tmp):
    args = ['-r', 'local', '--crawl-conf', conf_path, '--output-dir', output,
            '--local-tmp-dir', tmp] + local_runner_args() + list(inputs)
    t0 = time.monotonic()
    with make_runner(job_cls(args=args)) as runner:
        runner.run()
        counters = runner.counters()
    return time.monotonic() - t0, counters


def read_dir(path):
    recs = {}
    for name in glob.glob(os.path.join(path, 'part-*')):
        for line in open(name):
            rec = json.loads(line)
            recs[rec['url']] = rec
    return recs


def old_job_class(where):
    src = subprocess.run(['git', '-C', ROOT, 'show', OLD_COMMIT + ':jobs/merge.py'],
                         capture_output=True, text=True, check=True).stdout
    mod_dir = os.path.join(where, 'oldjob')
    os.makedirs(mod_dir)
    with open(os.path.join(mod_dir, 'old_merge.py'), 'w') as f:
        f.write(src)
    sys.path.insert(0, mod_dir)
    import old_merge
    return old_merge.MRMerge


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--pages', type=int, default=5000)
    ap.add_argument('--only', choices=('old', 'new'))
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    where = tempfile.mkdtemp(prefix='mrcrawl-bench-merge-')
    try:
        conf_path = os.path.join(where, 'conf.json')
        with open(conf_path, 'w') as f:
            json.dump(config.load(), f)
        t0 = time.monotonic()
        dirs, sizes = write_inputs(where, args.pages, random.Random(args.seed))
        print('inputs: %s (%.1f s)' % (sizes, time.monotonic() - t0), flush=True)
        outs = [dirs['out/000'], dirs['out/001']]
        tmp = os.path.join(where, 'tmp')
        os.makedirs(tmp)
        os.environ['TMPDIR'] = tmp           # GNU sort's spill files, task temp files
        results = {'pages': args.pages, 'input_bytes': sizes,
                   'load_average_before': [round(x, 2) for x in os.getloadavg()],
                   'cpus': os.cpu_count(), 'runner': 'local'}
        if args.only != 'new':
            old_cls = old_job_class(where)
            with PeakDisk(tmp) as peak:
                secs, counters = run_job(old_cls, conf_path, outs + [dirs['anchors']],
                                         os.path.join(where, 'merged-old'), tmp)
            results['old'] = {'job': 'MRMerge at %s (6 steps)' % OLD_COMMIT,
                              'seconds': round(secs, 1), 'peak_tmp_bytes': peak.peak,
                              'output_bytes': du(os.path.join(where, 'merged-old'))}
            print('old:', results['old'], flush=True)
        if args.only != 'old':
            with PeakDisk(tmp) as peak:
                # MRMerge inverts the links itself (the old merge read anchors/)
                s1, _ = run_job(MRMerge, conf_path, outs, os.path.join(where, 'merge_map'),
                                tmp)
                s2, _ = run_job(MRMergeJoin, conf_path, [os.path.join(where, 'merge_map')] +
                                outs, os.path.join(where, 'merged-new'), tmp)
            results['new'] = {'job': 'MRMerge (7 steps, summaries) + MRMergeJoin (1 step)',
                              'seconds': round(s1 + s2, 1), 'group_seconds': round(s1, 1),
                              'join_seconds': round(s2, 1), 'peak_tmp_bytes': peak.peak,
                              'merge_map_bytes': du(os.path.join(where, 'merge_map')),
                              'output_bytes': du(os.path.join(where, 'merged-new'))}
            print('new:', results['new'], flush=True)
        if args.only is None:
            old, new = read_dir(os.path.join(where, 'merged-old')), read_dir(
                os.path.join(where, 'merged-new'))
            for rec in new.values():
                rec.pop('resources')
            results['merged_pages'] = len(new)
            results['identical_output'] = old == new
            results['differing_urls'] = sorted(u for u in set(old) | set(new)
                                               if old.get(u) != new.get(u))[:10]
            results['peak_ratio_old_to_new'] = round(
                results['old']['peak_tmp_bytes'] / max(1, results['new']['peak_tmp_bytes']), 1)
            print('merged pages %d, identical output: %s, peak old/new %.1fx' % (
                len(new), results['identical_output'], results['peak_ratio_old_to_new']))
            path = os.path.join(ROOT, 'bench', 'results', 'merge_disk.json')
            with open(path, 'w') as f:
                json.dump(results, f, indent=1, sort_keys=True)
            print('written', path)
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == '__main__':
    main()
