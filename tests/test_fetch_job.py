"""MRFetch (and MRPlanFetch) as whole jobs on the inline runner, against several
loopback hosts: nothing lost, politeness checked from each server's own log."""
import io
import json
import os
import time
from contextlib import ExitStack

import pytest

from drivers.fixtures.site import FixtureSite
from jobs.fetch import MRFetch
from jobs.optimize import MROptimize
from jobs.plan_fetch import MRPlanFetch
from jobs.lib import counters as C, records as R
from tests.helpers import (DELAY, check_one_doc_each, check_politeness, run_job_at_delay as run,
                           test_conf)
from drivers.runtime.launch import make_runner

pytestmark = pytest.mark.job


PATHS = ['/', '/a.html', '/b.html', '/a/1.html', '/private/secret.html', '/missing',
         '/redirect']


def test_many_hosts_fetched_at_once_politely(tmp_path):
    with ExitStack() as stack:
        sites = [stack.enter_context(FixtureSite('127.0.0.%d' % i)) for i in range(2, 7)]
        records = [{'kind': 'url', 'url': s.url(p), 'depth': 0} for s in sites for p in PATHS]
        start = time.monotonic()
        docs, counters = run(MRFetch, tmp_path, records, 'fetch.threads=8')
        seconds = time.monotonic() - start
        check_one_doc_each(records, docs, counters)
        for s in sites:
            check_politeness(s)
            assert s.paths().count('/c.html') == 1        # the redirect target, once
    # One host alone needs ~7 x 0.2 s (robots.txt + 6 requests); five in sequence would
    # need ~7 s. Hosts run_job_at_delay at once, so the whole job stays well under that.
    assert seconds < 5, seconds
    assert counters['fetch']['hosts_total'] == 5
    assert counters['fetch']['fetch_robots_denied_disallowed_total'] == 5


def test_time_budget_defers_and_loses_nothing(tmp_path):
    with FixtureSite('127.0.0.2') as site:
        # in/ order is the reverse of the priority order: the fetch must follow priority.
        records = [{'kind': 'url', 'url': site.url('/a.html?i=%d' % i), 'depth': 1,
                    'priority': float(i)} for i in range(40)]
        docs, counters = run(MRFetch, tmp_path, records, 'fetch.time_budget=1.0',
                             'politeness.delay=0.1')
        check_one_doc_each(records, docs, counters)
        deferred = [d for d in docs if d['status'] == R.FETCH_DEFERRED]
        assert deferred and {d['reason'] for d in deferred} == {'time_budget'}
        assert counters['fetch']['fetch_deferred_time_budget_total'] == len(deferred)
        assert counters['fetch']['keys_hit_by_time_budget_total'] == 1
        # Deferred URLs were not requested: they come back whole in the next layer.
        asked = set(site.paths())
        assert not any(d['url'][len(site.url('')):] in asked for d in deferred)
        assert all(d['depth'] == 1 for d in deferred)
        # What the budget cut are the least important URLs.
        rank = {r['url']: r['priority'] for r in records}
        fetched = [d for d in docs if d['status'] != R.FETCH_DEFERRED]
        assert min(rank[d['url']] for d in fetched) > max(rank[d['url']] for d in deferred)


def test_ip_key_puts_two_names_of_one_server_on_one_connection(tmp_path):
    with FixtureSite('127.0.0.1') as site:
        other = 'http://localhost:%d' % site.port
        records = [{'kind': 'url', 'url': u, 'depth': 0} for u in
                   [site.url('/a.html'), other + '/b.html', site.url('/a/1.html'),
                    other + '/a/1.html']]
        docs, counters = run(MRFetch, tmp_path, records, 'politeness.key=ip')
        check_one_doc_each(records, docs, counters)
        assert counters['fetch']['hosts_total'] == 1
        check_politeness(site)        # both names, one delay
        assert site.paths().count('/robots.txt') == 2    # one per origin


