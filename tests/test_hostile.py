"""The crawler against a hostile web (tests/hostile_site.py) and hostile input:
every fault ends in a status within its time and memory bounds and no URL is lost;
private addresses and other schemes are refused and counted; no XML entity is
resolved; configuration files are data; a full disk mid-crawl is one clear error."""
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import tracemalloc
import xml.etree.ElementTree as ET

import pytest

from drivers.fixtures.site import FixtureSite
from tests.hostile_site import HostileSite
from jobs.fetch import MRFetch
from jobs.lib import config, extract, fetcher, html, netpolicy, records as R, sitemaps, \
    sites, urls, xmlpage
from jobs.parse import MRParse
from tests.helpers import (ROOT, TEST_SETTINGS, check_one_doc_each, read_records,
                           run_job_at_delay as run, test_conf)

pytestmark = pytest.mark.unit

FAST = ['politeness.delay=0', 'fetch.read_timeout=0.5', 'fetch.connect_timeout=0.5',
        'fetch.max_request_seconds=1.5', 'fetch.retry_backoff=0.01', 'fetch.max_retries=1',
        'fetch.max_body_bytes=1000000', 'fetch.max_consecutive_failures=0']


@pytest.fixture
def hostile():
    with HostileSite() as s:
        yield s


def fetch(site, paths, *settings):
    """Fetch *paths* of *site* with one HostFetcher: one doc each, a status each."""
    hf = fetcher.HostFetcher(test_conf(*(FAST + list(settings))))
    items = [{'url': urls.normalize(site.url(p)), 'depth': 0} for p in paths]
    docs = list(hf.fetch(items))
    assert [d['url'] for d in docs] == [r['url'] for r in items]
    assert all(d['status'] in R.FETCH_STATUSES and (d['reason'] or
                                                    d['status'] == R.FETCH_FETCHED)
               for d in docs)
    for d in docs:
        json.dumps(d, ensure_ascii=False).encode('utf-8')   # a record the job can write
    return docs, hf


# -- each hostile server, bounded in time -------------------------------------------------

@pytest.mark.parametrize('path,status,reasons', [
    ('/hostile/silent', R.FETCH_NETWORK_ERROR, {'read_timeout'}),
    ('/hostile/trickle?every=0.2', R.FETCH_NETWORK_ERROR, {'time_limit'}),
    ('/hostile/reset-mid-body', R.FETCH_NETWORK_ERROR, {'connection_reset',
                                                        'protocol_error'}),
    ('/hostile/garbage?kind=text', R.FETCH_NETWORK_ERROR, {'protocol_error'}),
    ('/hostile/garbage?kind=binary', R.FETCH_NETWORK_ERROR, {'protocol_error'}),
    ('/hostile/garbage?kind=status', R.FETCH_NETWORK_ERROR, {'protocol_error'}),
    ('/hostile/garbage?kind=http09', R.FETCH_NETWORK_ERROR, {'protocol_error'}),
    ('/hostile/bad-chunk', R.FETCH_NETWORK_ERROR, {'protocol_error'}),
    ('/hostile/endless-chunked?every=0.05', R.FETCH_NETWORK_ERROR, {'time_limit'}),
    ('/hostile/declared?gb=10', R.FETCH_NETWORK_ERROR, {'protocol_error'}),
    ('/hostile/redirect-chain?n=50', R.FETCH_NETWORK_ERROR, {'too_many_redirects'}),
])
def test_hostile_server_ends_in_a_status_in_time(hostile, path, status, reasons):
    start = time.monotonic()
    (doc,), _ = fetch(hostile, [path])
    seconds = time.monotonic() - start
    assert (doc['status'], doc['reason']) in {(status, r) for r in reasons}, doc
    # Retries included (max_retries=1): at most two requests of 1.5 s each.
    assert seconds < 4.5, seconds
    assert doc['body'] is None


def test_invalid_headers_and_lengths_never_crash(hostile):
    docs, _ = fetch(hostile, ['/hostile/garbage?kind=header', '/hostile/garbage?kind=length'])
    for d in docs:
        assert d['status'] in (R.FETCH_FETCHED, R.FETCH_NETWORK_ERROR), d
        assert d['status'] != R.FETCH_FETCHED or d['length'] <= 100


