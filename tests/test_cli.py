"""The mrcrawl command as a user meets it: errors are one line and exit status 2."""
import pytest
import json
import os
import signal
import subprocess
import sys
import time

from tests.helpers import ROOT, mrcrawl

pytestmark = pytest.mark.crawl


def test_help_documents_every_option():
    res = mrcrawl('crawl', '--help')
    assert res.returncode == 0
    for opt in ('--seeds', '--depth', '--out', '--runner', '--conf', '--set'):
        assert opt in res.stdout


def test_missing_seeds_file_is_one_line_and_status_2(tmp_path):
    res = mrcrawl('crawl', '--seeds', str(tmp_path / 'nope.txt'), '--depth', '1',
                  '--out', str(tmp_path / 'out'), '-r', 'inline')
    assert res.returncode == 2
    assert 'Traceback' not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and 'cannot read seeds file' in lines[0]
    assert not (tmp_path / 'out').exists()          # a failed start leaves no folder
    (tmp_path / 'empty.txt').write_text('# nothing\n')
    for seeds, why in ((tmp_path / 'empty.txt', 'no valid seed URL'),
                       (tmp_path, 'cannot read seeds file')):
        res = mrcrawl('crawl', '--seeds', str(seeds), '--depth', '1',
                      '--out', str(tmp_path / 'out'), '-r', 'inline')
        assert res.returncode == 2 and why in res.stderr.strip().splitlines()[-1]
        assert not (tmp_path / 'out').exists()


def test_demo_replaces_only_its_own_folder(tmp_path):
    """mrcrawl demo --out DIR deletes DIR only when a demo made it: a folder with
    anything else in it is left alone (one line, status 2); the demo's own last crawl
    is replaced."""
    mine = tmp_path / 'work'
    mine.mkdir()
    (mine / 'notes.txt').write_text('keep me')
    res = mrcrawl('demo', '--depth', '0', '--out', str(mine), '-r', 'inline')
    assert res.returncode == 2 and 'Traceback' not in res.stderr
    assert 'is not a demo crawl' in res.stderr.strip().splitlines()[0]
    assert (mine / 'notes.txt').read_text() == 'keep me'
    demo = tmp_path / 'demo'
    for _ in range(2):
        res = mrcrawl('demo', '--depth', '0', '--out', str(demo), '-r', 'inline')
        assert res.returncode == 0, res.stderr
        assert (demo / 'xml').is_dir() and (demo / '.mrcrawl-demo').exists()
    assert len(json.loads((demo / 'report.json').read_text())['cycles']) == 1


def test_unwritable_out_is_one_line_and_status_2(tmp_path):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('http://127.0.0.1:9/\n')
    blocker = tmp_path / 'file'
    blocker.write_text('not a folder')
    res = mrcrawl('crawl', '--seeds', str(seeds), '--depth', '1',
                  '--out', str(blocker / 'out'), '-r', 'inline')
    assert res.returncode == 2
    assert 'Traceback' not in res.stderr
    assert 'cannot write the crawl output folder' in res.stderr.strip().splitlines()[0]


def test_bad_setting_names_the_key(tmp_path):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('http://127.0.0.1:9/\n')
    res = mrcrawl('crawl', '--seeds', str(seeds), '--depth', '1', '--out',
                  str(tmp_path / 'out'), '--set', 'politeness.nosuch=1')
    assert res.returncode == 2
    assert 'politeness.nosuch' in res.stderr and 'Traceback' not in res.stderr


def test_bad_seed_lines_are_reported_and_good_ones_crawled(site, tmp_path):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('# comment\n\nrelative.html\nftp://x/y\njavascript:void(0)\n%s\n'
                     % site.url('/a/2.html'))
    out = tmp_path / 'out'
    res = mrcrawl('crawl', '--seeds', str(seeds), '--depth', '0', '--out', str(out),
                  '-r', 'inline', '--set', 'security.allow_private_networks=true',
                  '--set', 'politeness.delay=0')
    assert res.returncode == 0, res.stderr
    assert 'seeds: 3 bad line(s) skipped: not_absolute_url=1, not_http=2' in res.stdout
    assert site.paths() == ['/robots.txt', '/a/2.html']
    assert os.path.exists(out / 'report.json')


