"""The mrcrawl command as a user meets it: errors are one line and exit status 2."""
import os
import subprocess
import sys

from tests.conftest import ROOT


def mrcrawl(*args, cwd=None):
    return subprocess.run([sys.executable, '-m', 'drivers.cli'] + list(args), cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=120)


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
    assert res.returncode == 0, res.stderr
    assert site.requests == []
    assert 'filtered_private_address=1' in res.stdout
