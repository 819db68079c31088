"""The fetcher against the fixture site's fault endpoints: each fault ends in the right
status, and every URL handed to the fetcher comes back exactly once."""
import ipaddress
import time
import tracemalloc

import pytest

from drivers.fixtures.site import FixtureSite, bomb
from jobs.lib import counters as C, encoding, fetcher, httpio, netpolicy, plan, politeness, records as R
from tests.helpers import test_conf

pytestmark = pytest.mark.unit

#: Small delays and limits so that each fault costs well under a second or two.
FAST = ['politeness.delay=0.05', 'fetch.read_timeout=0.5', 'fetch.connect_timeout=0.5',
        'fetch.max_request_seconds=1.0', 'fetch.retry_backoff=0.05', 'fetch.max_retries=2',
        'fetch.max_retry_after=1.0', 'fetch.max_body_bytes=100000',
        'fetch.max_consecutive_failures=0']


def fetch_paths(site, paths, *settings, records=None):
    hf = fetcher.HostFetcher(test_conf(*(FAST + list(settings))))
    items = records or [{'url': site.url(p), 'depth': 0} for p in paths]
    docs = list(hf.fetch(items))
    # Nothing lost, nothing doubled: one doc per input record, same URLs, a status each.
    assert [d['url'] for d in docs] == [r['url'] for r in items]
    assert all(d['status'] in R.FETCH_STATUSES for d in docs)
    assert all(d['reason'] for d in docs if d['status'] != R.FETCH_FETCHED)
    return docs, hf


@pytest.mark.parametrize('path,status,reason,attempts', [
    ('/fault/status?n=503', R.FETCH_HTTP_ERROR, 'http_503', 3),       # retried, then kept
    ('/fault/status?n=404', R.FETCH_HTTP_ERROR, 'http_404', 1),       # 4xx: no retry
    ('/fault/flaky?n=2&code=503&id=f1', R.FETCH_FETCHED, None, 3),    # healed by retries
    ('/fault/flaky?n=1&code=500&id=f2', R.FETCH_FETCHED, None, 2),
    ('/fault/retry-after?n=1&after=100&id=r2', R.FETCH_HTTP_ERROR, 'http_429', 1),  # over cap
    ('/fault/stall', R.FETCH_NETWORK_ERROR, 'read_timeout', 3),
    ('/fault/trickle?bytes=1000&every=0.05', R.FETCH_NETWORK_ERROR, 'time_limit', 1),
    ('/fault/trickle-headers?every=0.02', R.FETCH_NETWORK_ERROR, 'time_limit', 1),
    ('/fault/drop', R.FETCH_NETWORK_ERROR, 'connection_reset', 3),
    ('/fault/reset', R.FETCH_NETWORK_ERROR, 'connection_reset', 3),
    ('/fault/redirect-loop', R.FETCH_NETWORK_ERROR, 'redirect_loop', 4),
    ('/fault/redirect-chain?n=9', R.FETCH_NETWORK_ERROR, 'too_many_redirects', 6),
    ('/fault/redirect-chain?n=3', R.FETCH_FETCHED, None, 4),
])
def test_fault_statuses(site, path, status, reason, attempts):
    start = time.monotonic()
    (doc,), _ = fetch_paths(site, [path])
    assert (doc['status'], doc['reason'], doc['attempts']) == (status, reason, attempts)
    assert time.monotonic() - start < 5
    # The server saw exactly the requests the record says were made.
    assert len([p for p in site.paths() if p.startswith('/fault/')]) == attempts


def test_no_credentials_or_proxies_from_the_environment(site, tmp_path, monkeypatch):
    """A ~/.netrc entry for the crawled host is never sent, and proxy variables do not
    divert the fetch (to a dead port here): the fetcher's sessions ignore the
    environment (requests' trust_env)."""
    netrc = tmp_path / '.netrc'
    netrc.write_text('machine %s login crawler password secret\n' % site.host)
    netrc.chmod(0o600)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('NETRC', str(netrc))
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'all_proxy'):
        monkeypatch.setenv(name, 'http://127.0.0.1:9')
    monkeypatch.delenv('no_proxy', raising=False)
    monkeypatch.delenv('NO_PROXY', raising=False)
    n = len(site.requests)
    docs, _ = fetch_paths(site, ['/a.html'])
    assert docs[0]['status'] == R.FETCH_FETCHED
    seen = [r for r in site.requests[n:] if r['path'] == '/a.html']
    assert len(seen) == 1
    assert not {k.lower() for k in seen[0]['headers']} & {'authorization',
                                                           'proxy-authorization'}


