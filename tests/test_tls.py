"""HTTPS against nginx on loopback (tests/tls_site.py): a certificate that chains to a
CA the crawl trusts is fetched and recorded verified; each defect a certificate can have
is its own counted outcome, never retried, with fetch.verify_tls = true, and a page
fetched anyway, recorded unverified, without; fetch.ca_bundle adds CAs beside the usual
bundle."""
import certifi
import pytest
from lxml import etree

from drivers.later import index
from jobs.index_rows import index_row
from jobs.lib import config, counters as C, deltas, fetcher, httpio, records as R, xmlpage
from tests.helpers import ROOT, test_conf
from tests.tls_site import TLSSite, make_certs

pytestmark = pytest.mark.unit

FAST = ['politeness.delay=0', 'fetch.read_timeout=2', 'fetch.connect_timeout=2',
        'fetch.max_retries=2', 'fetch.retry_backoff=0.05']


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp('certs'))


def fetch_one(site, *settings):
    hf = fetcher.HostFetcher(test_conf(*(FAST + list(settings))))
    (doc,) = hf.fetch([{'url': site.url('/'), 'depth': 0}])
    return doc, hf


def test_a_certificate_from_a_ca_in_fetch_ca_bundle_is_fetched(certs):
    with TLSSite(*certs['good']) as site:
        doc, _ = fetch_one(site, 'fetch.ca_bundle=%s' % certs['ca'][0])
    assert doc['status'] == R.FETCH_FETCHED and doc['http_status'] == 200
    assert 'secret handshake' in doc['body'] and site.paths == ['/robots.txt', '/']
    assert doc['tls_verified'] is True


@pytest.mark.parametrize('cert,trust_ca,reason', [
    ('good', False, 'tls_untrusted'),          # a private CA the crawl was not given
    ('expired', True, 'tls_expired'),
    ('other_host', True, 'tls_hostname'),      # another host's certificate
    ('self_signed', True, 'tls_self_signed'),
])
def test_each_certificate_defect_is_its_own_outcome_and_not_retried(certs, cert, trust_ca,
                                                                    reason):
    """The page's own request (robots.txt not read): network_error with the defect,
    one attempt (MRFetch counts each status and reason: fetch_network_error_<reason>_total).
    With robots.txt read first (the default), its request fails the same
    way: the URL is deferred (RFC 9309: an unreachable robots.txt disallows all, asked
    again next layer), with the defect in its reason."""
    settings = ['fetch.verify_tls=true'] + (
        ['fetch.ca_bundle=%s' % certs['ca'][0]] if trust_ca else [])
    with TLSSite(*certs[cert]) as site:
        doc, _ = fetch_one(site, 'politeness.obey_robots=false', *settings)
        deferred, _ = fetch_one(site, *settings)
    assert (doc['status'], doc['reason']) == (R.FETCH_NETWORK_ERROR, reason)
    assert doc['attempts'] == 1 and site.paths == []      # no request got through
    assert reason not in httpio.RETRY_REASONS
    assert (deferred['status'], deferred['reason']) == (R.FETCH_DEFERRED, 'robots_' + reason)


@pytest.mark.parametrize('cert,reason', [('good', 'tls_untrusted'),
                                         ('expired', 'tls_expired'),
                                         ('other_host', 'tls_hostname'),
                                         ('self_signed', 'tls_self_signed')])
def test_without_verify_tls_a_failed_certificate_is_fetched_and_recorded(certs, cert,
                                                                        reason):
    """The default (fetch.verify_tls = false), as the peers: the origin is asked again
    without verification, robots.txt and pages alike, once a fetcher; its pages are
    recorded tls_verified false and the origin counted by why."""
    trust = [] if cert == 'good' else ['fetch.ca_bundle=%s' % certs['ca'][0]]
    hf = fetcher.HostFetcher(test_conf(*(FAST + trust)))
    with TLSSite(*certs[cert]) as site:
        docs = list(hf.fetch([{'url': site.url('/'), 'depth': 0},
                              {'url': site.url('/missing'), 'depth': 0}]))
    assert [(d['status'], d['http_status'], d['tls_verified']) for d in docs] == \
        [(R.FETCH_FETCHED, 200, False), (R.FETCH_HTTP_ERROR, 404, False)]
    assert 'secret handshake' in docs[0]['body']
    assert site.paths == ['/robots.txt', '/', '/missing']
    assert hf.stats[C.tls_unverified_origins(reason)] == 1
    assert hf.stats[C.TLS_UNVERIFIED_ANSWERS] == 2


