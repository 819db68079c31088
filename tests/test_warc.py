"""WARC output (warc.enabled): files read back with warcio and its CLI, payloads against
what the fixture server serves, the Parquet index's offsets, revisits on re-crawl, and
one file per map split that a rerun replaces instead of duplicating."""
import base64
import glob
import gzip
import hashlib
import http.client
import io
import json
import os
import re
import subprocess
import sys
from urllib.parse import urlsplit

import pyarrow.dataset as ds
import pytest
from warcio.archiveiterator import ArchiveIterator

from drivers.crawl import Crawl
from drivers.fixtures.site import FixtureSite, html_page
from jobs.lib import records as R, taskfiles, warcfile
from jobs.warc import MRWarc
from tests.helpers import at, crawl_site, read_records, test_conf
from drivers.runtime.launch import make_runner

pytestmark = pytest.mark.unit

WARCIO = os.path.join(os.path.dirname(sys.executable), 'warcio')
SETTINGS = ('warc.enabled=true', 'politeness.delay=0.05')


def sha1_b32(data):
    return 'sha1:' + base64.b32encode(hashlib.sha1(data).digest()).decode('ascii')


def served(site, url):
    """(status, body bytes) the fixture server answers for *url*, asked directly."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(site.host, site.port, timeout=5)
    try:
        conn.request('GET', parts.path + ('?' + parts.query if parts.query else ''))
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def read_warc(path):
    """Every record of a WARC file: dicts with type, headers, http status, payload."""
    out = []
    with open(path, 'rb') as f:
        for rec in ArchiveIterator(f):
            out.append({'type': rec.rec_type, 'h': dict(rec.rec_headers.headers),
                        'status': rec.http_headers.get_statuscode() if rec.http_headers
                        else None,
                        'http': rec.http_headers, 'payload': rec.content_stream().read()})
    return out


def warcio_cli(*args):
    return subprocess.run([WARCIO] + list(args), capture_output=True, text=True, timeout=120)


def docs_of(out, folder='out'):
    """The fetch's output records of every layer: out/ (the fetch parses, fetch.parse;
    with WARC on its page records keep the body and the HTTP exchange)."""
    return [d for layer in sorted(os.listdir(os.path.join(out, folder)))
            for d in read_records(os.path.join(out, folder, layer))]


@pytest.fixture(scope='module')
def crawled(tmp_path_factory):
    """The fixture site crawled to depth 3 with WARC on (inline runner)."""
    tmp = tmp_path_factory.mktemp('warc')
    with FixtureSite() as site:
        out, report = crawl_site(site, tmp, test_conf(*SETTINGS), depth=3)
        yield site, out, report


def test_warc_files_hold_a_request_and_response_per_fetched_url(crawled):
    site, out, report = crawled
    files = sorted(glob.glob(os.path.join(out, 'warc', '*.warc.gz')))
    assert files and not glob.glob(os.path.join(out, 'warc', '.tmp-*'))
    records = {f: read_warc(f) for f in files}

    # A standard tool agrees: every record's block and payload digest checks out.
    check = warcio_cli('check', '-v', *files)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count('digest pass') >= sum(len(r) for r in records.values())
    assert 'fail' not in check.stdout
    indexed = [json.loads(line) for line in warcio_cli(
        'index', '-f', 'warc-type,warc-target-uri,offset,length', *files).stdout.splitlines()]
    assert len(indexed) == sum(len(r) for r in records.values())

    responses, requests = {}, {}
    for name, recs in records.items():
        assert recs[0]['type'] == 'warcinfo'           # each file starts with warcinfo
        assert recs[0]['h']['WARC-Filename'] == os.path.basename(name)
        assert all(r['h'].get('WARC-Type') for r in recs)
        for r in recs:
            assert r['h'].get('WARC-Record-ID')
            if r['type'] == 'response':
                assert r['h']['WARC-Target-URI'] not in responses
                responses[r['h']['WARC-Target-URI']] = r
            elif r['type'] == 'request':
                requests[r['h']['WARC-Concurrent-To']] = r
    with open(files[0], 'rb') as f:
        assert f.read(2) == b'\x1f\x8b'                 # gzip
    # Layer 0: the seed's response and its host's robots.txt response.
    assert report['layers'][0]['warc']['records_response_total'] == 2
    assert report['layers'][0]['warc']['robots_txt_archived_total'] == 1
    # The fetch archived its own responses: one file per reduce task, no job of its own.
    assert all(re.match(r'mrcrawl-L\d{3}-f\d{5}\.warc\.gz$', os.path.basename(f))
               for f in files)
    assert not glob.glob(os.path.join(out, 'steps', 'warc-*.json'))
    assert all('body' not in d and 'http' not in d for d in docs_of(out))

    docs = docs_of(out)
    archived = [d for d in docs if d['status'] in (R.FETCH_FETCHED, R.FETCH_HTTP_ERROR)]
    skipped = [d for d in docs if d not in archived]
    base = site.url('')
    # Besides the final responses: robots.txt and the redirect (test below).
    extra = {base + '/robots.txt', base + '/redirect'}
    assert sorted(responses) == sorted([d['final_url'] for d in archived] + list(extra))
    assert skipped and all(d['final_url'] not in responses or d['status'] ==
                           R.FETCH_REDIRECTED for d in skipped)
    for doc in archived:
        resp = responses[doc['final_url']]
        assert resp['status'] == str(doc['http_status'])
        assert resp['h']['WARC-Date'] == doc['fetch_time']
        req = requests[resp['h']['WARC-Record-ID']]          # its request, paired
        assert req['h']['WARC-Target-URI'] == doc['final_url']
        assert req['http'].protocol == 'GET'         # warcio: method, then "PATH HTTP/1.1"
        assert req['http'].statusline == urlsplit(doc['final_url']).path + ' HTTP/1.1'
        assert req['http'].get_header('Host') == urlsplit(doc['final_url']).netloc
        assert req['http'].get_header('User-Agent').startswith('mrcrawl/')
        # The payload is what the server serves, byte for byte, and its digest checks.
        assert resp['h']['WARC-Payload-Digest'] == sha1_b32(resp['payload'])
        assert resp['http'].get_header('Content-Length') == str(len(resp['payload']))
        assert resp['http'].get_header('Content-Encoding') is None
        status, body = served(site, doc['final_url'])
        assert status == doc['http_status']
        if doc['status'] == R.FETCH_FETCHED and doc['content_type'] == 'text/html':
            assert resp['payload'] == body, doc['url']
            assert resp['h']['WARC-Payload-Digest'] == doc['digest']
            assert 'WARC-Truncated' not in resp['h']
        else:       # 404 and image/png: the fetch does not read these bodies
            assert resp['payload'] == b'' and resp['h']['WARC-Truncated'] == 'unspecified'
    latin1 = responses[base + '/latin1.html']
    assert latin1['payload'].decode('latin-1').startswith('<html><head><title>Caf\xe9')
    assert latin1['http'].get_header('Content-Type') == 'text/html; charset=iso-8859-1'
    assert responses[base + '/missing']['status'] == '404'
    # The redirect: its final response is archived under the target URL, the 301
    # under its own.
    assert base + '/c.html' in responses and responses[base + '/redirect']['status'] == '301'

    # Counters: records by type, skipped by status, bytes = the files' sizes.
    totals = {}
    for row in report['layers']:
        for k, v in row['warc'].items():
            totals[k] = totals.get(k, 0) + v
    assert totals['records_response_total'] == len(archived) + len(extra)
    assert totals['records_request_total'] == len(archived) + len(extra)
    assert totals['robots_txt_archived_total'] == totals['redirects_archived_total'] == 1
    assert totals['records_warcinfo_total'] == totals['files_total'] == len(files)
    assert totals['bytes_total'] == sum(os.path.getsize(f) for f in files)
    assert totals['skipped_robots_denied_total'] == sum(
        d['status'] == R.FETCH_ROBOTS_DENIED for d in docs)
    assert 'headers_rebuilt_total' not in totals and 'payload_not_verbatim_total' not in totals


def test_robots_txt_and_redirects_are_archived_with_their_requests(crawled):
    """As Heritrix: robots.txt's response and each 3xx are response records with their
    request records; every file still passes `warcio check`, and each page's WARC
    position still opens its own final response."""
    site, out, report = crawled
    from drivers.fixtures.site import ROBOTS
    files = sorted(glob.glob(os.path.join(out, 'warc', '*.warc.gz')))
    for name in files:
        check = warcio_cli('check', '-v', name)
        assert check.returncode == 0 and 'fail' not in check.stdout, check.stdout
    records = [r for name in files for r in read_warc(name)]
    by_uri = {}
    for r in records:
        if r['type'] in ('response', 'request'):
            by_uri.setdefault((r['h']['WARC-Target-URI'], r['type']), []).append(r)
    requests = {r['h']['WARC-Concurrent-To']: r for r in records if r['type'] == 'request'}

    robots_url, redirect_url = site.url('/robots.txt'), site.url('/redirect')
    [robots] = by_uri[(robots_url, 'response')]       # read once per crawl cycle
    assert robots['status'] == '200' and robots['payload'] == ROBOTS
    assert robots['http'].get_header('Content-Type') == 'text/plain'
    assert robots['h']['WARC-Payload-Digest'] == sha1_b32(ROBOTS)
    [redirect] = by_uri[(redirect_url, 'response')]
    assert redirect['status'] == '301' and redirect['payload'] == b''
    assert redirect['http'].get_header('Location') == '/c.html'
    assert 'WARC-Truncated' not in redirect['h'] and 'WARC-Truncated' not in robots['h']
    for resp, path in ((robots, '/robots.txt'), (redirect, '/redirect')):
        req = requests[resp['h']['WARC-Record-ID']]       # paired, as a page's
        assert req['h']['WARC-Target-URI'] == resp['h']['WARC-Target-URI']
        assert req['h']['WARC-Date'] == resp['h']['WARC-Date']
        assert req['http'].protocol == 'GET' and req['http'].statusline == path + ' HTTP/1.1'
        assert req['http'].get_header('User-Agent').startswith('mrcrawl/')
        assert req['http'].get_header('Host') == urlsplit(robots_url).netloc
    # The server's log: one request each, as archived.
    assert [r['path'] for r in site.requests].count('/robots.txt') == 1
    assert [r['path'] for r in site.requests].count('/redirect') == 1
    # No request record names a credential.
    for r in records:
        if r['type'] == 'request':
            assert not {'authorization', 'cookie', 'proxy-authorization'} & {
                k.lower() for k, _ in r['http'].headers}

    # Each page's position (out/) opens its own final response, not a 3xx or robots.txt.
    pages = [d for d in docs_of(out) if d.get('warc_record_offset') is not None]
    assert any(d['url'] == redirect_url for d in pages)
    for doc in pages:
        with open(os.path.join(out, doc['warc_filename']), 'rb') as f:
            f.seek(doc['warc_record_offset'])
            [rec] = list(ArchiveIterator(io.BytesIO(f.read(doc['warc_record_length']))))
        assert rec.rec_type == doc['warc_type'] == 'response'
        assert rec.rec_headers.get_header('WARC-Target-URI') == doc['final_url']
        assert rec.http_headers.get_statuscode() == str(doc['http_status'])
    assert next(d for d in pages if d['url'] == redirect_url)['final_url'] == \
        site.url('/c.html')


def test_exchanges_are_written_before_the_doc_without_credentials(tmp_path):
    """warcfile.Sink: a doc's robots.txt and redirect responses (body read, cut, or not
    read) and their requests, credential headers left out, the doc's pointer at its own
    response; a skipped doc still archives them."""
    import requests as rq
    from jobs.lib import httpio
    sent = rq.Request('GET', 'http://h.test/r', headers={
        'User-Agent': 'ua/1', 'Authorization': 'Basic c2VjcmV0', 'Cookie': 'sid=secret',
        'Proxy-Authorization': 'secret'}).prepare()
    resp = rq.Response()
    resp.status_code, resp.reason, resp.request = 302, 'Found', sent
    resp.headers.update({'Location': '/final', 'Content-Length': '5'})
    exchange = httpio.http_exchange(resp)
    assert [k for k, _ in exchange['request']['headers']] == ['User-Agent']

    def with_secrets(ex):        # as an older doc might hold them
        ex = json.loads(json.dumps(ex))
        ex['request']['headers'] += [['Cookie', 'sid=secret'], ['Authorization', 'x']]
        return ex
    when = '2026-11-30T08:00:00Z'
    robots = dict(exchange, reason='Not Found', headers=[['Content-Type', 'text/plain']],
                  request=dict(exchange['request'], path='/robots.txt'))
    doc = {'kind': 'doc', 'url': 'http://h.test/r', 'final_url': 'http://h.test/final',
           'status': 'fetched', 'http_status': 200, 'content_type': 'text/html',
           'fetch_time': when, 'body': '<p>x</p>', 'encoding': 'utf-8', 'length': 8,
           'truncated': False, 'digest': sha1_b32(b'<p>x</p>'),
           'http': with_secrets(dict(exchange, reason='OK', headers=[])),
           'warc_exchanges': [
               {'kind': 'robots', 'url': 'http://h.test/robots.txt', 'fetch_time': when,
                'http_status': 404, 'http': with_secrets(robots), 'body': None,
                'truncated': False},
               {'kind': 'redirect', 'url': 'http://h.test/r', 'fetch_time': when,
                'http_status': 302, 'http': with_secrets(exchange),
                'body': base64.b64encode(b'moved').decode(), 'truncated': True}]}
    denied = {'kind': 'doc', 'url': 'http://h.test/no', 'status': 'robots_denied',
              'fetch_time': when, 'warc_exchanges': [dict(doc['warc_exchanges'][1],
                                                         url='http://h.test/no')]}
    counts = {}
    sink = warcfile.Sink(str(tmp_path), 'x.warc.gz', 'x', {'software': 't'},
                         lambda k, n: counts.__setitem__(k, counts.get(k, 0) + n))
    pointer = sink.add(doc, 'ua/1')
    assert sink.add(denied, 'ua/1') is None
    sink.commit()
    path = str(tmp_path / 'x.warc.gz')
    check = warcio_cli('check', '-v', path)
    assert check.returncode == 0 and 'fail' not in check.stdout, check.stdout
    recs = read_warc(path)
    # (a request's "status" is its path: warcio reads "GET PATH HTTP/1.1")
    assert [(r['type'], r['h'].get('WARC-Target-URI'), r['status']) for r in recs] == [
        ('warcinfo', None, None),
        ('response', 'http://h.test/robots.txt', '404'),
        ('request', 'http://h.test/robots.txt', '/robots.txt'),
        ('response', 'http://h.test/r', '302'), ('request', 'http://h.test/r', '/r'),
        ('response', 'http://h.test/final', '200'), ('request', 'http://h.test/final', '/r'),
        ('response', 'http://h.test/no', '302'), ('request', 'http://h.test/no', '/r')]
    assert recs[1]['h']['WARC-Truncated'] == 'unspecified' and recs[1]['payload'] == b''
    assert recs[3]['h']['WARC-Truncated'] == 'length' and recs[3]['payload'] == b'moved'
    assert recs[3]['http'].get_header('Location') == '/final'
    ids = {r['h']['WARC-Record-ID'] for r in recs}
    assert len(ids) == len(recs)
    for resp_rec, req in zip(recs[1::2], recs[2::2]):
        assert req['h']['WARC-Concurrent-To'] == resp_rec['h']['WARC-Record-ID']
        names = {k.lower() for k, _ in req['http'].headers}
        assert names == {'host', 'user-agent'}, names
    with open(path, 'rb') as f:
        raw = gzip.decompress(f.read())      # every member: all the records' bytes
    assert b'secret' not in raw and b'c2VjcmV0' not in raw
    assert warcfile.read_payload(str(tmp_path), dict(pointer, warc_filename='x.warc.gz')) \
        == (b'<p>x</p>', None)
    assert counts['robots_txt_archived_total'] == 1 and counts['redirects_archived_total'] == 2
    assert counts['records_response_total'] == counts['records_request_total'] == 4
    assert counts['truncated_unspecified_total'] == 1 and counts['truncated_length_total'] == 2
    assert counts['skipped_robots_denied_total'] == 1 and counts['response_total'] == 1


def test_parquet_index_points_at_each_urls_response_record(crawled):
    site, out, _ = crawled
    rows = ds.dataset(os.path.join(out, 'index'), format='parquet',
                      partitioning='hive').to_table().to_pylist()
    with_warc = [r for r in rows if r['warc_filename']]
    assert len(with_warc) == sum(r['status'] in (R.FETCH_FETCHED, R.FETCH_HTTP_ERROR)
                                 for r in rows) > 10
    for row in rows:
        if not row['warc_filename']:
            assert row['status'] not in (R.FETCH_FETCHED, R.FETCH_HTTP_ERROR)
            assert row['warc_record_offset'] is None
            continue
        assert row['warc_filename'].startswith('warc/mrcrawl-L%03d-' % row['layer'])
        with open(os.path.join(out, row['warc_filename']), 'rb') as f:
            f.seek(row['warc_record_offset'])
            chunk = f.read(row['warc_record_length'])
        recs = list(ArchiveIterator(io.BytesIO(chunk)))
        assert len(recs) == 1                  # exactly one gzip member: one record
        rec = recs[0]
        assert rec.rec_type == 'response'
        assert rec.rec_headers.get_header('WARC-Target-URI') == row['final_url']
        assert rec.http_headers.get_statuscode() == str(row['http_status'])
        if row['digest']:
            assert rec.rec_headers.get_header('WARC-Payload-Digest') == row['digest']


@pytest.mark.crawl
def test_recrawl_writes_revisit_records_for_unchanged_pages(site, tmp_path):
    conf = test_conf(*SETTINGS)
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    first_files = set(glob.glob(os.path.join(out, 'warc', '*.warc.gz')))
    originals = {}       # (target URI, WARC-Date) -> response record
    for f in first_files:
        for r in read_warc(f):
            if r['type'] == 'response':
                originals[(r['h']['WARC-Target-URI'], r['h']['WARC-Date'])] = r

    site.overrides['/a.html'] = html_page('Page A, new edition', '<p>changed</p>')
    site.overrides['/dup.html'] = None
    # The next cycle (`mrcrawl recrawl`): its first layer is layer 2.
    Crawl(out, conf, runner='inline', depth=None, progress=lambda m: None).run(None, at(8))
    new_files = set(glob.glob(os.path.join(out, 'warc', '*.warc.gz'))) - first_files
    assert new_files and all(os.path.basename(f).startswith('mrcrawl-L002-')
                             for f in new_files)
    check = warcio_cli('check', *sorted(new_files))
    assert check.returncode == 0, check.stdout + check.stderr
    got = {}
    for f in new_files:
        for r in read_warc(f):
            if r['type'] in ('response', 'revisit'):
                got[r['h']['WARC-Target-URI']] = r

    docs = read_records(os.path.join(out, 'out', '002'))
    kinds = {'not_modified': 0, 'identical': 0, 'response': 0}
    for doc in docs:
        rec = got[doc['final_url']]
        if doc['status'] == R.FETCH_NOT_MODIFIED:
            kinds['not_modified'] += 1
            profile = warcfile.PROFILE_NOT_MODIFIED
            assert rec['status'] == '304'
        elif doc['status'] == R.FETCH_FETCHED and doc['digest'] and \
                doc['digest'] == doc['prev']['digest']:
            kinds['identical'] += 1
            profile = warcfile.PROFILE_IDENTICAL
            assert rec['h']['WARC-Payload-Digest'] == doc['digest']
        else:
            kinds['response'] += 1
            assert rec['type'] == 'response'
            continue
        assert rec['type'] == 'revisit' and rec['payload'] == b''
        assert rec['h']['WARC-Profile'] == profile
        # It refers to the first crawl's response record of the same URL and date.
        key = (rec['h']['WARC-Refers-To-Target-URI'], rec['h']['WARC-Refers-To-Date'])
        assert key in originals, key
        if profile == warcfile.PROFILE_IDENTICAL:
            assert originals[key]['h']['WARC-Payload-Digest'] == doc['digest']
    assert kinds['not_modified'] == 3 and kinds['identical'] >= 2 and kinds['response'] >= 2
    base = site.url('')
    changed = got[base + '/a.html']
    assert changed['type'] == 'response' and b'new edition' in changed['payload']
    assert got[base + '/dup.html']['status'] == '404'
    # The rebuilt Parquet index points at the second cycle's records.
    rows = {r['url']: r for r in ds.dataset(os.path.join(out, 'index'), format='parquet',
                                            partitioning='hive').to_table().to_pylist()}
    assert rows[base + '/a.html']['layer'] == 2
    assert rows[base + '/a.html']['warc_filename'].startswith('warc/mrcrawl-L002-')
    counters = json.load(open(os.path.join(out, 'steps', 'fetch-002.json')))   # it archives
    assert counters['counters']['warc']['revisit_not_modified_total'] == 3
    assert counters['counters']['warc']['records_revisit_total'] == \
        kinds['not_modified'] + kinds['identical']


def run_warc_job(runner, inputs, warc_dir, output_dir, conf_file, prefix='mrcrawl-L001'):
    args = ['-r', runner, '--crawl-conf', conf_file, '--warc-dir', warc_dir,
            '--warc-prefix', prefix, '--output-dir', output_dir]
    if runner == 'local':
        from drivers.runtime.runners import local_runner_args
        args += local_runner_args()
    job = MRWarc(args=args + list(inputs))
    with make_runner(job) as r:
        r.run()
        return r.counters()


@pytest.mark.crawl
def test_local_runner_one_file_per_split_and_rerun_replaces(tmp_path):
    """MRWarc over doc/ (fetch.parse = false) on the local runner."""
    with FixtureSite() as site:
        (tmp_path / 'c').mkdir()
        out, _ = crawl_site(site, tmp_path / 'c', test_conf(*SETTINGS, 'fetch.parse=false', 'fetch.follow_hops=0'),
                            depth=1)
    conf_file = os.path.join(out, 'conf.json')
    doc = os.path.join(out, 'doc', '001')
    warc_dir = str(tmp_path / 'warc')
    first = str(tmp_path / 'index1')
    run_warc_job('local', [doc], warc_dir, first, conf_file)
    names = sorted(os.listdir(warc_dir))
    lines = read_records(first)
    # One file per input split that had something to archive, named after the split.
    assert len(names) >= 2, names            # the local runner cut out/001 into splits
    assert sorted({os.path.basename(r['warc_filename']) for r in lines}) == names
    for name in names:
        assert name.startswith('mrcrawl-L001-part-') and name.endswith('.warc.gz')
    urls = [r['url'] for r in lines]
    assert len(urls) == len(set(urls)) == sum(
        d['status'] in (R.FETCH_FETCHED, R.FETCH_HTTP_ERROR) for d in read_records(doc))
    before = {n: open(os.path.join(warc_dir, n), 'rb').read() for n in names}

    # A rerun (a retried task, a rerun step) replaces the files with identical ones.
    second = str(tmp_path / 'index2')
    run_warc_job('local', [doc], warc_dir, second, conf_file)
    assert sorted(os.listdir(warc_dir)) == names
    assert {n: open(os.path.join(warc_dir, n), 'rb').read() for n in names} == before
    assert sorted(map(json.dumps, read_records(second))) == sorted(map(json.dumps, lines))

    # The driver clears what an interrupted run of the same step left (another split,
    # a temporary file) before running it again; other layers' files stay.
    stale = ['mrcrawl-L001-part-00000-99999.warc.gz', '.tmp-mrcrawl-L001-part-00001-0.warc.gz']
    keep = 'mrcrawl-L002-part-00000-0.warc.gz'
    for n in stale + [keep]:
        open(os.path.join(warc_dir, n), 'wb').close()
    crawl = Crawl(str(tmp_path), test_conf(*SETTINGS), runner='inline',
                  progress=lambda m: None)
    crawl.crawler.clear_warc_files(str(tmp_path / 'no-such-step'), 'mrcrawl-L001')
    assert sorted(os.listdir(warc_dir)) == [keep]


@pytest.mark.job
def test_page_records_and_docs_without_the_http_exchange(tmp_path):
    """A fused fetch+parse's page records (body kept) are archived; docs fetched with WARC
    off get rebuilt headers (counted); bad lines and failed fetches are counted."""
    conf = test_conf(*SETTINGS)
    conf_file = tmp_path / 'conf.json'
    conf_file.write_text(json.dumps(conf))
    body = '<html><title>Caf\u00e9</title></html>'
    raw = body.encode('windows-1252')
    recs = [
        {'kind': 'page', 'url': 'http://example.test/p', 'final_url': 'http://example.test/p',
         'layer': 1, 'status': 'fetched', 'http_status': 200, 'content_type': 'text/html',
         'fetch_time': '2026-11-30T08:00:00Z', 'length': len(raw), 'truncated': False,
         'digest': sha1_b32(raw), 'encoding': 'windows-1252', 'body': body,
         'headers': {'etag': '"x"', 'content-encoding': 'gzip'}, 'title': 'Caf\u00e9'},
        {'kind': 'doc', 'url': 'http://example.test/gone', 'layer': 1,
         'status': 'network_error', 'reason': 'dns'},
    ]
    src = tmp_path / 'in' / 'part-00000'
    src.parent.mkdir()
    src.write_text(''.join(json.dumps(r) + '\n' for r in recs) + 'not json\n')
    counters = run_warc_job('inline', [str(src)], str(tmp_path / 'warc'),
                            str(tmp_path / 'o'), str(conf_file))
    c = counters[0]['warc']
    assert c['records_response_total'] == 1 and c['headers_rebuilt_total'] == 1
    assert c['skipped_network_error_total'] == 1 and c['malformed_record_total'] == 1
    [name] = os.listdir(tmp_path / 'warc')
    [resp] = [r for r in read_warc(str(tmp_path / 'warc' / name)) if r['type'] == 'response']
    assert resp['payload'] == raw and resp['h']['WARC-Payload-Digest'] == sha1_b32(raw)
    assert resp['http'].statusline == '200 OK'
    assert resp['http'].get_header('Content-Type') == 'text/html; charset=windows-1252'
    assert resp['http'].get_header('ETag') == '"x"'
    assert resp['http'].get_header('Content-Encoding') is None


def test_fetcher_keeps_what_the_warc_needs_and_records_rebuild_the_bytes(site, tmp_path):
    """With warc.enabled the doc carries the HTTP exchange, and the received bytes when
    its text does not re-encode to them; a gzip response is stored decoded, without
    Content-Encoding, and a body cut at the size limit is marked truncated."""
    from jobs.lib import fetcher
    conf = test_conf(*SETTINGS, 'fetch.max_body_bytes=100000')
    paths = ['/a.html', '/fault/charset?declared=utf-8&actual=latin-1',
             '/fault/gzip-bomb?mb=1']
    docs = list(fetcher.HostFetcher(conf).fetch([{'url': site.url(p)} for p in paths]))
    plain, lossy, gz = docs
    assert [d['status'] for d in docs] == [R.FETCH_FETCHED] * 3
    for d in docs:
        assert d['http']['reason'] == 'OK' and d['http']['version'] == 'HTTP/1.1'
        sent = dict(d['http']['request']['headers'])
        assert sent['User-Agent'] == conf['politeness']['user_agent']
        assert d['http']['request']['path'] == urlsplit(d['final_url']).path + (
            '?' + urlsplit(d['final_url']).query if urlsplit(d['final_url']).query else '')
    assert 'warc_body' not in plain and 'warc_body' not in gz     # text re-encodes exactly
    lossy_bytes = served(site, lossy['url'])[1]
    assert base64.b64decode(lossy['warc_body']) == lossy_bytes
    assert lossy['body'].encode('utf-8') != lossy_bytes
    assert ['Content-Encoding', 'gzip'] in gz['http']['headers']

    path = str(tmp_path / 'x.warc.gz')
    w = warcfile.WarcFile(path, 'x.warc.gz', 'mrcrawl-L000', {'software': 'test'})
    done = [w.add(d, conf['politeness']['user_agent'], warcfile.plan(d)) for d in docs]
    w.close()
    recs = {r['h']['WARC-Target-URI']: r for r in read_warc(path) if r['type'] == 'response'}
    assert recs[plain['url']]['payload'] == served(site, plain['url'])[1]
    assert recs[lossy['url']]['payload'] == lossy_bytes
    assert recs[lossy['url']]['h']['WARC-Payload-Digest'] == lossy['digest']
    g = recs[gz['url']]
    assert g['payload'] == b'\0' * 100000 and g['h']['WARC-Truncated'] == 'length'
    assert g['http'].get_header('Content-Encoding') is None
    assert g['http'].get_header('Content-Length') == '100000'
    assert [d['truncated'] for d in done] == [None, None, 'length']
    assert warcio_cli('check', path).returncode == 0


def test_hdfs_output_goes_through_webhdfs_with_replace(tmp_path, monkeypatch):
    """On HDFS the driver hands the tasks the hdfs:// folder and the WebHDFS address; a
    task uploads to a temporary name, deletes an earlier attempt's file, renames."""
    monkeypatch.setenv('MRCRAWL_WEBHDFS_URL', 'http://127.0.0.1:1')
    monkeypatch.setenv('HADOOP_USER_NAME', 'crawler')
    crawl = Crawl('hdfs:///crawl', test_conf(*SETTINGS), runner='inline',
                  progress=lambda m: None)
    args = crawl.crawler.warc_args('mrcrawl-L002')
    assert dict(zip(args[::2], args[1::2])) == {
        '--warc-prefix': 'mrcrawl-L002', '--webhdfs-url': 'http://127.0.0.1:1',
        '--hdfs-user': 'crawler', '--warc-dir': 'hdfs:///crawl/warc'}

    calls = []

    class FakeClient:
        def __init__(self, url, user=None):
            calls.append(('client', url, user))

        def makedirs(self, path):
            calls.append(('makedirs', path))

        def write(self, path, data, overwrite):
            calls.append(('write', path.rsplit('-', 1)[0], data.read(), overwrite))

        def delete(self, path):
            calls.append(('delete', path))

        def rename(self, src, dst):
            calls.append(('rename', src.rsplit('-', 1)[0], dst))

    import hdfs
    monkeypatch.setattr(hdfs, 'InsecureClient', FakeClient)
    local = tmp_path / 'w.warc.gz'
    local.write_bytes(b'warc bytes')
    taskfiles.commit_hdfs(str(local), 'hdfs:///crawl/warc', 'NAME.warc.gz',
                          'http://127.0.0.1:1', 'crawler')
    tmp = '/crawl/warc/.tmp-NAME.warc.gz'
    assert calls == [('client', 'http://127.0.0.1:1', 'crawler'),
                     ('makedirs', '/crawl/warc'),
                     ('write', tmp, b'warc bytes', True),
                     ('delete', '/crawl/warc/NAME.warc.gz'),
                     ('rename', tmp, '/crawl/warc/NAME.warc.gz')]
    assert not local.exists()