def test_retry_after_is_waited_for(site):
    (doc,), hf = fetch_paths(site, ['/fault/retry-after?n=1&after=1&id=ra'])
    assert doc['status'] == R.FETCH_FETCHED and doc['attempts'] == 2
    times = [r['t'] for r in site.requests if r['path'].startswith('/fault/')]
    assert times[1] - times[0] >= 0.95          # Retry-After: 1, not the 0.05 s backoff
    assert hf.stats['retries_total'] == 1


def test_trickling_headers_are_cut_by_the_request_limit(site):
    start = time.monotonic()
    (doc,), _ = fetch_paths(site, ['/fault/trickle-headers?every=0.01'],
                            'fetch.read_timeout=5')
    # Each byte comes well within the read timeout; only the watchdog can stop it.
    assert doc['reason'] == 'time_limit' and time.monotonic() - start < 2.5


def test_big_body_is_truncated_and_recorded(site):
    (doc,), _ = fetch_paths(site, ['/fault/big?bytes=300000'])
    assert doc['status'] == R.FETCH_FETCHED and doc['truncated'] is True
    assert doc['length'] == 100000 and len(doc['body']) == 100000


def test_gzip_bomb_stays_small_in_memory(site):
    """1 GiB of zeros, gzip-compressed (~1 MiB on the wire): cut at the body limit."""
    tracemalloc.start()
    try:
        (doc,), _ = fetch_paths(site, ['/fault/gzip-bomb?mb=1024'],
                                'fetch.max_body_bytes=1048576')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert doc['status'] == R.FETCH_FETCHED and doc['truncated'] is True
    assert doc['length'] == 1048576 and doc['headers']['content-encoding'] == 'gzip'
    assert peak < 16 * 1024 * 1024, peak      # a few copies of 1 MiB, never the 1 GiB


@pytest.mark.parametrize('coding', ['br', 'zstd', 'gzip', 'deflate'])
def test_every_content_coding_a_server_may_pick_is_asked_for_and_decoded(site, coding):
    """Brotli (most of the web's CDNs) and zstd (Chrome's since 123) beside gzip and
    deflate: the request offers each (Accept-Encoding), and a page the server sends in
    it is read as the same page sent plain."""
    (doc,), _ = fetch_paths(site, ['/fault/encoded?coding=' + coding])
    offered = site.requests[-1]['headers']['Accept-Encoding']
    assert coding in [c.strip() for c in offered.split(',')], offered
    assert doc['status'] == R.FETCH_FETCHED and doc['headers']['content-encoding'] == coding
    assert doc['body'].count('came through its %s coding' % coding) == 40


@pytest.mark.parametrize('coding', ['br', 'zstd', 'gzip', 'deflate'])
def test_a_coded_body_cut_at_the_limit_leaves_the_rest_unread(site, coding):
    """A small coded body (under the 64 KiB drained to keep the connection) that
    decodes past fetch.max_body_bytes: cut there, and the rest left on the wire. (The
    drain once read it raw, which urllib3 refuses after decoded reads: a RuntimeError
    that no fetch caught.) The next request of the key still gets its answer."""
    (doc, after), _ = fetch_paths(site, ['/fault/encoded?coding=%s&kb=48' % coding, '/'],
                                  'fetch.max_body_bytes=1000')
    assert doc['status'] == R.FETCH_FETCHED and doc['truncated'] is True
    assert doc['length'] == 1000 and doc['headers']['content-encoding'] == coding
    assert after['status'] == R.FETCH_FETCHED and after['http_status'] == 200