def test_private_addresses_are_refused_by_default(site, tmp_path):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text(site.url('/') + '\n')
    res = mrcrawl('crawl', '--seeds', str(seeds), '--depth', '0', '--out',
                  str(tmp_path / 'out'), '-r', 'inline')
    # A crawl that fetched nothing fails (exit 3), saying why and what to set.
    assert res.returncode == 3, res.stderr
    assert site.requests == []
    assert 'filtered_private_address=1' in res.stdout
    assert '1 filtered_private_address: ' in res.stderr and \
        '--set security.allow_private_networks=true' in res.stderr


def test_ctrl_c_prints_one_line_and_leaves_no_temporary_folders(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) in the middle
    of a local-runner crawl: one line saying how to continue, exit status 130, no
    traceback, and nothing left in the temporary folder (mrjob's, the tasks')."""
    tmp = tmp_path / 'tmp'
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'drivers.cli', 'demo', '--depth', '3', '--out',
         str(tmp_path / 'demo'), '-r', 'local'], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env=dict(os.environ, TMPDIR=str(tmp)))
    try:
        deadline = time.monotonic() + 120
        for line in proc.stdout:          # interrupt once layer 1 is under way
            if 'layer 001' in line or time.monotonic() > deadline:
                break
        time.sleep(0.1)     # its fetch (0.05 s between requests) has started
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert 'Traceback' not in err
    assert err.strip().splitlines()[-1] == \
        'mrcrawl: interrupted; run the same command again to continue'
    assert os.listdir(tmp) == []


def test_a_crawl_starts_from_the_sites_entry_urls_alone(site, tmp_path):
    """`mrcrawl crawl --sites DIR` with no seeds file: the sites' [site] entry URLs are
    the seeds (depth 0); a crawl with neither is one clear error."""
    sites = tmp_path / 'sites'
    sites.mkdir()
    (sites / 'fixture.toml').write_text(
        '[site]\nname = "fixture"\nhosts = ["127.0.0.1"]\nentry = ["%s", "%s"]\n' % (
            site.url('/a.html'), site.url('/b.html')))
    out = str(tmp_path / 'out')
    sets = []
    for s in ('security.allow_private_networks=true', 'politeness.delay=0.05'):
        sets += ['--set', s]
    res = mrcrawl('crawl', '--sites', str(sites), '--depth', '0', '--out', out,
                  '-r', 'inline', *sets)
    assert res.returncode == 0, res.stderr[-2000:]
    paths = [r['path'] for r in site.requests if r['path'] != '/robots.txt']
    assert sorted(paths) == ['/a.html', '/b.html']
    report = json.load(open(os.path.join(out, 'report.json')))
    assert report['seeds']['site_entries'] == 2 and report['seeds']['good'] == 2
    empty = tmp_path / 'empty'
    empty.mkdir()
    res = mrcrawl('crawl', '--sites', str(empty), '--depth', '0',
                  '--out', str(tmp_path / 'out2'), '-r', 'inline')
    assert res.returncode == 2 and 'Traceback' not in res.stderr
    assert 'holds no crawl yet: give --seeds, or sites with entry URLs' in res.stderr
    assert not os.path.exists(tmp_path / 'out2')
    # An entry URL of another site is refused where it is written.
    (empty / 'bad.toml').write_text('[site]\nhosts = ["a.example"]\nentry = ["http://b.example/"]\n')
    res = mrcrawl('crawl', '--sites', str(empty), '--depth', '0',
                  '--out', str(tmp_path / 'out3'), '-r', 'inline')
    assert res.returncode == 2 and 'bad.toml: site.entry' in res.stderr
    assert 'not a page of this site' in res.stderr