@pytest.mark.parametrize('path', [
    '/hostile/big?mb=100',                       # 100 MB page
    '/hostile/declared?gb=10&send=1',            # 10 GB declared and streamed
    '/hostile/endless-chunked',                  # chunks as fast as the socket takes them
    '/hostile/links?n=1000000',                  # one page with a million links
    '/hostile/deflate-bomb?mb=1024',             # 1 GiB of zeros, deflate
])
def test_huge_bodies_are_cut_at_the_limit_in_bounded_memory(hostile, path):
    tracemalloc.start()
    start = time.monotonic()
    try:
        (doc,), _ = fetch(hostile, [path], 'fetch.max_body_bytes=2000000',
                          'fetch.max_request_seconds=10', 'fetch.read_timeout=5')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert doc['status'] == R.FETCH_FETCHED and doc['truncated'] is True, doc['reason']
    assert doc['length'] == 2000000
    assert peak < 40 * 1024 * 1024, peak        # a few copies of the 2 MB limit, no more
    assert time.monotonic() - start < 8


def test_double_gzip_is_not_inflated_twice(hostile):
    (doc,), _ = fetch(hostile, ['/hostile/double-gzip?mb=64'], 'fetch.max_body_bytes=200000')
    # urllib3 decodes both layers, still bounded by the body limit.
    assert doc['status'] == R.FETCH_FETCHED and doc['length'] <= 200000


@pytest.mark.parametrize('mode,status,reason', [
    ('huge', R.FETCH_ROBOTS_DENIED, 'disallowed'),    # the first 500 KiB still count
    ('binary', R.FETCH_FETCHED, None),                # no rule in noise: allowed
    ('redirect-loop', R.FETCH_DEFERRED, 'robots_too_many_redirects'),
    ('silent', R.FETCH_DEFERRED, 'robots_read_timeout'),
    ('gzip-bomb', R.FETCH_FETCHED, None),             # cut at 500 KiB of zeros
])
def test_hostile_robots_txt(mode, status, reason):
    with HostileSite(robots=mode) as s:
        start = time.monotonic()
        docs, hf = fetch(s, ['/private/x', '/hostile/ok'])
        assert time.monotonic() - start < 5
        if mode == 'huge' or mode == 'binary' or mode == 'gzip-bomb':
            allowed = mode != 'huge'
            assert docs[0]['status'] == (R.FETCH_FETCHED if allowed else status)
            assert docs[1]['status'] == R.FETCH_FETCHED
        else:
            assert [(d['status'], d['reason']) for d in docs] == [(status, reason)] * 2
            assert not [p for p in s.paths() if not p.startswith('/robots.txt')]
        assert hf.robots_fetches <= 6


def test_a_server_that_accepts_and_never_answers():
    with HostileSite(silent=True) as s:
        start = time.monotonic()
        docs, _ = fetch(s, ['/a', '/b', '/c'])
        assert time.monotonic() - start < 3          # one robots.txt try, not one per URL
        assert {(d['status'], d['reason']) for d in docs} == {
            (R.FETCH_DEFERRED, 'robots_read_timeout')}


# -- hostile pages through parse and the XML writer ---------------------------------------

def parse_page(body, url='http://h.example/p', ctype='text/html'):
    """A fetched body through the fetcher's decoding, MRParse.parse_doc and page_xml."""
    from jobs.lib import encoding
    text, enc = encoding.decode(body, ctype)
    job = MRParse(['--crawl-conf', ''])
    job._conf = test_conf()
    counts = {}
    job.count = lambda name, n=1: counts.__setitem__(name, counts.get(name, 0) + n)
    job.mapper_init_parse()
    doc = {'kind': 'doc', 'url': url, 'final_url': url, 'depth': 0, 'status': 'fetched',
           'http_status': 200, 'content_type': 'text/html', 'encoding': enc,
           'digest': 'sha1:x', 'headers': {}, 'body': text}
    page = job.parse_doc(doc)
    assert 'parse_error' not in page, page['parse_error']
    json.dumps(page, ensure_ascii=False).encode('utf-8')
    out = xmlpage.page_xml(dict(page, kind='merged', duplicates=[]))
    assert '\n' not in out and ET.fromstring(out).tag == 'page'
    return page, counts