@pytest.mark.parametrize('coding', ['br', 'zstd'])
def test_brotli_and_zstd_bombs_stay_small_in_memory(site, coding):
    """1 GiB of zeros in one br stream (~190 KiB on the wire) or one zstd frame: cut at
    the body limit, as a gzip bomb is, and never held whole."""
    bomb(coding, 1024)       # compressed before the request: the server answers at once
    tracemalloc.start()
    try:
        (doc,), _ = fetch_paths(site, ['/fault/bomb?coding=%s&mb=1024' % coding],
                                'fetch.max_body_bytes=1048576')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert doc['status'] == R.FETCH_FETCHED and doc['truncated'] is True
    assert doc['length'] == 1048576 and doc['headers']['content-encoding'] == coding
    assert peak < 16 * 1024 * 1024, peak


def test_content_types(site):
    docs, hf = fetch_paths(site, ['/fault/type?ct=image/png',
                                  '/fault/type?ct=application/xhtml%2Bxml',
                                  '/fault/type?ct=application/pdf'],
                           'fetch.keep_types=["application/pdf"]')
    png, xhtml, pdf = docs
    # A type no parser reads: cut short at its headers (the body never read), counted.
    assert png['status'] == R.FETCH_FETCHED and png['body'] is None and png['length'] == 0
    assert png['content_type'] == 'image/png'
    assert hf.stats[C.TYPE_NOT_PARSED] == 1
    assert xhtml['body'] and 'survived' in xhtml['body']          # XHTML is parsed
    assert pdf['body'] is None and pdf['raw_body'] and pdf['length'] > 0   # kept, raw


def test_charsets(site):
    docs, _ = fetch_paths(site, [
        '/fault/charset?declared=utf-8&actual=latin-1',           # header lies: header wins
        '/fault/charset?actual=windows-1251&meta=windows-1251',   # meta, no header
        '/fault/charset?declared=bogus&actual=utf-8',             # unknown label: detector
        '/fault/charset?actual=latin-1'])                         # nothing declared
    assert [d['encoding'] for d in docs[:3]] == ['utf-8', 'windows-1251', 'utf-8']
    assert '\ufffd' in docs[0]['body']
    assert 'Cr\u00e8me br\u00fbl\u00e9e' in docs[2]['body']
    # Undeclared single-byte text: the detector's pick (a short sample may look like
    # windows-1250 as much as 1252) is not UTF-8 and decodes without a broken byte.
    assert docs[3]['encoding'] != 'utf-8' and '\ufffd' not in docs[3]['body']


def test_conditional_request_and_not_modified(site):
    recs = [{'url': site.url('/fault/conditional?etag=v1'), 'etag': '"v1"',
             'last_modified': 'Mon, 30 Nov 2026 08:00:00 GMT'},
            {'url': site.url('/fault/conditional?etag=v2'), 'etag': '"old"'}]
    docs, hf = fetch_paths(site, None, records=recs)
    assert (docs[0]['status'], docs[0]['http_status']) == (R.FETCH_NOT_MODIFIED, 304)
    assert docs[1]['status'] == R.FETCH_FETCHED and docs[1]['headers']['etag'] == '"v2"'
    sent = [r['headers'] for r in site.requests if r['path'].startswith('/fault/')]
    assert sent[0]['If-None-Match'] == '"v1"'
    assert sent[0]['If-Modified-Since'] == 'Mon, 30 Nov 2026 08:00:00 GMT'
    assert hf.stats['conditional_requests_total'] == 2


def test_a_304_to_a_request_without_validators_is_an_error(site):
    """Only a conditional request can be answered "not modified": a 304 to any other
    request keeps no page (the crawl holds none it could stand for)."""
    docs, _ = fetch_paths(site, ['/fault/status?n=304'])
    assert (docs[0]['status'], docs[0]['reason'], docs[0]['http_status']) == (
        R.FETCH_HTTP_ERROR, 'http_304_unconditional', 304)
    assert R.db_status_for(docs[0]['status'], 304) == R.DB_FAILED     # asked again


def test_redirect_to_a_url_of_this_layer_is_not_fetched_twice(site):
    docs, hf = fetch_paths(site, ['/redirect', '/c.html'])
    assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_REDIRECTED, 'duplicate_target')
    assert docs[0]['final_url'] == site.url('/c.html')
    assert docs[1]['status'] == R.FETCH_FETCHED
    assert site.paths().count('/c.html') == 1
    assert hf.stats['redirect_deduplicated_total'] == 1


