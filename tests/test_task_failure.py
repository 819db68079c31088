"""A task process killed mid-run: the job fails cleanly and the rerun loses and repeats nothing.

mrjob's local runner does not retry tasks (Hadoop does: see tests/test_hadoop.py's
cluster, mapreduce.*.maxattempts); what matters here is that a killed attempt leaves
nothing behind: its step's output only ever lands in place by a rename after success,
so the rerun redoes the step from scratch.
"""
import pytest
import os
import signal
import subprocess
import sys
import time

from drivers.fixtures.site import FixtureSite
from tests.helpers import ROOT, TEST_SETTINGS, read_records
from tests.helpers import outcome
from drivers.runtime.launch import make_runner

pytestmark = pytest.mark.job


def crawl_cmd(seeds, out):
    args = [sys.executable, '-m', 'drivers.cli', 'crawl', '--seeds', str(seeds), '--depth',
            '2', '--out', str(out), '-r', 'local', '-q']
    # runner.inline_fetch_max_urls = 0: the fetch runs as task processes (the victims).
    for s in TEST_SETTINGS + ['politeness.delay=0.3', 'fetch.plan=false',
                              'runner.inline_fetch_max_urls=0']:
        args += ['--set', s]
    return args


def _ppid(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def task_pids(script, roles, ancestor):
    """PIDs of task processes running *script* with every word of *roles* on its command
    line (--mapper, --reducer, --step-num=N, ...) that descend from process *ancestor*
    (never another crawl's on this machine)."""
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        # A forked task (jobs.runners) names itself in its process title, one string;
        # a subprocess task has it as separate arguments.
        words = b' '.join(argv).split()
        if not (script.encode() in b' '.join(argv) and
                all(r.encode() in words for r in roles.split())):
            continue
        p = int(pid)
        while p and p != ancestor:
            p = _ppid(p)
        if p == ancestor:
            pids.append(int(pid))
    return pids


@pytest.mark.crawl
def test_killed_fetch_task_fails_the_step_and_rerun_is_exact(tmp_path):
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        ref = tmp_path / 'ref'
        subprocess.run(crawl_cmd(seeds, ref), cwd=ROOT, check=True, capture_output=True,
                       timeout=300)
        reference = outcome(str(ref), site.url(''))

    with FixtureSite() as site:
        seeds.write_text(site.url('/') + '\n')
        out = tmp_path / 'killed'
        proc = subprocess.Popen(crawl_cmd(seeds, out), cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # Layer 1's fetch task (MRFetch's map-only last step, run by the local runner
        # after the driver made its fetch lists: --step-range 1:): ten URLs of one host,
        # 0.3 s apart, so it runs ~3 s.
        deadline = time.monotonic() + 120
        killed = None
        while killed is None:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, 'no fetch task of layer 1 seen'
            if (out / 'steps' / 'fetch-000.json').exists():
                pids = task_pids('fetch.py', '--mapper 1:', proc.pid)
                if pids and len(site.requests) > 3:
                    os.kill(pids[0], signal.SIGKILL)
                    killed = pids[0]
            time.sleep(0.02)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 2, (stdout, stderr)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith('mrcrawl: step fetch-001 failed')
        assert not (out / 'out' / '001').exists()         # nothing half-written in place
        assert (out / 'out' / '000').exists()             # the completed layer is intact

        # The rerun redoes fetch-001 and ends exactly like the uninterrupted crawl.
        res = subprocess.run(crawl_cmd(seeds, out), cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert outcome(str(out), site.url('')) == reference
        for layer in ('000', '001', '002'):
            urls_in = [r['url'] for r in read_records(str(out / 'in' / layer))]
            pages = [d['url'] for d in read_records(str(out / 'out' / layer))]
            assert sorted(urls_in) == sorted(pages)         # none lost, none twice


def test_failed_shuffle_sort_fails_the_job_instead_of_sorting_in_memory(tmp_path):
    """mrjob's local runner falls back to sorting a reducer's whole input in the driver's
    memory when ``sort`` fails (a full disk did that to a soak crawl: 4.2 GB driver);
    mrcrawl's local runner fails the job with the sort's reason instead."""
    import json as _json

    import pytest

    from drivers.runtime.runners import local_runner_args
    from jobs.current import MRCurrent
    from drivers.runtime.runners import LocalRunner, SortFailed

    src = tmp_path / 'out'
    src.mkdir()
    page = {'kind': 'page', 'url': 'http://a.test/', 'final_url': 'http://a.test/',
            'status': 'fetched', 'links': [{'url': 'http://b.test/', 'text': 'b', 'rel': ''}]}
    (src / 'part-00000').write_text(_json.dumps(page) + '\n')

    def run(sort_bin, out):
        args = ['-r', 'local'] + local_runner_args() + ['--sort-bin', sort_bin, str(src),
                                                        '--output-dir', str(out)]
        job = MRCurrent(args=args)
        with make_runner(job) as runner:
            assert isinstance(runner, LocalRunner)
            runner.run()
            return [_json.loads(line) for line in b''.join(runner.cat_output()).splitlines()]

    # A sort that fails (as GNU sort does when its temporary files fill the disk).
    with pytest.raises(SortFailed, match='exit 2'):
        run("sh -c 'echo sort: write failed: No space left on device >&2; exit 2' --",
            tmp_path / 'bad')
    # The same job with a working sort: the URL's current fetch, the page itself.
    recs = run("sort -t '\t' -k 1,1 -s -S 16M", tmp_path / 'good')
    assert recs == [page]