def test_plan_places_big_hosts_and_fetch_follows_it(tmp_path):
    with ExitStack() as stack:
        sites = [stack.enter_context(FixtureSite('127.0.0.%d' % i)) for i in range(2, 6)]
        records = []
        for n, s in zip((12, 12, 2, 1), sites):       # two big hosts, two small ones
            records += [{'kind': 'url', 'url': s.url('/a.html?i=%d' % i), 'depth': 0}
                        for i in range(n)]
        plan, pc = run(MRPlanFetch, tmp_path, records, 'fetch.reducers=2',
                       'fetch.plan_min_share=0.5')
        assert {p['key'] for p in plan} == {'127.0.0.2:%d' % sites[0].port,
                                            '127.0.0.3:%d' % sites[1].port}
        assert {p['partition'] for p in plan} == {0, 1}      # the big two apart
        assert pc['plan'] == {'keys_total': 4, 'keys_placed_total': 2}
        plan_file = tmp_path / 'plan.jsonl'
        plan_file.write_text(''.join(json.dumps(p) + '\n' for p in plan))
        docs, counters = run(MRFetch, tmp_path, records, 'fetch.reducers=2',
                             'politeness.delay=0.05', args=['--plan', str(plan_file)])
        check_one_doc_each(records, docs, counters)
        assert counters['fetch']['planned_urls_total'] == 24
        assert all(d['status'] == R.FETCH_FETCHED for d in docs)
        for s in sites:
            check_politeness(s, 0.05)


def test_cross_key_redirect_target_is_known_for_the_next_layer(tmp_path):
    page = {'kind': 'page', 'url': 'http://a.example/r', 'depth': 2, 'layer': 2,
            'status': R.FETCH_REDIRECTED, 'reason': 'cross_key', 'http_status': None,
            'final_url': 'http://b.example/t', 'links': []}
    out, _ = run(MROptimize, tmp_path, [page])
    by_url = {r['url']: r for r in out}
    assert by_url['http://a.example/r']['status'] == R.DB_REDIRECTED
    assert by_url['http://b.example/t']['status'] == R.DB_UNFETCHED
    assert by_url['http://b.example/t']['depth'] == 2


# -- fetch.parse: the fetch reducer parses ---------------------------------------------

def _parse_fields(page):
    return {k: page.get(k) for k in ('url', 'status', 'title', 'text', 'links', 'canonical',
                                      'noindex', 'nofollow', 'main_text', 'language',
                                      'parse_error')}


def test_fetch_writes_the_pages_the_parse_job_would(tmp_path):
    from jobs.parse import MRParse
    with FixtureSite() as site:
        records = [{'kind': 'url', 'url': site.url(p), 'depth': 0} for p in PATHS]
        pages, counters = run(MRFetch, tmp_path, records)
        docs, doc_counters = run(MRFetch, tmp_path, records, 'fetch.parse=false',
                                 'fetch.follow_hops=0')
    check_one_doc_each(records, pages, counters)
    assert all(p['kind'] == 'page' and 'body' not in p for p in pages)
    assert all(d['kind'] == 'doc' for d in docs) and any(d['body'] for d in docs)
    assert 'parse' not in doc_counters
    # The separate parse job makes the same pages from the documents.
    lines = ''.join(json.dumps(d) + '\n' for d in docs)
    conf = tmp_path / 'conf-MRFetch.json'
    job = MRParse(['-r', 'inline', '--crawl-conf', str(conf)])
    job.sandbox(stdin=io.BytesIO(lines.encode()))
    with make_runner(job) as runner:
        runner.run()
        parsed = [v for _, v in job.parse_output(runner.cat_output())]
        parse_counters = C.merge_steps(runner.counters())
    by_url = {p['url']: _parse_fields(p) for p in parsed}
    assert {p['url']: _parse_fields(p) for p in pages} == by_url
    assert any(p['links'] for p in pages) and any(p['main_text'] for p in pages)
    # The parse counters, in the fetch job's counters under their own group.
    assert counters['parse'] == parse_counters['parse']
    assert counters['parse'][C.PAGES_PARSED] == sum(1 for p in pages if p['title'])