def test_deeply_nested_page_parses_in_bounded_time():
    body = (b'<title>Deep</title>' + b'<div>' * 100000 +
            b'deep text <a href="/deep">link</a>' + b'</div>' * 100000)
    start = time.monotonic()
    page, _ = parse_page(body)
    # Lexbor alone needs minutes for this (quadratic in depth); html.limit_nesting
    # flattens what nests deeper than browsers allow.
    assert time.monotonic() - start < 10
    assert 'deep text' in page['text']
    assert [l['url'] for l in page['links']] == ['http://h.example/deep']
    assert html.limit_nesting('<div>' * 10) == '<div>' * 10          # small pages: as is


def test_a_million_links_page_cut_by_the_body_limit_parses_in_bounded_time():
    limit = test_conf()['fetch']['max_body_bytes']
    body = ''.join('<a href="/l/%d">link %d</a>\n' % (i, i) for i in range(1000000))
    body = body.encode()[:limit]
    start = time.monotonic()
    page, counts = parse_page(body)
    assert time.monotonic() - start < 20
    cap = test_conf()['parse']['max_links_per_page']
    assert len(page['links']) == cap
    assert counts['links_found_total'] > 100000
    assert counts['links_found_total'] == counts['links_kept_total'] + sum(
        n for k, n in counts.items() if k.startswith('link_rejected_'))


@pytest.mark.parametrize('path', ['/hostile/binary', '/hostile/charset?kind=bad-utf8',
                                  '/hostile/charset?kind=mixed',
                                  '/hostile/charset?kind=utf16-lie',
                                  '/hostile/charset?kind=utf7', '/hostile/charset?kind=nul'])
def test_binary_and_broken_charsets_fetch_and_parse(hostile, path):
    (doc,), _ = fetch(hostile, [path])
    assert doc['status'] == R.FETCH_FETCHED and doc['encoding']
    assert isinstance(doc['body'], str)
    doc['body'].encode('utf-8')                   # no lone surrogates
    parse_page(doc['body'].encode('utf-8'), ctype='text/html; charset=utf-8')
    if 'utf7' in path:
        # UTF-7 is not a WHATWG encoding: never decoded as such (no "+ADw-" script).
        assert doc['encoding'] != 'utf-7' and '<script>' not in doc['body']


# -- SSRF: private addresses in every spelling, by redirect, by DNS name -----------------

SPELLINGS = ['http://2130706433:{port}/', 'http://0177.0.0.1:{port}/',
             'http://0x7f.0.0.1:{port}/', 'http://0x7f000001:{port}/', 'http://127.1:{port}/',
             'http://[::ffff:127.0.0.1]:{port}/', 'http://[::1]:{port}/',
             'http://[0:0:0:0:0:ffff:7f00:1]:{port}/', 'http://127.0.0.1.:{port}/',
             'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/',
             'http://224.0.0.1/', 'http://[ff02::1]/', 'http://10.0.0.1/',
             'http://192.168.0.1/', 'http://172.16.0.1/', 'http://100.64.0.1/',
             'http://0.0.0.0:{port}/', 'http://[::]:{port}/', 'http://255.255.255.255/',
             'http://localhost:{port}/', 'http://LOCALHOST:{port}/']


