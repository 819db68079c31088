"""Per-site limits (jobs.lib.sitelimits) where a layer is chosen, and per-site delays."""
import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from jobs.generate import MRGenerate
from jobs.lib import sites
from jobs.lib.politeness import SiteDelays
from jobs.lib.sites import SiteConfigError
from tests.helpers import crawl_site, test_conf
from tests.helpers import run_job

pytestmark = pytest.mark.job

NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=timezone.utc)


def _iso(when):
    return when.strftime('%Y-%m-%dT%H:%M:%SZ')


def _site(path, body):
    path.write_text(body)
    return sites.load_file(str(path))


def _conf_file(tmp_path, site_body, *sets):
    conf = test_conf(*sets)
    conf['sites'] = [_site(tmp_path / 'films.toml', site_body)]
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(conf))
    return str(path)


def _db(url, status='unfetched', depth=1, ago=None, **kw):
    rec = {'kind': 'db', 'url': url, 'status': status, 'depth': depth, 'inlinks': 0,
           'last_fetch': None if ago is None else _iso(NOW - ago)}
    rec.update(kw)
    return rec


def _generate(conf_file, db, at=NOW):
    return run_job(MRGenerate, conf_file, db, '--max-depth', '3', '--recrawl-at', _iso(at))


@pytest.mark.unit
def test_site_limit_keys_are_checked_where_they_are_written(tmp_path):
    for body, msg in [('delay = -1', 'site.delay must be seconds'),
                      ('delay = "2"', 'site.delay must be seconds'),
                      ('max_pages = 1.5', 'site.max_pages must be a whole number'),
                      ('quota_per_hour = -3', 'site.quota_per_hour must be a whole number'),
                      ('quota_per_day = true', 'site.quota_per_day must be a whole number')]:
        with pytest.raises(SiteConfigError, match=msg):
            _site(tmp_path / 'bad.toml', '[site]\nhosts = ["a.example"]\n%s\n' % body)
    spec = _site(tmp_path / 'ok.toml', '[site]\nhosts = ["a.example"]\ndelay = 2\n'
                 'max_pages = 10\nquota_per_hour = 0\n')
    assert (spec['delay'], spec['max_pages'], spec['quota_per_hour']) == (2.0, 10, 0)
    assert 'quota_per_day' not in spec


def test_max_pages_holds_new_pages_back_and_still_refetches_known_ones(tmp_path):
    cf = _conf_file(tmp_path, '[site]\nhosts = ["films.example"]\nmax_pages = 4\n'
                    'refetch_interval = 3600\n', 'recrawl.interval=3600')
    db = ([_db('http://films.example/seen%d' % i, 'fetched', ago=timedelta(days=3))
           for i in range(3)] +
          [_db('http://films.example/new%d' % i, depth=1 + i) for i in range(3)] +
          [_db('http://other.example/%d' % i) for i in range(3)])
    out, counters = _generate(cf, db)
    got = sorted(r['url'] for r in out)
    # 3 of 4 pages requested: one new page (the shallowest), the 3 due known pages, and
    # every page of the unlimited site.
    assert got == ['http://films.example/new0'] + [
        'http://films.example/seen%d' % i for i in range(3)] + [
        'http://other.example/%d' % i for i in range(3)]
    g, s = counters['generate'], counters['site_limits']
    assert g['site_max_pages_total'] == 2
    assert (s['films.pages'], s['films.day'], s['films.held']) == (4, 4, 2)
    # Held back, they stay unfetched: once the site has room they come back.
    assert all(r['status'] == 'unfetched' for r in db if 'new' in r['url'])