def test_fetch_archives_bodies_and_points_each_page_at_its_record(tmp_path):
    """--warc-dir: the reduce task writes the responses into one WARC file; the pages
    keep no body but point at their record, whose payload has the page's digest."""
    from jobs.lib import records, warcfile
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(test_conf('politeness.delay=%s' % DELAY)))
    warc_dir = tmp_path / 'warc'
    with FixtureSite() as site:
        records_in = [{'kind': 'url', 'url': site.url(p), 'depth': 0} for p in ('/', '/a.html')]
        job = MRFetch(['-r', 'inline', '--crawl-conf', str(path), '--warc-dir', str(warc_dir),
                       '--warc-prefix', 'mrcrawl-L000'])
        job.sandbox(stdin=io.BytesIO(''.join(json.dumps(r) + '\n'
                                             for r in records_in).encode()))
        with make_runner(job) as runner:
            runner.run()
            pages = [v for _, v in job.parse_output(runner.cat_output())]
    assert os.listdir(warc_dir) == ['mrcrawl-L000-f00000.warc.gz']
    assert [p['kind'] for p in pages] == ['page', 'page']
    for page in pages:
        assert 'body' not in page and 'http' not in page and page['links']
        assert page['warc_filename'] == 'warc/mrcrawl-L000-f00000.warc.gz'
        data, ctype = warcfile.read_payload(str(tmp_path), page)
        assert records.digest(data) == page['digest'] and ctype.startswith('text/html')


def list_of(url, bins=2):
    """The fetch list MRFetch puts *url*'s host in, without a plan (_list_key)."""
    import zlib
    from jobs.lib import politeness
    return zlib.crc32(politeness.politeness_key(url, 'host').encode('utf-8')) % bins


@pytest.mark.parametrize('runner', ['inline', 'local'])
def test_fetch_writes_each_page_without_its_text_for_the_update(tmp_path, runner):
    """--meta-dir: each fetch task writes its pages without their text, one file per
    task; MROptimize makes the same crawl database from those as from the pages."""
    from jobs.lib import sidefile
    meta_dir = tmp_path / 'meta'
    with ExitStack() as stack:
        sites = [stack.enter_context(FixtureSite('127.0.0.%d' % i)) for i in range(2, 6)]
        # Ports are random: add hosts until both fetch lists get one (crc32 of the key).
        while len({list_of(s.url('/')) for s in sites}) < 2 and len(sites) < 16:
            sites.append(stack.enter_context(FixtureSite('127.0.0.%d' % (len(sites) + 2))))
        records_in = [{'kind': 'url', 'url': s.url(p), 'depth': 0} for s in sites
                      for p in PATHS]
        pages, counters = run(MRFetch, tmp_path, records_in, 'politeness.delay=0.05',
                              'fetch.reducers=2', runner=runner,
                              args=['--meta-dir', str(meta_dir)])
    check_one_doc_each(records_in, pages, counters)
    assert sorted(os.listdir(meta_dir)) == ['part-f00000', 'part-f00001']
    metas = [json.loads(line) for name in os.listdir(meta_dir)
             for line in (meta_dir / name).read_text().splitlines()]
    assert counters['fetch'][C.META_RECORDS] == len(metas) == len(pages)
    by_url = {p['url']: p for p in pages}
    for m in metas:
        page = by_url[m['url']]
        assert m == {k: v for k, v in page.items() if k not in sidefile.TEXT_FIELDS}
    assert any(p['text'] for p in pages) and not any('text' in m for m in metas)
    assert any(m['links'] for m in metas)
    db = [{'kind': 'db', 'url': sites[0].url('/b.html'), 'status': R.DB_UNFETCHED,
           'depth': 0}]
    from_pages, c1 = run(MROptimize, tmp_path, db + pages, args=['--layer', '0'])
    from_meta, c2 = run(MROptimize, tmp_path, db + metas, args=['--layer', '0'])
    def stable(db):      # first_seen: the clock when a new URL was seen
        return sorted(({k: v for k, v in r.items() if k != 'first_seen'} for r in db),
                      key=lambda r: r['url'])
    assert stable(from_meta) == stable(from_pages) and len(from_meta) > 30
    assert c1['optimize'] == c2['optimize']


