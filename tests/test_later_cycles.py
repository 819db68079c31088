"""Later cycles keep the crawl's settings; a setting is no evidence that a page is gone;
mrcrawl writes only into its own folders; a cycle that fetched nothing says why.

Every crawl here runs through the `mrcrawl` command's own entry point (drivers.cli.main.main)
against the fixture website on loopback, and is checked by the server's request log and
the crawl's outputs (issue 47).
"""
import pytest
import json
import os

from drivers.cli.main import main
from jobs.lib import config

pytestmark = pytest.mark.crawl

FAST = ['--set', 'politeness.delay=0.05', '--set', 'fetch.read_timeout=5',
        '--set', 'fetch.connect_timeout=2']
PRIVATE = ['--set', 'security.allow_private_networks=true']


def _seeds(site, tmp_path, path='/'):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text(site.url(path) + '\n')
    return str(seeds)


def _delta(out, build):
    """The delta records of *build*: {kind: [record]}."""
    folder = os.path.join(out, 'delta', build, 'records')
    found = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    found.setdefault(rec['kind'], []).append(rec)
    return found


def _report(out):
    with open(os.path.join(out, 'report.json'), encoding='utf-8') as f:
        return json.load(f)


def _pages_requested(site, since=0.0):
    return [r['path'] for r in site.requests if r['t'] >= since and r['path'] != '/robots.txt']


def test_a_recrawl_keeps_the_address_policy_and_deletes_nothing(site, tmp_path, capsys):
    """The data-loss report: a crawl of a local site allowed private addresses; a recrawl
    that does not repeat the setting must fetch again, and its delta delete nothing."""
    out = str(tmp_path / 'crawl')
    assert main(['crawl', '--seeds', _seeds(site, tmp_path), '--depth', '1', '--out', out,
                 '-r', 'inline', '-q'] + PRIVATE + FAST) == 0
    first = _report(out)
    pages = {p for p in _pages_requested(site)}
    capsys.readouterr()
    since = site.requests[-1]['t']
    assert main(['recrawl', '--out', out, '-r', 'inline', '-q',
                 '--set', 'recrawl.interval=0']) == 0
    printed = capsys.readouterr().out
    again = set(_pages_requested(site, since))
    assert again and again <= pages            # fetched again, from the server's log
    assert 'filtered_private_address' not in printed
    assert 'deletion' not in _delta(out, '002')
    report = _report(out)
    assert report['xml']['documents'] == first['xml']['documents'] > 0
    # The one setting given now is the one change, printed and recorded.
    assert 'setting changed since the last run: recrawl.interval: 604800.0 -> 0.0' in printed
    assert report['settings_changes'] == [
        {'key': 'recrawl.interval', 'from': 604800.0, 'to': 0.0}]
    assert report['cycles'][-1]['settings_changed'] == report['settings_changes']
    saved = json.loads(open(os.path.join(out, 'conf.json')).read())
    assert saved['security']['allow_private_networks'] is True


def test_a_setting_that_refuses_pages_keeps_them_unless_pruned(site, tmp_path, capsys):
    """Turning the address policy back on is a change, not evidence: the pages stay,
    counted, and the cycle that fetched nothing exits 3 naming the setting; --prune
    deletes them, once, and the next cycle does not inherit it."""
    out = str(tmp_path / 'crawl')
    assert main(['crawl', '--seeds', _seeds(site, tmp_path), '--depth', '1', '--out', out,
                 '-r', 'inline', '-q'] + PRIVATE + FAST) == 0
    docs = _report(out)['xml']['documents']
    capsys.readouterr()
    n = len(site.requests)
    refuse = ['--set', 'security.allow_private_networks=false', '--set', 'recrawl.interval=0']
    assert main(['recrawl', '--out', out, '-r', 'inline', '-q'] + refuse) == 3
    err = capsys.readouterr()
    assert len(site.requests) == n             # nothing was requested
    assert 'security.allow_private_networks: true -> false' in err.out
    assert 'no page was fetched' in err.err
    assert 'filtered_private_address: ' in err.err and \
        '--set security.allow_private_networks=true' in err.err
    assert 'pages kept though a setting refuses them now: ' in err.out
    assert 'deletion' not in _delta(out, '002')
    report = _report(out)
    kept = report['layers'][-1]['kept']
    assert kept > 0 and report['xml']['documents'] == docs
    counters = json.load(open(os.path.join(out, 'steps', 'optimize-%03d.json'
                                           % report['layers'][-1]['layer'])))['counters']
    assert counters['optimize']['refused_kept_total'] == kept
    # --prune: the refused pages go, with their reason, in this cycle's delta.
    assert main(['recrawl', '--out', out, '-r', 'inline', '-q', '--prune',
                 '--set', 'recrawl.interval=0']) == 3
    deleted = _delta(out, '003').get('deletion', [])
    assert {d['reason'] for d in deleted if d['reason'] != 'removed'} == {'filtered'}
    assert len([d for d in deleted if d['reason'] == 'filtered']) > 0
    saved = json.loads(open(os.path.join(out, 'conf.json')).read())
    assert saved['recrawl']['prune'] is True            # this run's
    conf, _ = config.carried(saved, per_run=('recrawl.prune',))
    assert conf['recrawl']['prune'] is False             # the next run's


