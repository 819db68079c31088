"""Do two versions of mrcrawl make the same crawl? (issue 49: a redesign keeps the
outputs of a fixture crawl, a refresh and a deepen byte for byte, times aside.)

    .venv/bin/python bench/same_outputs.py [--before REV] [--after REV|worktree]

Serves the fixture website once (drivers/fixtures/site.py, one address for both) and
runs the same three cycles with each version's ``mrcrawl`` (``python -m drivers.cli``
from a ``git archive`` export, as bench/run.py does): a crawl at depth 2, a refresh
after two pages changed, one went away and one appeared (``recrawl --at`` a month
later), and a deepen to depth 3. Then it compares every dataset under OUT: the set of
lines of its part files (the order of lines and files is the runners' business), each
line with its ISO-8601 times, durations and host:port replaced; Parquet datasets as
rows. Files that hold only times or the run's bookkeeping (steps/, report.*,
state.json, status.json, cycles, tmp/) are listed, not compared. Exit status 1 if any dataset
differs, with what differs.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path[:0] = [ROOT, BENCH]

from sources import mrcrawl_source  # noqa: E402
from drivers.fixtures.site import FixtureSite, html_page, link_list  # noqa: E402

#: Bookkeeping of a run, not its outputs: times, seconds, the runner's choices.
NOT_COMPARED = ('steps', 'tmp', 'cycles', 'report.json', 'report.html', 'state.json',
                'status.json', 'lock.json', 'reparse.json')
TIME = re.compile(rb'\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?')
#: Values that follow from times: durations, clock readings, and what a WARC record's
#: gzip member holds (its WARC-Date): its length, and so the offsets after it; the
#: digest of a page's merge_map record, which names its fetch time; where a merged record
#: starts and ends in its part file (the records before it hold times).
FROM_TIMES = re.compile(rb'"(seconds|elapsed|ended_at|started_at|fetched_at|'
                        rb'warc_record_offset|warc_record_length|map)": ?("[0-9a-f]+"|[0-9.eE+-]+)'
                        rb'|"(at)":\["([^"]+)",\d+,\d+\]')
SETTINGS = ['security.allow_private_networks=true', 'politeness.delay=0.05',
            'fetch.follow_hops=0', 'fetch.read_timeout=5', 'fetch.connect_timeout=2']


def run_cycles(src, site, out):
    """The three cycles with the mrcrawl at *src* (None: this work tree) into *out*."""
    env = dict(os.environ, PYTHONPATH=src or ROOT)
    sets = [a for s in SETTINGS for a in ('--set', s)]
    seeds = os.path.join(os.path.dirname(out), 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write(site.url('/') + '\n')

    def mrcrawl(*args):
        subprocess.run([sys.executable, '-m', 'drivers.cli'] + list(args) + sets + ['-q'],
                       cwd=src or ROOT, env=env, check=True, stdout=subprocess.DEVNULL)

    site.overrides.clear()
    mrcrawl('crawl', '--seeds', seeds, '--depth', '2', '--out', out, '-r', 'local',
            '--at', '2026-12-01T00:00:00Z')
    site.overrides['/a.html'] = html_page('Page A, new edition', '<p>changed</p>' +
                                          link_list('/new.html'))
    site.overrides['/b.html'] = html_page('Page B, new edition', '<p>changed too</p>')
    site.overrides['/new.html'] = html_page('A new page', '<p>new</p>')
    site.overrides['/a/1.html'] = None
    mrcrawl('recrawl', '--out', out, '-r', 'local', '--at', '2027-01-01T00:00:00Z')
    mrcrawl('crawl', '--seeds', seeds, '--depth', '3', '--out', out, '-r', 'local',
            '--at', '2027-01-02T00:00:00Z')


def normal(line, address):
    line = TIME.sub(b'TIME', line.rstrip(b'\n'))
    return FROM_TIMES.sub(lambda m: b'"%s": T' % (m.group(1) or m.group(3) + b' ' + m.group(4)),
                          line).replace(address, b'HOST')


def datasets(out, address):
    """{relative folder: sorted normalised lines or Parquet rows} of every dataset
    under *out*, and [relative paths not compared]."""
    found, skipped = {}, []
    for folder, subdirs, files in os.walk(out):
        rel = os.path.relpath(folder, out)
        if rel.split(os.sep)[0] in NOT_COMPARED:
            skipped.append(rel)
            subdirs[:] = []
            continue
        lines = []
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name in NOT_COMPARED or name.startswith('.') or name.endswith('.crc'):
                skipped.append(os.path.join(rel, name))
            elif name.endswith('.parquet'):
                lines += parquet_rows(path, address)
            elif name.endswith(('.warc.gz', '.png', '.jpg')):
                skipped.append(os.path.join(rel, name))
            else:
                with open(path, 'rb') as f:
                    lines += [normal(line, address) for line in f]
        if files:
            found[rel] = sorted(lines)
    return found, sorted(skipped)


def parquet_rows(path, address):
    import pyarrow.parquet as pq     # lazy: only when a dataset holds Parquet
    return [normal(json.dumps(row, sort_keys=True, default=str).encode(), address)
            for row in pq.read_table(path).to_pylist()]


def compare(before, after):
    """[(dataset, what differs)] between two {dataset: lines}."""
    out = []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            out.append((name, 'only in the %s run' % ('after' if name in after else 'before')))
        elif before[name] != after[name]:
            a, b = set(before[name]), set(after[name])
            out.append((name, '%d lines only before, %d only after; e.g. before %r, after %r'
                        % (len(a - b), len(b - a), sorted(a - b)[:1], sorted(b - a)[:1])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--before', default='HEAD~1', help='a commit (default: %(default)s)')
    ap.add_argument('--after', default='worktree', help='a commit or "worktree" (default)')
    ap.add_argument('--keep', help='leave both crawls in this folder')
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix='mrcrawl-same-')
    results = {}
    with FixtureSite() as site:
        address = site.url('/').split('//', 1)[1].rstrip('/').encode()
        for label, rev in (('before', args.before), ('after', args.after)):
            src, what = mrcrawl_source(rev)
            out = os.path.join(work, label, 'crawl')
            shutil.rmtree(os.path.dirname(out), ignore_errors=True)
            os.makedirs(os.path.dirname(out))
            print('%s: %s' % (label, what), flush=True)
            run_cycles(src, site, out)
            results[label] = datasets(out, address)
    (before, skipped), (after, _) = results['before'], results['after']
    print('compared %d datasets (%d lines); not compared: %s' % (
        len(before), sum(map(len, before.values())), ', '.join(skipped)))
    diffs = compare(before, after)
    for name, what in diffs:
        print('DIFFERS %s: %s' % (name, what))
    if not args.keep:
        shutil.rmtree(work)
    print('same outputs' if not diffs else '%d dataset(s) differ' % len(diffs))
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main())