@pytest.mark.crawl
def test_warc_from_doc_records_when_the_fetch_does_not_parse(tmp_path):
    """fetch.parse = false: MRWarc reads doc/ (the documents with their bodies), and the
    archive is the same as the fused fetch's: one response per fetched URL, payloads
    byte-exact (digests checked by warcio), and out/ keeps no body."""
    with FixtureSite() as site:
        out, _ = crawl_site(site, tmp_path, test_conf(*SETTINGS, 'fetch.parse=false', 'fetch.follow_hops=0'), depth=1)
    files = sorted(glob.glob(os.path.join(out, 'warc', '*.warc.gz')))
    check = warcio_cli('check', '-v', *files)
    assert files and check.returncode == 0 and 'fail' not in check.stdout, check.stdout
    responses = [r['h']['WARC-Target-URI'] for f in files for r in read_warc(f)
                 if r['type'] == 'response']
    docs = docs_of(out, 'doc')
    # The robots.txt and redirect responses come from doc/ too (warc_exchanges).
    assert sorted(responses) == sorted([d['final_url'] for d in docs if d['status'] in (
        R.FETCH_FETCHED, R.FETCH_HTTP_ERROR)] + [site.url('/robots.txt'), site.url('/redirect')])
    assert any(d.get('warc_exchanges') for d in docs)
    assert all('body' not in p and 'http' not in p and 'warc_exchanges' not in p
               for p in docs_of(out, 'out'))