def test_redirect_to_another_key_is_left_for_the_next_layer():
    with FixtureSite('127.0.0.2') as a, FixtureSite('127.0.0.3') as b:
        target = b.url('/a.html')
        docs, hf = fetch_paths(a, ['/fault/redirect?to=' + target])
        assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_REDIRECTED, 'cross_key')
        assert docs[0]['final_url'] == target
        assert b.requests == []      # the other key's politeness is not touched
        assert hf.stats['redirect_cross_key_total'] == 1
        # With the domain key both loopback "hosts" are one IP literal each, so still two
        # keys; with the ip key mode, 127.0.0.2 != 127.0.0.3 as well.
        docs, _ = fetch_paths(a, ['/fault/redirect?to=' + target], 'politeness.key=ip')
        assert docs[0]['reason'] == 'cross_key'


def test_redirect_hop_obeys_robots_and_the_delay(site):
    docs, _ = fetch_paths(site, ['/fault/redirect?to=/private/secret.html'],
                          'politeness.delay=0.2')
    assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_ROBOTS_DENIED,
                                                       'redirect_target')
    assert '/private/secret.html' not in site.paths()
    times = [r['t'] for r in site.requests]
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.19


def test_consecutive_failures_defer_the_rest_of_the_host(site):
    paths = ['/fault/status?n=503&i=%d' % i for i in range(8)]
    docs, hf = fetch_paths(site, paths, 'fetch.max_consecutive_failures=3',
                           'fetch.max_retries=0')
    assert [d['status'] for d in docs] == [R.FETCH_HTTP_ERROR] * 3 + [R.FETCH_DEFERRED] * 5
    assert {d['reason'] for d in docs[3:]} == {'host_failures'}
    assert len([p for p in site.paths() if p.startswith('/fault/')]) == 3
    assert hf.stats['keys_above_failure_threshold_total'] == 1


def test_time_budget_defers_what_is_left(site):
    paths = ['/a.html?i=%d' % i for i in range(30)]
    hf = fetcher.HostFetcher(test_conf(*(FAST + ['politeness.delay=0.1'])),
                             budget_deadline=time.monotonic() + 1.0)
    start = time.monotonic()
    docs = list(hf.fetch([{'url': site.url(p)} for p in paths]))
    assert time.monotonic() - start < 1.5
    assert [d['url'] for d in docs] == [site.url(p) for p in paths]
    fetched = [d for d in docs if d['status'] == R.FETCH_FETCHED]
    deferred = [d for d in docs if d['status'] == R.FETCH_DEFERRED]
    assert len(fetched) + len(deferred) == 30 and 3 <= len(fetched) <= 10
    assert {d['reason'] for d in deferred} == {'time_budget'}
    requested = {p for p in site.paths() if p != '/robots.txt'}
    assert requested == {d['url'][len(site.url('')):] for d in fetched}


@pytest.mark.parametrize('robots_status,status,reason', [
    (503, R.FETCH_DEFERRED, 'robots_503'),
    (429, R.FETCH_DEFERRED, 'robots_429'),
    (404, R.FETCH_FETCHED, None),
])
def test_robots_errors(robots_status, status, reason):
    with FixtureSite(robots_status=robots_status) as s:
        docs, hf = fetch_paths(s, ['/a.html', '/private/secret.html'])
        assert [(d['status'], d['reason']) for d in docs] == [(status, reason)] * 2
        assert s.paths()[0] == '/robots.txt' and s.paths().count('/robots.txt') == 1
        assert all(r['ua'].startswith('mrcrawl/') for r in s.requests)


def test_crawl_delay_honoured_and_capped():
    robots_txt = b'User-agent: *\nCrawl-delay: 0.3\nDisallow: /private/\n'
    with FixtureSite(robots=robots_txt) as s:
        _, hf = fetch_paths(s, ['/a.html', '/b.html', '/a/1.html'])
        times = [r['t'] for r in s.requests]
        assert min(b - a for a, b in zip(times, times[1:])) >= 0.29
        assert hf.stats['crawl_delay_raised_keys_total'] == 1
    with FixtureSite(robots=b'User-agent: *\nCrawl-delay: 60\n') as s:
        docs, hf = fetch_paths(s, ['/a.html', '/b.html'])
        assert [(d['status'], d['reason']) for d in docs] == [
            (R.FETCH_ROBOTS_DENIED, 'crawl_delay')] * 2
        assert s.paths() == ['/robots.txt']
        assert hf.stats['robots_denied_max_crawl_delay_total'] == 2