@pytest.mark.parametrize('runner', ['inline', 'local'])
def test_each_fetch_list_is_one_fetch_task(tmp_path, runner):
    """Step 1 writes one list per bin (one reduce task per key on every runner), step 2
    fetches each list whole in one map task: here two WARC files, and each host's
    records in one of them only (two tasks never share a host)."""
    from jobs.lib import warcfile
    warc_dir = tmp_path / 'warc'
    with ExitStack() as stack:
        sites = [stack.enter_context(FixtureSite('127.0.0.%d' % i)) for i in range(2, 10)]
        while len({list_of(s.url('/')) for s in sites}) < 2 and len(sites) < 16:
            sites.append(stack.enter_context(FixtureSite('127.0.0.%d' % (len(sites) + 2))))
        records_in = [{'kind': 'url', 'url': s.url(p), 'depth': 0}
                      for s in sites for p in ('/', '/a.html', '/b.html')]
        pages, counters = run(MRFetch, tmp_path, records_in, 'politeness.delay=0.05',
                              'fetch.reducers=2', runner=runner,
                              args=['--warc-dir', str(warc_dir), '--warc-prefix', 'L'])
        check_one_doc_each(records_in, pages, counters)
        for s in sites:
            check_politeness(s, 0.05)
    assert sorted(os.listdir(warc_dir)) == ['L-f00000.warc.gz', 'L-f00001.warc.gz']
    files_of_host = {}
    for page in pages:
        files_of_host.setdefault(page['url'].split('/')[2], set()).add(page['warc_filename'])
        data, _ = warcfile.read_payload(str(tmp_path), page)
        assert data
    assert all(len(files) == 1 for files in files_of_host.values()), files_of_host
    assert len(set().union(*files_of_host.values())) == 2


def test_a_redirect_to_a_page_requested_before_is_not_followed(tmp_path):
    """With the crawl database as a second input, each key's fetch list names the URLs
    requested in earlier layers: a same-host redirect to one of them is recorded
    (redirected, known_target) and not fetched again; one to a URL the database only
    knows as unfetched, or only as a redirect's end (refreshed through its source), is
    followed. A host with no URL in the layer gets no list."""
    with FixtureSite() as site, FixtureSite('127.0.0.2') as idle:
        records = [{'kind': 'url', 'url': site.url('/redirect'), 'depth': 1},
                   {'kind': 'url', 'url': site.url('/fault/redirect?to=/b.html'), 'depth': 1},
                   {'kind': 'url', 'url': site.url('/fault/redirect?to=/a.html'), 'depth': 1}]
        db = [{'kind': 'db', 'url': site.url('/c.html'), 'status': R.DB_FETCHED, 'depth': 0},
              {'kind': 'db', 'url': site.url('/b.html'), 'status': R.DB_UNFETCHED, 'depth': 1},
              {'kind': 'db', 'url': site.url('/a.html'), 'status': R.DB_FETCHED, 'depth': 0,
               'reason': 'redirect_target'},
              {'kind': 'db', 'url': idle.url('/'), 'status': R.DB_FETCHED, 'depth': 0}]
        docs, counters = run(MRFetch, tmp_path, records + db)
        check_one_doc_each(records, docs, counters)
        by_url = {d['url']: d for d in docs}
        old = by_url[site.url('/redirect')]
        assert (old['status'], old['reason'], old['final_url']) == (
            R.FETCH_REDIRECTED, 'known_target', site.url('/c.html'))
        assert '/c.html' not in site.paths()
        assert counters['fetch'][C.REDIRECT_KNOWN_TARGET] == 1
        for target in ('/b.html', '/a.html'):
            followed = by_url[site.url('/fault/redirect?to=' + target)]
            assert followed['status'] == R.FETCH_FETCHED and target in site.paths()
        assert idle.requests == []


def test_a_page_that_breaks_the_parser_costs_its_parse_not_the_task(tmp_path, monkeypatch):
    from jobs.lib import parsepage
    real = parsepage.PageParser.keep_links

    def keep_links(self, found, page_url=None, site=None):
        if page_url.endswith('/a.html'):
            raise RuntimeError('parser bug')
        return real(self, found, page_url, site)
    monkeypatch.setattr(parsepage.PageParser, 'keep_links', keep_links)
    with FixtureSite() as site:
        records = [{'kind': 'url', 'url': site.url(p), 'depth': 0} for p in PATHS]
        pages, counters = run(MRFetch, tmp_path, records)
    check_one_doc_each(records, pages, counters)
    by_path = {p['url'][len(site.url('')):]: p for p in pages}
    broken = by_path['/a.html']
    assert broken['parse_error'] == 'RuntimeError' and broken['links'] == []
    assert broken['status'] == R.FETCH_FETCHED and broken['title'] is None
    assert counters['parse'][C.PARSE_ERROR] == 1
    assert by_path['/']['links'] and 'parse_error' not in by_path['/']