def test_hourly_and_daily_quotas_count_requests_across_layers_and_cycles(tmp_path):
    cf = _conf_file(tmp_path, '[site]\nhosts = ["films.example", "*.films.example"]\n'
                    'quota_per_hour = 3\nquota_per_day = 5\n')
    db = ([_db('http://films.example/h%d' % i, 'fetched', ago=timedelta(minutes=10 + i))
           for i in range(2)] +       # 2 requests in the last hour, 3 in the last day
          [_db('http://films.example/d0', 'fetched', ago=timedelta(hours=5))] +
          [_db('http://films.example/old', 'fetched', ago=timedelta(days=2))] +
          [_db('http://a.films.example/%d' % i) for i in range(4)] +
          [_db('http://b.films.example/%d' % i) for i in range(4)])
    out, counters = _generate(cf, db)
    assert len(out) == 1                  # the hour allows 3 - 2
    assert counters['generate']['site_quota_hour_total'] == 7
    assert counters['site_limits']['films.hour'] == 3
    # Two hours on, the hour is free but the day (3 + 1 taken) allows 1 more.
    done = out[0]['url']
    for r in db:
        if r['url'] == done:
            r.update(status='fetched', last_fetch=_iso(NOW))
    out, counters = _generate(cf, db, NOW + timedelta(hours=2))
    assert len(out) == 1 and out[0]['url'] != done
    assert counters['generate']['site_quota_day_total'] == 6
    assert counters['site_limits']['films.day'] == 5
    # A day and more later the other candidates come back, 3 an hour.
    out, counters = _generate(cf, db, NOW + timedelta(days=2))
    assert len(out) == 3


def test_host_cap_applies_before_the_site_limits(tmp_path):
    cf = _conf_file(tmp_path, '[site]\nhosts = ["*.films.example"]\nmax_pages = 5\n',
                    'filter.max_urls_per_host=2', 'fetch.follow_hops=0')
    db = ([_db('http://a.films.example/%03d' % i) for i in range(200)] +
          [_db('http://b.films.example/%d' % i, depth=2) for i in range(3)])
    out, counters = _generate(cf, db)
    got = sorted(r['url'] for r in out)
    assert got == ['http://a.films.example/000', 'http://a.films.example/001',
                   'http://b.films.example/0', 'http://b.films.example/1']
    g = counters['generate']
    assert g['over_host_cap_total'] == 199
    assert g['generated_hosts_total'] == 2
    # Every candidate is either generated or counted by the limit or cap that held it.
    assert g['generated_total'] + g['over_host_cap_total'] + \
        g.get('site_max_pages_total', 0) == 203


@pytest.mark.unit
def test_a_site_delay_replaces_the_global_one_and_the_largest_wins_on_a_key():
    conf = test_conf('politeness.delay=1.0')
    conf['sites'] = [
        {'name': 'slow', 'hosts': ['slow.example'], 'urls': [], 'pages': [], 'follow': [],
         'deny': [], 'delay': 5.0},
        {'name': 'fast', 'hosts': ['fast.example'], 'urls': [], 'pages': [],
         'follow': [], 'deny': [], 'delay': 0.2}]
    d = SiteDelays(conf)
    assert d('http://fast.example/') == 0.2 and d('http://other.example/') == 1.0
    assert d.of_key(['http://fast.example/a', 'http://fast.example/b']) == 0.2
    assert d.of_key(['http://fast.example/a', 'http://slow.example/b']) == 5.0
    assert d.of_key(['http://fast.example/a', 'http://other.example/b']) == 1.0


@pytest.mark.crawl
def test_a_crawl_keeps_a_sites_delay_and_page_cap(site, tmp_path):
    """On the fixture site: the site's delay (not the global one) between requests, in
    the server's log, and no more pages than max_pages however deep the crawl goes."""
    conf = test_conf('politeness.delay=0.01')
    conf['sites'] = [_site(tmp_path / 'fixture.toml',
                           '[site]\nhosts = ["127.0.0.1"]\ndelay = 0.3\nmax_pages = 6\n')]
    out, report = crawl_site(site, tmp_path, conf, depth=3)
    pages = [r for r in site.requests if r['path'] != '/robots.txt']
    assert len(pages) == 6
    times = sorted(r['t'] for r in site.requests)
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.3
    held = [row.get('held_back', {}).get('site_max_pages', 0) for row in report['layers']]
    assert sum(held) > 0
    limits = [(row['site_limits'], n) for row, n in zip(report['layers'], held)
              if 'site_limits' in row]
    assert limits[-1][0]['fixture.pages'] == 6
    assert limits[-1][0]['fixture.held'] == limits[-1][1]
    page = open(os.path.join(out, 'report.html'), encoding='utf-8').read()
    assert '<h2>Harvest</h2>' in page and '<h3>Per-site limits</h3>' in page
    assert '<td class="l">fixture</td><td>6 / 6</td>' in page
    assert 'site_max_pages %d' % next(n for n in held if n) in page
    # Each fetch task's record: what it fetched, in how long (report.html's task table).
    from drivers.runtime.fs import for_path
    from drivers.reports.harvest import scan_tasks
    tasks = scan_tasks(for_path(out), out)
    assert sorted(tasks) == [row['layer'] for row in report['layers']]
    for row in report['layers']:
        recs = tasks[row['layer']]
        assert sum(r['urls'] for r in recs) == row['urls_in']
        assert sum(r['fetched'] for r in recs) == row['fetched']
        assert all(r['seconds'] > 0 and r['node'] for r in recs)
    assert '<h3>Fetch tasks</h3>' in page


