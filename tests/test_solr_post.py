"""Posting to Solr (jobs/lib/solr.py) without a Solr: a page's document and its typed
site fields, and the poster's retries, back-off, rate and refusals, against a loopback
server that answers as a busy or a picky Solr would. The real Solr: tests/test_solr.py."""
import http.server
import json
import threading
import time

import pytest

from drivers.export.solr import check_url
from jobs.lib import solr

pytestmark = pytest.mark.unit

SETTINGS = {'batch_docs': 500, 'max_retries': 3, 'retry_backoff': 0.05,
            'max_batches_per_second': 1000.0, 'timeout': 5.0}


def test_a_merged_record_becomes_a_document_with_typed_site_fields():
    rec = {'kind': 'merged', 'url': 'http://shop.example:8080/item-1.html', 'status': 'fetched',
           'http_status': 200, 'title': 'Red kettle', 'description': 'A kettle',
           'main_text': 'Boils water.', 'text': 'Menu Boils water.', 'language': 'en',
           'headings': [{'level': 1, 'text': 'Red kettle'}, {'level': 2, 'text': ''}],
           'anchors': [{'from': 'http://shop.example/', 'text': 'kettle'}],
           'links': [{'url': 'http://shop.example/'}], 'content_type': 'text/html',
           'fetch_time': '2026-12-01T10:00:00Z', 'layer': 1, 'digest': 'sha1:AAA',
           'warc_filename': 'warc/x.warc.gz', 'warc_record_offset': 10,
           'warc_record_length': 99, 'tls_verified': None, 'site': 'shop',
           'fields': {'price': 12.5, 'released': '2024-03-01', 'tags': ['red', 'steel'],
                      'stock': 5, 'maker': 'Acme', 'old.name': 'x', 'none': None,
                      'bad_date': 'soon'}}
    types = {('shop', 'price'): 'float', ('shop', 'released'): 'date',
             ('shop', 'tags'): 'list', ('shop', 'stock'): 'int', ('shop', 'maker'): 'url',
             ('shop', 'bad_date'): 'date'}
    doc = solr.document(rec, '002', '/crawls/shop', types)
    assert doc == {
        'id': rec['url'], 'url': rec['url'], 'crawl': '/crawls/shop', 'build': '002',
        'host': 'shop.example', 'title': 'Red kettle', 'description': 'A kettle',
        'text': 'Boils water.', 'lang': 'en', 'headings': ['Red kettle'],
        'anchors': ['kettle'], 'content_type': 'text/html', 'status': 'fetched',
        'fetched_at': '2026-12-01T10:00:00Z', 'layer': 1, 'digest': 'sha1:AAA',
        'out_links': 1, 'warc_file': 'warc/x.warc.gz', 'warc_offset': 10,
        'warc_length': 99, 'site': 'shop', 'http_status': 200,
        'price_d': 12.5, 'released_dt': '2024-03-01T00:00:00Z', 'tags_ss': ['red', 'steel'],
        'stock_l': 5, 'maker_s': 'Acme', 'old_name_t': 'x'}
    # A site no longer configured: each field typed by its value.
    doc = solr.document(dict(rec, fields={'n': 3, 'f': 1.5, 'l': ['a'], 's': 'b'}),
                        '1', 'c', {})
    assert (doc['n_l'], doc['f_d'], doc['l_ss'], doc['s_t']) == (3, 1.5, ['a'], 'b')


class FakeSolr(http.server.BaseHTTPRequestHandler):
    """Answers /update with the next code of ``answers`` (then 200); a batch holding a
    document whose id ends in 'bad' gets a 400, as Solr refuses a whole batch."""
    answers, bodies, times = [], [], []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        FakeSolr.bodies.append(body)
        FakeSolr.times.append(time.monotonic())
        code = FakeSolr.answers.pop(0) if FakeSolr.answers else 200
        if isinstance(body, list) and any(d['id'].endswith('bad') for d in body):
            code = 400
        payload = json.dumps({'error': {'msg': 'ERROR: [doc=x] unknown field\n\'bogus\''}}
                             if code == 400 else {'responseHeader': {'status': 0}}).encode()
        self.send_response(code)
        if code == 429:
            self.send_header('Retry-After', '0')
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def fake_solr():
    FakeSolr.answers, FakeSolr.bodies, FakeSolr.times = [], [], []
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), FakeSolr)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d/solr/core' % server.server_port
    server.shutdown()
    server.server_close()


def poster(url, **settings):
    counts, warnings = {}, []
    p = solr.Poster(url, dict(SETTINGS, **settings),
                    lambda name, n: counts.__setitem__(name, counts.get(name, 0) + n),
                    warnings.append)
    return p, counts, warnings


def test_busy_answers_are_retried_with_back_off_then_the_batch_goes_in(fake_solr):
    p, counts, _ = poster(fake_solr)
    FakeSolr.answers = [503, 429, 502]
    p.add([{'id': 'a'}, {'id': 'b'}])
    assert len(FakeSolr.bodies) == 4 and FakeSolr.bodies[-1] == [{'id': 'a'}, {'id': 'b'}]
    assert counts == {'retries_http_503_total': 1, 'retries_http_429_total': 1,
                      'retries_http_502_total': 1, 'batches_posted_total': 1,
                      'documents_added_total': 2}
    gaps = [b - a for a, b in zip(FakeSolr.times, FakeSolr.times[1:])]
    assert gaps[0] >= 0.05 and gaps[2] >= 0.2      # 0.05 s, doubled each time


def test_past_the_retries_the_task_fails_with_one_line(fake_solr):
    p, _, _ = poster(fake_solr, max_retries=1)
    FakeSolr.answers = [500, 500]
    with pytest.raises(solr.SolrRefused, match=r'failed 2 times \(http_500\)'):
        p.delete(['a'])


def test_a_refused_batch_loses_only_its_bad_documents_each_named(fake_solr):
    p, counts, warnings = poster(fake_solr)
    p.add([{'id': 'a'}, {'id': 'x-bad'}, {'id': 'c'}])
    assert counts['documents_added_total'] == 2 and counts['documents_refused_total'] == 1
    assert warnings == ["solr refused x-bad: ERROR: [doc=x] unknown field 'bogus'"]


def test_the_rate_is_bounded_per_task(fake_solr):
    p, _, _ = poster(fake_solr, max_batches_per_second=20.0)
    for i in range(5):
        p.delete(['u%d' % i])
    assert FakeSolr.times[-1] - FakeSolr.times[0] >= 4 / 20.0 * 0.95


def test_a_solr_url_names_its_password_by_reference_only(monkeypatch):
    assert check_url('http://127.0.0.1:8983/solr/mrcrawl') is None
    assert 'never in the URL' in check_url('http://me:secret@127.0.0.1:8983/solr/c')
    monkeypatch.setenv('SOLR_PW', 'x')
    assert check_url('http://me:${SOLR_PW}@127.0.0.1:8983/solr/c') is None
    assert 'SOLR_NOPE' in check_url('http://me:${SOLR_NOPE}@127.0.0.1:8983/solr/c')
    assert 'not an http(s) URL' in check_url('ftp://127.0.0.1/solr')