def test_fetcher_keeps_robots_txt_and_redirect_answers_without_the_cookie(site, tmp_path):
    """With warc.enabled the first doc of a key carries its robots.txt answer (a 404:
    its body unread), a redirected doc its 3xx answers, in order; a cookie the site set
    is sent on (the server sees it) but no archived request names it."""
    from jobs.lib import fetcher
    site.robots_status = 404
    site.overrides['/cookie.html'] = ('typed', 'text/html', html_page('Cookie', ''),
                                      [('Set-Cookie', 'sid=secret123; Path=/')])
    conf = test_conf(*SETTINGS)
    paths = ['/cookie.html', '/fault/redirect-chain?n=2', '/a.html']
    docs = list(fetcher.HostFetcher(conf).fetch([{'url': site.url(p)} for p in paths]))
    assert [d['status'] for d in docs] == [R.FETCH_FETCHED] * 3
    first, chain, plain = docs
    [robots] = first['warc_exchanges']
    assert (robots['kind'], robots['url'], robots['http_status'], robots['body']) == (
        'robots', site.url('/robots.txt'), 404, None)
    assert [(e['kind'], e['url'], e['http_status']) for e in chain['warc_exchanges']] == [
        ('redirect', site.url('/fault/redirect-chain?n=2'), 302),
        ('redirect', site.url('/fault/redirect-chain?n=1'), 302)]
    assert all(base64.b64decode(e['body']) == b'' and not e['truncated']
               for e in chain['warc_exchanges'])
    assert 'warc_exchanges' not in plain
    # The session sent the cookie back: the server saw it on the later requests.
    assert any('sid=secret123' in r['headers'].get('Cookie', '') for r in site.requests)

    path = str(tmp_path / 'x.warc.gz')
    sink = warcfile.Sink(str(tmp_path), 'x.warc.gz', 'x', {'software': 'test'},
                         lambda k, n: None)
    pointers = [sink.add(d, conf['politeness']['user_agent']) for d in docs]
    sink.commit()
    assert warcio_cli('check', path).returncode == 0
    recs = read_warc(path)
    assert [(r['type'], r['status']) for r in recs if r['type'] == 'response'] == [
        ('response', '404'), ('response', '200'), ('response', '302'), ('response', '302'),
        ('response', '200'), ('response', '200')]
    for r in recs:
        if r['type'] == 'request':
            assert 'secret123' not in str(r['http'].headers)
    for doc, pointer in zip(docs, pointers):      # each doc's position: its own response
        assert warcfile.read_payload(str(tmp_path), dict(
            pointer, warc_filename='x.warc.gz'))[0] == served(site, doc['final_url'])[1]