def test_a_sites_crawl_keeps_its_site_rules_in_later_cycles(site, tmp_path, capsys):
    """The site's delay, deny rule and page cap hold in the second cycle, by the
    server's log, although the site file is gone: the crawl keeps its own copy."""
    sites = tmp_path / 'sites'
    sites.mkdir()
    (sites / 'fixture.toml').write_text(
        '[site]\nhosts = ["127.0.0.1"]\ndelay = 0.4\nmax_pages = 5\n'
        'entry = ["%s"]\n[links]\ndeny = ["/a\\\\.html"]\n' % site.url('/'))
    out = str(tmp_path / 'crawl')
    assert main(['crawl', '--sites', str(sites), '--depth', '2', '--out', out,
                 '-r', 'inline', '-q'] + PRIVATE + FAST) == 0
    (sites / 'fixture.toml').unlink()
    sites.rmdir()
    since = site.requests[-1]['t']
    capsys.readouterr()
    assert main(['recrawl', '--out', out, '-r', 'inline', '-q',
                 '--set', 'recrawl.interval=0']) == 0
    assert 'site ' not in capsys.readouterr().out       # no site change was printed
    second = [r for r in site.requests if r['t'] > since]
    assert _pages_requested(site, since), 'the second cycle fetched nothing'
    paths = set(_pages_requested(site))
    assert '/a.html' not in paths                         # the deny rule, both cycles
    assert len(paths) <= 5                                # max_pages, pages ever requested
    times = sorted(r['t'] for r in second)
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.4   # the site's delay
    saved = json.loads(open(os.path.join(out, 'conf.json')).read())
    assert [s['name'] for s in saved['sites']] == ['fixture']


@pytest.mark.unit
def test_changed_sites_and_new_keys_are_reported(tmp_path):
    """A later run names each changed setting and each site added, removed or changed;
    a key the saved settings lack takes its default, with a note."""
    from drivers.folder import settings
    old = config.load(overrides=['politeness.delay=2'])
    old['sites'] = [{'name': 'films', 'file': 'a', 'delay': 1.0, 'deny': []},
                    {'name': 'old', 'file': 'b'}]
    new = config.load(overrides=['politeness.delay=0.5'])
    new['sites'] = [{'name': 'films', 'file': 'c', 'delay': 1.0, 'deny': ['/login']},
                    {'name': 'docs', 'file': 'd'}]
    lines = [c.line() for c in settings.diff(old, new)]
    assert lines == ['politeness.delay: 2.0 -> 0.5', 'site docs added',
                     'site films changed (deny)', 'site old removed']
    del old['fetch']['threads']
    old['fetch']['gone_key'] = 1
    conf, notes = config.carried(old)
    assert conf['politeness']['delay'] == 2.0
    assert conf['fetch']['threads'] == config.load()['fetch']['threads']
    assert 'fetch.gone_key is no longer a setting: left out' in notes
    assert any(n.startswith('fetch.threads is new') for n in notes)


def test_out_on_a_folder_that_is_not_a_crawl_is_refused_untouched(site, tmp_path, capsys):
    """A user's folder (their own xml/ and report.json) is never written into."""
    mine = tmp_path / 'mine'
    (mine / 'xml').mkdir(parents=True)
    (mine / 'xml' / 'doc.xml').write_text('<mine/>')
    (mine / 'report.json').write_text('{"mine": true}')

    def tree():
        return sorted((os.path.relpath(os.path.join(d, f), mine),
                       open(os.path.join(d, f)).read(), os.stat(os.path.join(d, f)).st_mtime)
                      for d, _, files in os.walk(mine) for f in files) + \
            sorted(os.path.relpath(d, mine) for d, _, _ in os.walk(mine))
    before = tree()
    for argv in (['crawl', '--seeds', _seeds(site, tmp_path), '--depth', '0'],
                 ['recrawl'], ['reparse']):
        target = [str(mine)] if argv == ['reparse'] else ['--out', str(mine)]
        assert main(argv + target + ['-r', 'inline', '-q'] + PRIVATE) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and 'not a crawl folder' in err[0], err
        assert tree() == before
    assert site.requests == []
    # An empty folder is a new crawl; rerunning on it is a later cycle.
    empty = tmp_path / 'empty'
    empty.mkdir()
    assert main(['crawl', '--seeds', _seeds(site, tmp_path), '--depth', '0', '--out',
                 str(empty), '-r', 'inline', '-q'] + PRIVATE + FAST) == 0
    assert (empty / '.mrcrawl').exists()