def test_following_fetches_a_hosts_new_links_while_another_host_works(tmp_path):
    """fetch.follow_hops: the quick host goes on to the links of its page while the slow
    host's list runs in the same fetch task (one list): one record each, a hop and a level deeper, never a URL the crawl
    database holds, never past --max-depth, politely."""
    with FixtureSite('127.0.0.2') as quick, FixtureSite('127.0.0.3') as slow:
        listed = [{'kind': 'url', 'url': quick.url('/'), 'depth': 0}] + [
            {'kind': 'url', 'url': slow.url('/fault/delay?n=0.3&i=%d' % i), 'depth': 0}
            for i in range(8)]
        db = [{'kind': 'db', 'url': quick.url('/a.html'), 'status': R.DB_UNFETCHED},
              {'kind': 'db', 'url': quick.url('/b.html'), 'status': R.DB_FETCHED}]
        docs, counters = run(MRFetch, tmp_path, listed + db, 'fetch.follow_hops=2',
                             args=['--max-depth', '1', '--bins', '1'])
        check_politeness(quick)
        check_politeness(slow)
        requested = [p for p in quick.paths() if p != '/robots.txt']
    followed = [d for d in docs if d.get('followed')]
    assert sorted(d['url'] for d in docs if not d.get('followed')) == \
        sorted(r['url'] for r in listed)
    assert sorted(d['url'] for d in followed) == sorted(quick.url(p) for p in (
        '/dup.html', '/redirect', '/missing', '/private/secret.html', '/trap/1/',
        '/latin1.html', '/~user/'))
    assert {(d['depth'], d['followed'], d['layer']) for d in followed} == {(1, 1, 0)}
    by_url = {d['url']: d for d in followed}
    assert by_url[quick.url('/private/secret.html')]['status'] == R.FETCH_ROBOTS_DENIED
    assert by_url[quick.url('/redirect')]['final_url'] == quick.url('/c.html')
    # Held (unfetched) and known (fetched) URLs of the crawl database are not followed;
    # nothing twice, nothing at depth 2 (/a/1.html, /trap/1/2/).
    assert len(requested) == len(set(requested)) == 8, requested
    assert not {'/a.html', '/b.html', '/trap/1/2/'} & set(requested)
    assert counters['fetch']['followed_total'] == len(followed)
    assert counters['fetch']['follow_queued_total'] == len(followed)
    assert counters['fetch']['urls_in_total'] == len(listed)


def test_following_never_outlasts_the_listed_urls(tmp_path):
    """With no other key's list to wait for, the quick host's links are left to the
    crawl database (follow_left_total): following never makes a layer longer."""
    with FixtureSite('127.0.0.2') as quick:
        listed = [{'kind': 'url', 'url': quick.url('/'), 'depth': 0}]
        docs, counters = run(MRFetch, tmp_path, listed, 'fetch.follow_hops=1',
                             args=['--max-depth', '3'])
        assert [p for p in quick.paths() if p != '/robots.txt'] == ['/']
    assert [d['url'] for d in docs] == [quick.url('/')]
    assert counters['fetch']['follow_queued_total'] > 0
    assert counters['fetch']['follow_left_total'] == \
        counters['fetch']['follow_queued_total']
    assert 'followed_total' not in counters['fetch']