@pytest.mark.job
def test_private_addresses_refused_and_counted_in_every_spelling(tmp_path):
    with FixtureSite('127.0.0.1') as site:
        records = [{'kind': 'url', 'url': u.format(port=site.port), 'depth': 0}
                   for u in SPELLINGS]
        docs, counters = run(MRFetch, tmp_path, records,
                             'security.allow_private_networks=false', *FAST)
        # The mapper normalises each URL (numeric hosts become dotted addresses).
        assert sorted(d['url'] for d in docs) == sorted(urls.normalize(r['url'])
                                                        for r in records)
        assert counters['fetch']['urls_in_total'] == len(records)
        bad = [(d['url'], d['status'], d['reason']) for d in docs
               if (d['status'], d['reason']) != (R.FETCH_FILTERED, 'private_address')]
        assert bad == []
        assert counters['fetch']['fetch_filtered_private_address_total'] == len(SPELLINGS)
        assert site.requests == []
    # What the mapper saw: numeric spellings are read as the address they are.
    assert urls.normalize('http://2130706433/') == 'http://127.0.0.1/'
    assert urls.normalize('http://0177.0.0.1/') == 'http://127.0.0.1/'
    assert urls.normalize('http://0x7f.0.0.1/') == 'http://127.0.0.1/'


@pytest.fixture
def public_127_0_0_2(monkeypatch):
    """Treat 127.0.0.2 as a public address (the 'allowed' server), nothing else."""
    real = netpolicy.ip_is_public

    def policy(ip):
        if str(ip) == '127.0.0.2':
            return True
        return real(ip)
    monkeypatch.setattr(netpolicy, 'ip_is_public', policy)


@pytest.mark.job
def test_redirect_from_an_allowed_server_to_loopback_is_refused(public_127_0_0_2, tmp_path):
    with FixtureSite('127.0.0.2') as allowed, FixtureSite('127.0.0.1') as inside:
        for target in (inside.url('/a.html'), 'http://localhost:%d/a.html' % inside.port,
                       'http://2130706433:%d/a.html' % inside.port):
            # Cross-key: recorded, and the target goes to the next layer ...
            docs, counters = run(MRFetch, tmp_path, [
                {'kind': 'url', 'url': allowed.url('/fault/redirect?to=' + target)}],
                'security.allow_private_networks=false', *FAST)
            assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_REDIRECTED, 'cross_key')
            # ... where it is refused like any in/ URL.
            docs, counters = run(MRFetch, tmp_path, [
                {'kind': 'url', 'url': docs[0]['final_url']}],
                'security.allow_private_networks=false', *FAST)
            assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_FILTERED,
                                                              'private_address')
            assert counters['fetch']['fetch_filtered_private_address_total'] == 1
        assert inside.requests == []
        assert allowed.paths()[0] == '/robots.txt'


class _Names(netpolicy.Resolver):
    """A resolver with a fake zone: names of one registered domain, two addresses."""

    def __init__(self, zone):
        super().__init__()
        self.zone = zone

    def lookup(self, host, port):
        if host in self.zone:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, '', (self.zone[host], port))]
        return super().lookup(host, port)


@pytest.mark.parametrize('obey_robots', ['true', 'false'])
def test_same_key_redirect_to_a_name_on_loopback_is_refused(public_127_0_0_2, obey_robots):
    """DNS rebinding style: www. and internal. share the politeness key (domain), so the
    hop is followed in this layer; the address check on the hop refuses it."""
    with FixtureSite('127.0.0.2') as allowed, FixtureSite('127.0.0.1') as inside:
        names = _Names({'www.rebind.test': '127.0.0.2', 'internal.rebind.test': '127.0.0.1'})
        target = 'http://internal.rebind.test:%d/a.html' % inside.port
        url = 'http://www.rebind.test:%d/fault/redirect?to=%s' % (allowed.port, target)
        hf = fetcher.HostFetcher(test_conf(*FAST, 'security.allow_private_networks=false',
                                           'politeness.key=domain',
                                           'politeness.obey_robots=' + obey_robots),
                                 resolver=names)
        (doc,) = hf.fetch([{'url': urls.normalize(url)}])
        assert (doc['status'], doc['reason']) == (R.FETCH_FILTERED, 'private_address'), doc
        assert inside.requests == []


# -- schemes other than http(s) -------------------------------------------------------------

OTHER_SCHEMES = ['file:///etc/passwd', 'ftp://127.0.0.1/file', 'gopher://127.0.0.1:70/_x',
                 'data:text/html,<a href=x>', 'javascript:alert(1)', 'FILE:///etc/hosts',
                 'mailto:a@b.example', 'ws://127.0.0.1/']