def test_a_crawl_that_fetches_nothing_says_why_and_fails(site, tmp_path, capsys):
    """Every seed refused as a private address: exit 3, the reason and the setting."""
    out = str(tmp_path / 'crawl')
    assert main(['crawl', '--seeds', _seeds(site, tmp_path), '--depth', '1', '--out', out,
                 '-r', 'inline', '-q'] + FAST) == 3
    err = capsys.readouterr().err
    assert 'no page was fetched: 1 URL(s) tried' in err
    assert '1 filtered_private_address: ' in err
    assert 'security.allow_private_networks=true' in err
    assert site.requests == []


def test_a_new_site_rule_keeps_the_pages_it_refuses_unless_pruned(site, tmp_path, capsys):
    """A deny rule added to a site file later: printed as the site's change; the page
    it refuses is not requested again, stays in the index, and goes only with --prune."""
    sites = tmp_path / 'sites'
    sites.mkdir()
    rule = '[site]\nhosts = ["127.0.0.1"]\nentry = ["%s"]\n' % site.url('/')
    (sites / 'fixture.toml').write_text(rule)
    out = str(tmp_path / 'crawl')
    assert main(['crawl', '--sites', str(sites), '--depth', '1', '--out', out,
                 '-r', 'inline', '-q'] + PRIVATE + FAST) == 0
    assert '/a.html' in _pages_requested(site)
    (sites / 'fixture.toml').write_text(rule + '[links]\ndeny = ["/a\\\\.html"]\n')
    since = site.requests[-1]['t']
    capsys.readouterr()
    assert main(['crawl', '--sites', str(sites), '--depth', '1', '--out', out,
                 '-r', 'inline', '-q', '--set', 'recrawl.interval=0']) == 0
    assert 'setting changed since the last run: site fixture changed (deny)' in \
        capsys.readouterr().out
    assert _pages_requested(site, since) and '/a.html' not in _pages_requested(site, since)
    assert 'deletion' not in _delta(out, '002')
    fetch = json.load(open(os.path.join(out, 'steps', 'fetch-%03d.json' % _report(
        out)['layers'][-1]['layer'])))['counters']['fetch']
    assert fetch['refused_kept_filter_site_rule_total'] == 1
    assert main(['recrawl', '--out', out, '-r', 'inline', '-q', '--prune',
                 '--set', 'recrawl.interval=0']) == 0
    deleted = {d['url']: d['reason'] for d in _delta(out, '003').get('deletion', [])}
    assert deleted.get(site.url('/a.html')) == 'filtered'


def test_a_sites_crawl_keeps_its_hourly_quota_in_later_cycles(site, tmp_path):
    """The site's quota_per_hour counts across cycles: spent by the first cycle, it
    holds the second back in the same hour (by the server's log), site file gone."""
    sites = tmp_path / 'sites'
    sites.mkdir()
    (sites / 'fixture.toml').write_text(
        '[site]\nhosts = ["127.0.0.1"]\nquota_per_hour = 3\nentry = ["%s"]\n' % site.url('/'))
    out = str(tmp_path / 'crawl')
    assert main(['crawl', '--sites', str(sites), '--depth', '2', '--out', out,
                 '-r', 'inline', '-q'] + PRIVATE + FAST) == 0
    assert len(_pages_requested(site)) == 3
    (sites / 'fixture.toml').unlink()
    n = len(site.requests)
    assert main(['recrawl', '--out', out, '-r', 'inline', '-q',
                 '--set', 'recrawl.interval=0']) == 0
    assert site.requests[n:] == []
    generate = json.load(open(os.path.join(out, 'steps', 'generate-%03d.json' % (
        _report(out)['cycles'][-1]['first_layer']))))['counters']['generate']
    assert generate['site_quota_hour_total'] >= 3


@pytest.mark.unit
def test_an_hdfs_folder_whose_namenode_does_not_answer_is_one_line(tmp_path, capsys,
                                                                   monkeypatch):
    """The folder check reads the output folder first: on an HDFS nobody answers (a
    closed port on loopback), one line and exit 2, not a traceback."""
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]        # closed once the block ends: refused
    monkeypatch.setenv('MRCRAWL_WEBHDFS_URL', 'http://127.0.0.1:%d' % port)
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('http://127.0.0.1:1/\n')
    assert main(['crawl', '--seeds', str(seeds), '--depth', '0', '--out', 'hdfs:///c',
                 '-r', 'inline']) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith('mrcrawl: cannot read the output folder '
                                               'hdfs:///c: '), err
