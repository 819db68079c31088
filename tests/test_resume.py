"""Crash safety: kill the driver at several points, rerun, compare with an uninterrupted run."""
import pytest
import json
import os
import signal
import subprocess
import sys
import time

from tests.helpers import ROOT, TEST_SETTINGS, outcome
from drivers.fixtures.site import FixtureSite

pytestmark = pytest.mark.crawl


def start_crawl(seeds, out, quiet=True):
    args = [sys.executable, '-m', 'drivers.cli', 'crawl', '--seeds', str(seeds), '--depth',
            '3', '--out', str(out), '-r', 'inline'] + (['-q'] if quiet else [])
    for s in TEST_SETTINGS:
        args += ['--set', s]
    args += ['--set', 'politeness.delay=0.02']
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def completed(out):
    """The last step whose output is in place, from OUT/state.json (None before)."""
    try:
        return json.loads((out / 'state.json').read_text())['last_completed_step']
    except (OSError, ValueError):
        return None


def run_to_end(seeds, out, quiet=True):
    proc = start_crawl(seeds, out, quiet)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    return stdout


def test_killed_driver_resumes_to_the_same_result(tmp_path):
    # Reference: one uninterrupted crawl.
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        run_to_end(seeds, tmp_path / 'ref')
        reference = outcome(str(tmp_path / 'ref'), site.url(''))

    # The same crawl, SIGKILLed as soon as each of these steps has finished, then resumed.
    with FixtureSite() as site:
        seeds.write_text(site.url('/') + '\n')
        out = tmp_path / 'killed'
        kills = 0
        for marker in ('fetch-000', 'fetch-001', 'generate-002', 'optimize-003'):
            proc = start_crawl(seeds, out)
            deadline = time.monotonic() + 60
            # state.json names a step once its output is in place (its counters are
            # saved just before: a kill between the two redoes the step).
            while completed(out) != marker:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
        steps_before = {n: os.stat(out / 'steps' / n).st_mtime_ns
                        for n in os.listdir(out / 'steps')}
        stdout = run_to_end(seeds, out, quiet=False)
        assert kills == 4
        # The last run redid no finished step (not even an optimize whose crawl database
        # version was pruned since), and said so rather than reprinting it as run.
        assert {n: os.stat(out / 'steps' / n).st_mtime_ns for n in steps_before} == \
            steps_before
        for layer in ('000', '001', '002'):
            assert 'layer %s: done in an earlier run' % layer in stdout, stdout
        assert outcome(str(out), site.url('')) == reference
        # Completed steps were never redone: each page was requested at most twice
        # (once more only if the kill hit the fetch step that was running).
        pages = [p for p in site.paths() if p != '/robots.txt']
        refetched = {p for p in pages if pages.count(p) > 1}
        assert len(refetched) <= 3, refetched


def test_stop_file_stops_after_the_current_step_and_rerun_continues(tmp_path):
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        out = tmp_path / 'crawl'
        os.makedirs(out)
        (out / 'STOP').write_text('')
        stdout = run_to_end(seeds, out)
        assert 'stopped by the STOP file' in stdout
        steps = sorted(os.listdir(out / 'steps'))
        assert len(steps) == 2 and 'inject.json' in steps   # inject + the first job
        assert not (out / 'STOP').exists()
        run_to_end(seeds, out)
        assert os.path.exists(out / 'xml')
        pages = [p for p in site.paths() if p != '/robots.txt']
        assert len(pages) == len(set(pages))