@pytest.mark.job
def test_other_schemes_are_never_fetched_and_are_counted(tmp_path):
    with FixtureSite('127.0.0.2') as site:
        records = [{'kind': 'url', 'url': u, 'depth': 0} for u in OTHER_SCHEMES]
        records += [{'kind': 'url', 'url': site.url('/fault/redirect?to=' +
                                                      urllib_quote(u)), 'depth': 0}
                    for u in OTHER_SCHEMES]
        docs, counters = run(MRFetch, tmp_path, records)
        check_one_doc_each(records, docs, counters)
        by_url = {d['url']: d for d in docs}
        for u in OTHER_SCHEMES:
            assert (by_url[u]['status'], by_url[u]['reason']) == (R.FETCH_FILTERED, 'bad_url')
        redirects = [d for d in docs if d['url'].startswith('http')]
        assert {(d['status'], d['reason']) for d in redirects} == {
            (R.FETCH_HTTP_ERROR, 'bad_redirect')}
        c = counters['fetch']
        assert c['fetch_filtered_bad_url_total'] == len(OTHER_SCHEMES)
        assert c['fetch_http_error_bad_redirect_total'] == len(OTHER_SCHEMES)
    links = ''.join('<a href="%s">x</a><iframe src="%s"></iframe>' % (u, u)
                    for u in OTHER_SCHEMES)
    page, counts = parse_page(('<meta http-equiv=refresh content="0;url=javascript:x">' +
                               links).encode())
    assert page['links'] == []
    assert counts['link_rejected_scheme_total'] == 2 * len(OTHER_SCHEMES) + 1


def urllib_quote(u):
    import urllib.parse
    return urllib.parse.quote(u, safe='')


# -- XML: no entity is ever resolved -----------------------------------------------------

def test_sitemaps_resolve_no_external_entity_and_load_no_dtd(tmp_path):
    secret = tmp_path / 'secret.txt'
    secret.write_text('TOP-SECRET-42')
    with FixtureSite('127.0.0.1') as dtd_server:
        doc = textwrap.dedent('''\
            <?xml version="1.0"?>
            <!DOCTYPE urlset SYSTEM "DTD" [
              <!ENTITY xxe SYSTEM "file://SECRET">
              <!ENTITY % remote SYSTEM "PARAM">
              %remote;
              <!ENTITY lol "lol">
              <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
              <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
            ]>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
                    xmlns:xi="http://www.w3.org/2001/XInclude">
              <url><loc>http://h.example/&xxe;</loc><lastmod>&xxe;</lastmod></url>
              <url><loc>http://h.example/&lol3;</loc></url>
              <url><loc>http://h.example/ok</loc><xi:include href="file://SECRET" parse="text"/></url>
            </urlset>''').replace('SECRET', str(secret)).replace(
            'DTD', dtd_server.url('/evil.dtd')).replace('PARAM', dtd_server.url('/param.dtd'))
        start = time.monotonic()
        kind, entries = sitemaps.parse(doc.encode())
        assert time.monotonic() - start < 1
        assert dtd_server.requests == []            # no DTD, no parameter entity fetched
    dumped = json.dumps(entries)
    assert 'TOP-SECRET' not in dumped
    assert 'lollollol' not in dumped
    assert kind == 'urlset' and 'http://h.example/ok' in [e['loc'] for e in entries]


def test_site_extraction_resolves_no_entity(tmp_path):
    secret = tmp_path / 'secret.txt'
    secret.write_text('TOP-SECRET-43')
    body = ('<!DOCTYPE html [<!ENTITY x SYSTEM "file://%s">]><html><body>'
            '<h1 class="title">Film &x;</h1></body></html>' % secret)
    page = extract.Page(body, 'http://films.example/film/1')
    fields, _ = extract.extract_fields(page, {
        'T': {'xpath': '//h1', 'type': 'text', 'formats': [], 'required': False},
        'C': {'css': 'h1.title', 'type': 'text', 'formats': [], 'required': False}})
    assert 'TOP-SECRET' not in json.dumps(fields) and 'Film' in fields['T']