def test_private_addresses_refused_in_every_spelling(site):
    hf = fetcher.HostFetcher(test_conf(*FAST, 'security.allow_private_networks=false'))
    port = site.port
    urls_ = ['http://127.0.0.1:%d/a.html' % port, 'http://2130706433:%d/b.html' % port]
    from jobs.lib import urls
    docs = list(hf.fetch([{'url': urls.normalize(u)} for u in urls_]))
    assert [(d['status'], d['reason']) for d in docs] == [
        (R.FETCH_FILTERED, 'private_address')] * 2
    assert site.requests == []
    for spelled in ('::ffff:127.0.0.1', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::',
                    '::ffff:10.0.0.1', '0.0.0.0', '169.254.169.254', 'fe80::1', '224.0.0.1',
                    '100.64.0.1'):
        assert not netpolicy.ip_is_public(ipaddress.ip_address(spelled)), spelled
    assert netpolicy.ip_is_public(ipaddress.ip_address('93.184.215.14'))
    assert netpolicy.ip_is_public(ipaddress.ip_address('2606:4700::6810:84e5'))


def test_politeness_keys():
    key = politeness.politeness_key
    assert key('http://a.example.com:8080/x', 'host') == 'a.example.com:8080'
    assert key('http://www.example.co.uk/x', 'domain') == 'domain:example.co.uk'
    assert key('https://a.b.github.io/', 'domain') == 'domain:b.github.io'
    assert key('http://127.0.0.5:81/', 'domain') == 'domain:127.0.0.5'
    resolver = netpolicy.Resolver()
    assert key('http://localhost:8080/', 'ip', resolver) == 'ip:127.0.0.1'
    assert key('http://no-such-host.invalid/', 'ip', resolver) == 'no-such-host.invalid'


def test_retry_after_parsing():
    assert httpio.retry_after_seconds('5') == 5.0
    assert httpio.retry_after_seconds('soon') is None
    assert httpio.retry_after_seconds('Wed, 21 Oct 2015 07:28:00 GMT') == 0.0


@pytest.mark.parametrize('body,ctype,expected', [
    (b'\xff\xfeh\x00i\x00', 'text/html; charset=utf-8', 'utf-16le'),    # BOM beats header
    (b'<meta charset="koi8-r">', 'text/html; charset=windows-1251', 'windows-1251'),
    (b'<meta charset="latin1">caf\xe9', None, 'windows-1252'),
    (b'<meta charset="bogus">', None, 'utf-8'),                          # detector
])
def test_encoding_sniff_order(body, ctype, expected):
    assert encoding.sniff(body, ctype) == expected


def test_kfbp_hash_matches_java_and_labels_land_where_planned():
    assert plan.kfbp_hash('hello') == 99162322             # Java "hello".hashCode()
    assert plan.kfbp_hash('polygenelubricants') == -2147483648   # Integer.MIN_VALUE
    for n in (1, 2, 7, 32):
        for p in range(n):
            assert plan.kfbp_partition(plan.label_for(p, n) + ' example.com', n) == p


def test_plan_balances_big_keys_better_than_hashing():
    # 6 big hosts and 200 small ones on 3 reducers; cost in seconds.
    costs = {'big%d.example' % i: 100.0 for i in range(6)}
    costs.update({'small%d.example' % i: 1.0 for i in range(200)})
    placed, loads = plan.place(costs, 3)
    assert set(placed) == {k for k in costs if k.startswith('big')}
    fair = sum(costs.values()) / 3
    assert max(loads) <= fair * 1.01
    hashed = [0.0] * 3
    for k, c in costs.items():
        hashed[plan.kfbp_partition(k, 3)] += c
    assert max(hashed) > max(loads)     # plain hashing piles big hosts together here