def test_robots_answers_of_earlier_layers_are_reused_not_asked_again(tmp_path):
    """A robots record (an earlier layer's answer, --robots-dir) stands in for the
    request while it is younger than politeness.robots_cache_hours; an older one does
    not; what the fetch reads itself it writes for the next layer."""
    with FixtureSite('127.0.0.2') as fresh, FixtureSite('127.0.0.3') as stale:
        def answer(site, age_hours):
            return {'kind': 'robots', 'url': site.url('/robots.txt'),
                    'origin': site.url('/')[:-1], 'allow_all': False,
                    'reason': None, 'fetched_at': time.time() - 3600 * age_hours,
                    'text': 'User-agent: *\nDisallow: /a.html\n'}
        listed = [{'kind': 'url', 'url': s.url(p), 'depth': 1}
                  for s in (fresh, stale) for p in ('/', '/a.html')]
        robots_dir = tmp_path / 'robots'
        docs, counters = run(MRFetch, tmp_path, listed + [answer(fresh, 23), answer(stale, 25)],
                             args=['--robots-dir', str(robots_dir)])
        assert '/robots.txt' not in fresh.paths() and fresh.paths() == ['/']
        assert stale.paths() == ['/robots.txt', '/', '/a.html']   # its own robots.txt
    status = {d['url']: d['status'] for d in docs}
    assert status[fresh.url('/a.html')] == R.FETCH_ROBOTS_DENIED
    assert status[stale.url('/a.html')] == R.FETCH_FETCHED
    assert counters['fetch']['robots_txt_reused_total'] == 1
    assert counters['fetch']['robots_txt_fetched_total'] == 1
    written = [json.loads(line) for f in robots_dir.iterdir() for line in f.open()]
    written = [r for r in written if r['kind'] == 'robots']
    assert [(r['origin'], r['allow_all']) for r in written] == [(stale.url('/')[:-1], False)]
    assert 'Disallow: /private/' in written[0]['text']


def test_a_keys_first_request_keeps_the_delay_from_its_last_in_an_earlier_layer(tmp_path):
    """pace records (--robots-dir): when each key's last request of the layer ended.
    A later layer's lists join them, so however soon it starts, a key asked just now
    waits out the delay; one asked long ago starts at once."""
    with FixtureSite('127.0.0.2') as now, FixtureSite('127.0.0.3') as long_ago:
        sites = (now, long_ago)
        first = tmp_path / 'robots-000'
        before = time.time()
        run(MRFetch, tmp_path, [{'kind': 'url', 'url': s.url('/'), 'depth': 0}
                                for s in sites], args=['--robots-dir', str(first)])
        written = [json.loads(line) for f in first.iterdir() for line in f.open()]
        paces = {r['url']: r for r in written if r['kind'] == 'pace'}
        assert set(paces) == {s.url('/') for s in sites}
        assert all(before < r['ended_at'] <= time.time() for r in paces.values())
        # The next layer, with a delay longer than this job takes to start.
        delay = 4.0
        paces[now.url('/')]['ended_at'] = asked = time.time()
        asked_t = time.monotonic()        # the servers' clock
        paces[long_ago.url('/')]['ended_at'] = asked - 60
        carried = [r for r in written if r['kind'] == 'robots'] + list(paces.values())
        seen = {s.host: len(s.requests) for s in sites}
        # One fetch list: the inline runner runs lists one after another, and a second
        # list would start only after the first one's wait.
        run(MRFetch, tmp_path, [{'kind': 'url', 'url': s.url('/a.html'), 'depth': 1}
                                for s in sites] + carried,
            'politeness.delay=%s' % delay, args=['--robots-dir', str(tmp_path / 'r1'),
                                                 '--bins', '1'])
        for s in sites:
            assert [r['path'] for r in s.requests[seen[s.host]:]] == ['/a.html']
        assert now.requests[-1]['t'] >= asked_t + delay * 0.95
        assert long_ago.requests[-1]['t'] < asked_t + delay / 2


def test_hosts_in_flight_are_not_threads(tmp_path):
    """12 hosts of 4 pages, two threads: a host waiting out its delay holds no thread,
    so every host's requests overlap every other's (a thread per host would fetch two
    hosts at a time, one after another), each host keeps its delay, nothing is lost."""
    delay = 0.5
    with ExitStack() as stack:
        sites = [stack.enter_context(FixtureSite('127.0.1.%d' % i)) for i in range(2, 14)]
        records = [{'kind': 'url', 'url': s.url(p), 'depth': 0} for s in sites
                   for p in ('/', '/a.html', '/b.html', '/a/1.html')]
        docs, counters = run(MRFetch, tmp_path, records, 'fetch.threads=2',
                             'fetch.reducers=1', 'politeness.delay=%s' % delay)
        spans = [(min(r['t'] for r in s.requests), max(r['t'] for r in s.requests))
                 for s in sites]
        for s in sites:
            check_politeness(s, delay)
    check_one_doc_each(records, docs, counters)
    assert counters['fetch']['fetch_fetched_total'] == 48
    # Every host's first request came before any host's last one.
    assert max(a for a, _ in spans) < min(b for _, b in spans)