# -- configuration and site files are data ------------------------------------------------

def test_config_files_are_data_never_code(tmp_path):
    marker = tmp_path / 'pwned'
    code = "__import__('os').system('touch %s')" % marker
    conf_file = tmp_path / 'site.toml'
    conf_file.write_text('[politeness]\nuser_agent = "%s"\n' % code.replace('"', '\\"'))
    conf = config.load(str(conf_file))
    assert conf['politeness']['user_agent'] == code and not marker.exists()
    with pytest.raises(config.ConfigError) as e:
        config.load(overrides=['politeness.delay=__import__("os").getpid()'])
    assert 'politeness.delay' in str(e.value)
    conf = config.load(overrides=['politeness.user_agent=${HOME} $(id) `id` {0}'])
    assert conf['politeness']['user_agent'] == '${HOME} $(id) `id` {0}'
    site = tmp_path / 'evil.toml'
    site.write_text('[site]\nhosts = ["x.example"]\n[fields.T]\ncss = "h1"\n'
                    'type = "__import__(\'os\').system(\'touch %s\')"\n' % marker)
    with pytest.raises(sites.SiteConfigError) as e:
        sites.load_file(str(site))
    assert str(site) in str(e.value) and 'fields.T.type' in str(e.value)
    assert not marker.exists()


@pytest.mark.parametrize('text,key', [
    ('[fetch]\nthreads = "32"\n', 'fetch.threads'),
    ('[fetch]\nthreads = 0\n', 'fetch.threads'),
    ('[politeness]\ndelay = -1\n', 'politeness.delay'),
    ('[politeness]\ndelay = inf\n', 'politeness.delay'),
    ('[politeness]\ndelay = nan\n', 'politeness.delay'),
    ('[security]\nallow_private_networks = "yes"\n', 'security.allow_private_networks'),
    ('[filter]\nexclude = ["("]\n', 'filter.exclude'),
    ('politeness = 3\n', 'politeness'),
])
def test_bad_config_values_name_the_key_and_the_file(tmp_path, text, key):
    path = tmp_path / 'bad.toml'
    path.write_text(text)
    with pytest.raises(config.ConfigError) as e:
        config.load(str(path))
    assert key in str(e.value) and str(path) in str(e.value), str(e.value)


@pytest.mark.parametrize('text,key', [
    ('[site]\nhosts = [1]\n', 'hosts'),
    ('[site]\nhosts = ["a"]\n[fields.T]\ncss = "h1"\ntype = "code"\n', 'fields.T.type'),
    ('[site]\nhosts = ["a"]\n[fields.T]\nregex = "("\n', 'fields.T.regex'),
    ('[site]\nhosts = ["a"]\nrefetch_interval = "soon"\n', 'refetch_interval'),
    ('[site]\nhosts = ["a"]\n[links]\nfollow = "(["\n', 'links.follow'),
])
def test_bad_site_file_values_name_the_key_and_the_file(tmp_path, text, key):
    path = tmp_path / 'bad-site.toml'
    path.write_text(text)
    with pytest.raises(sites.SiteConfigError) as e:
        sites.load_file(str(path))
    assert key in str(e.value) and str(path) in str(e.value), str(e.value)


# -- a full disk or an unwritable output folder in the middle of a crawl ------------------

#: Runs the mrcrawl command; when layer 001 is about to start (layer 000 complete), it
#: makes the output unwritable: "fsize" sets RLIMIT_FSIZE to 0 for the process, so
#: every write to a regular file fails (EFBIG) as on a full disk, root included;
#: "blocked" replaces OUT/tmp, where each step writes, by a regular file (chmod does
#: not stop root). Python ignores SIGXFSZ, so the writes fail with an error.
_WRAPPER = '''
import os, resource, sys
import drivers.cli.main as cli
mode, out = sys.argv[1], sys.argv[2]
real = cli._print
def progress(msg):
    real(msg)
    if msg.startswith('layer 001:'):
        if mode == 'fsize':
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
        else:
            import shutil
            shutil.rmtree(os.path.join(out, 'tmp'), ignore_errors=True)
            with open(os.path.join(out, 'tmp'), 'w') as f:
                f.write('in the way')
cli._print = progress
sys.exit(cli.main(sys.argv[3:]))
'''