@pytest.mark.crawl
def test_a_site_delay_never_goes_below_robots_crawl_delay(tmp_path):
    """A site asks for 0.05 s, its robots.txt for Crawl-delay: 0.3: the server's log
    shows 0.3 s between requests from the robots.txt request on."""
    from drivers.fixtures.site import FixtureSite
    with FixtureSite('127.0.0.6', robots=b'User-agent: *\nCrawl-delay: 0.3\n') as s:
        conf = test_conf('politeness.delay=1.0')
        conf['sites'] = [_site(tmp_path / 'fast.toml',
                               '[site]\nhosts = ["127.0.0.6"]\ndelay = 0.05\n')]
        crawl_site(s, tmp_path, conf, depth=1)
        times = [r['t'] for r in s.requests]
    assert len(times) > 5
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= 0.3
    assert sorted(gaps)[len(gaps) // 2] < 1.0      # the site's delay, not the global one


def test_a_page_belongs_to_the_first_site_that_matches_it(tmp_path):
    """An earlier site without limits or delay owns its pages: a later limited site
    that also matches them neither holds them back nor slows them down."""
    conf = test_conf('politeness.delay=1.0')
    conf['sites'] = [_site(tmp_path / 'a.toml', '[site]\nname = "docs"\nurls = ["/docs/"]\n'),
                     _site(tmp_path / 'b.toml', '[site]\nname = "all"\nhosts = ["h.example"]\n'
                           'max_pages = 1\ndelay = 5\n')]
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(conf))
    db = [_db('http://h.example/docs/%d' % i) for i in range(3)] + \
        [_db('http://h.example/other/%d' % i) for i in range(3)]
    out, counters = _generate(str(path), db)
    got = sorted(r['url'] for r in out)
    assert got == ['http://h.example/docs/%d' % i for i in range(3)] + [
        'http://h.example/other/0']
    assert counters['generate']['site_max_pages_total'] == 2
    d = SiteDelays(conf)
    assert d('http://h.example/docs/1') == 1.0 and d('http://h.example/other/1') == 5.0


def test_the_host_cap_counts_first_and_unlimited_due_pages_stream(tmp_path):
    cf = _conf_file(tmp_path, '[site]\nhosts = ["films.example"]\nquota_per_hour = 5\n',
                    'filter.max_urls_per_host=10', 'fetch.follow_hops=0')
    db = [_db('http://films.example/%03d' % i) for i in range(100)]
    out, counters = _generate(cf, db)
    g = counters['generate']
    assert len(out) == 5
    assert (g['over_host_cap_total'], g['site_quota_hour_total']) == (90, 5)
    # max_pages only, no host cap: due pages take nothing of it and are not held.
    # A due page that robots.txt denied was never asked for: it is a new page.
    cf = _conf_file(tmp_path, '[site]\nhosts = ["films.example"]\nmax_pages = 3\n',
                    'recrawl.interval=0')
    db = [_db('http://films.example/seen%d' % i, 'fetched', ago=timedelta(days=1))
          for i in range(300)] + \
        [_db('http://films.example/denied', 'denied', ago=timedelta(days=1)),
         _db('http://films.example/new')]
    out, counters = _generate(cf, db)
    got = {r['url'] for r in out}
    assert len(got) == 300 and all('/seen' in u for u in got)
    assert counters['generate']['site_max_pages_total'] == 2
    assert counters['site_limits']['films.pages'] == 300