def test_a_page_over_http_has_no_tls_verified(site):
    hf = fetcher.HostFetcher(test_conf(*FAST))
    (doc,) = hf.fetch([{'url': site.url('/'), 'depth': 0}])
    assert doc['status'] == R.FETCH_FETCHED and doc['tls_verified'] is None


def test_the_host_name_goes_out_in_sni_through_the_address_checks(certs):
    """A server with two certificates gives the one for the name the client sends
    (SNI): https://localhost/ gets localhost's, verified, although the connection goes
    through the crawl's own resolver and address checks (jobs.lib.netpolicy); another
    name gets the other host's certificate."""
    ca = 'fetch.ca_bundle=%s' % certs['ca'][0]
    settings = FAST + ['politeness.obey_robots=false', 'fetch.verify_tls=true', ca]
    with TLSSite(*certs['other_host'], by_name={'localhost': certs['good']}) as site:
        hf = fetcher.HostFetcher(test_conf(*settings))
        (by_name,) = hf.fetch([{'url': site.url('/', 'localhost'), 'depth': 0}])
        hf = fetcher.HostFetcher(test_conf(*settings))
        (by_ip,) = hf.fetch([{'url': site.url('/'), 'depth': 0}])
    assert by_name['status'] == R.FETCH_FETCHED and 'secret handshake' in by_name['body']
    assert (by_ip['status'], by_ip['reason']) == (R.FETCH_NETWORK_ERROR, 'tls_hostname')
    assert site.paths == ['/'] and site.requests()[0]['sni'] == 'localhost'


def test_a_ca_bundle_that_is_no_pem_file_is_one_line_at_start(tmp_path):
    bad = tmp_path / 'notes.txt'
    bad.write_text('not a certificate\n')
    for path in (str(bad), str(tmp_path / 'missing.pem')):
        with pytest.raises(config.ConfigError) as e:
            config.load(overrides=['fetch.ca_bundle=%s' % path])
        assert str(e.value) == ('--set: fetch.ca_bundle: %s is not a readable PEM file of '
                                'certificates' % path)
    with pytest.raises(config.ConfigError) as e:     # tasks run in folders of their own
        config.load(overrides=['fetch.ca_bundle=certs/ca.pem'])
    assert 'fetch.ca_bundle: certs/ca.pem is not an absolute path' in str(e.value)


def test_the_extra_cas_add_to_the_usual_bundle(certs):
    """One file: certifi's bundle, then the extra CAs, named by its content: every task
    of the machine shares it (forked tasks end without atexit: no file a task)."""
    path = httpio.trust_store(certs['ca'][0])
    assert httpio.trust_store(certs['ca'][0]) == path and httpio.trust_store('') is True
    httpio._BUNDLES.clear()                       # another process, the same file
    assert httpio.trust_store(certs['ca'][0]) == path
    text = open(path).read()
    assert text.startswith(open(certifi.where()).read())
    assert text.rstrip().endswith(open(certs['ca'][0]).read().rstrip())


def test_tls_verified_reaches_the_index_the_xml_and_the_delta():
    """The field as an indexer sees it: a Parquet column, fetch/@tls_verified in the XML
    (valid against conf/page.xsd, absent over http), and a page now fetched unverified
    is a change in the delta, while verified and http sign as before the field."""
    schema = etree.XMLSchema(etree.parse(ROOT + '/conf/page.xsd'))
    base = {'url': 'https://h/p', 'status': 'fetched', 'fetch_time': '2026-11-30T00:00:00Z',
            'title': 'T', 'text': 'all'}
    seen = {}
    for value in (True, False, None):
        page = dict(base, tls_verified=value)
        root = etree.fromstring(xmlpage.page_xml(page).encode())
        schema.assertValid(root)
        seen[value] = (root.find('fetch').get('tls_verified'),
                       index.index_columns(index_row(page))[
                           index.INDEX_SCHEMA.names.index('tls_verified')],
                       deltas.signature(page))
    assert [seen[v][:2] for v in (True, False, None)] == \
        [('true', True), ('false', False), (None, None)]
    assert seen[True][2] == seen[None][2] == deltas.signature(base) != seen[False][2]