def _tree(folder):
    """{relative path: bytes} of every file under *folder*."""
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(d, f)
            with open(p, 'rb') as fh:
                out[os.path.relpath(p, folder)] = fh.read()
    return out


@pytest.mark.crawl
@pytest.mark.parametrize('mode', ['fsize', 'blocked'])
def test_disk_full_mid_crawl_is_one_clear_error_and_layers_stay(site, tmp_path, mode):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text(site.url('/') + '\n')
    out = tmp_path / 'out'
    args = ['crawl', '--seeds', str(seeds), '--depth', '2', '--out', str(out), '-r', 'inline']
    for s in TEST_SETTINGS + ['politeness.delay=0.02']:
        args += ['--set', s]
    res = subprocess.run([sys.executable, '-c', _WRAPPER, mode, str(out)] + args, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert 'Traceback' not in res.stderr, res.stderr
    first = res.stderr.strip().splitlines()[0]
    assert first.startswith('mrcrawl: step ') and ' failed: ' in first, first
    assert ('File too large' in first) if mode == 'fsize' else ('Not a directory' in first
                                                               or 'exists' in first), first
    # Layer 000 is complete and intact: its steps, records and state.
    state = json.loads((out / 'state.json').read_text())
    assert state['last_completed_step'] == 'generate-001'
    for step in ('fetch-000', 'optimize-000', 'generate-001'):   # fetch parses
        assert (out / 'steps' / (step + '.json')).exists()
    pages = read_records(str(out / 'out' / '000'))
    assert [d['url'] for d in pages] == [site.url('/')] and pages[0]['status'] == 'fetched'
    assert len(read_records(str(out / 'in' / '001'))) > 3
    assert not (out / 'out' / '001').exists()
    before = _tree(str(out / 'out')), _tree(str(out / 'crawldb'))
    # Once there is room again, the same command continues from there.
    if mode == 'blocked':
        os.remove(out / 'tmp')
    res = subprocess.run([sys.executable, '-m', 'drivers.cli'] + args + ['-q'], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert _tree(str(out / 'out' / '000')) == {k[4:]: v for k, v in before[0].items()
                                               if k.startswith('000/')}
    assert (out / 'xml').is_dir() and (out / 'out' / '002').is_dir()


# -- a whole crawl through traps and hostile endpoints ------------------------------------

@pytest.mark.crawl
def test_crawl_through_traps_finishes_with_every_url_accounted_for(tmp_path):
    from drivers.crawl import Crawl
    with HostileSite() as s:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text('\n'.join(s.url(p) for p in [
            '/hostile/calendar?d=2026-11', '/hostile/session', '/hostile/silent',
            '/hostile/garbage?kind=binary', '/hostile/redirect-chain?n=50',
            '/hostile/nested?n=100000', '/hostile/redirect?to=file:///etc/passwd']) + '\n')
        conf = sites.resolve(test_conf(*FAST))
        start = time.monotonic()
        report = Crawl(str(tmp_path / 'out'), conf, runner='inline', depth=3,
                       progress=lambda m: None).run(str(seeds))
        assert time.monotonic() - start < 40
        out = tmp_path / 'out'
        for layer in sorted(os.listdir(out / 'in')):
            ins = [r['url'] for r in read_records(str(out / 'in' / layer))]
            pages = [d['url'] for d in read_records(str(out / 'out' / layer))]
            assert sorted(pages) == sorted(ins), layer          # one page per in/ URL
            assert len(set(pages)) == len(pages)
        # The session trap is one page (jsessionid stripped) plus its two ?page= links;
        # the calendar grows by two months per layer, never past the depth.
        fetched = [p for p in s.paths() if p.startswith('/hostile/session')]
        assert len(fetched) == len(set(fetched)) <= 3
        months = {p for p in s.paths() if p.startswith('/hostile/calendar')}
        assert len(months) == 7                                  # 2026-11 +- 3 months
        assert len(report['layers']) == 4
