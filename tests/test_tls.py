"""HTTPS against real TLS servers on loopback (tests/tls_site.py): a certificate that
chains to a CA the crawl trusts is fetched; each defect a certificate can have is its
own counted outcome, never retried; fetch.ca_bundle adds CAs beside the usual bundle."""
import certifi
import pytest

from jobs.lib import config, fetcher, httpio, records as R
from tests.helpers import test_conf
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
    settings = ['fetch.ca_bundle=%s' % certs['ca'][0]] if trust_ca else []
    with TLSSite(*certs[cert]) as site:
        doc, _ = fetch_one(site, 'politeness.obey_robots=false', *settings)
        deferred, _ = fetch_one(site, *settings)
    assert (doc['status'], doc['reason']) == (R.FETCH_NETWORK_ERROR, reason)
    assert doc['attempts'] == 1 and site.paths == []      # no request got through
    assert reason not in httpio.RETRY_REASONS
    assert (deferred['status'], deferred['reason']) == (R.FETCH_DEFERRED, 'robots_' + reason)


def test_the_host_name_goes_out_in_sni_through_the_address_checks(certs):
    """A server with two certificates gives the one for the name the client sends
    (SNI): https://localhost/ gets localhost's, verified, although the connection goes
    through the crawl's own resolver and address checks (jobs.lib.netpolicy); another
    name gets the other host's certificate."""
    ca = 'fetch.ca_bundle=%s' % certs['ca'][0]
    with TLSSite(*certs['other_host'], by_name={'localhost': certs['good']}) as site:
        hf = fetcher.HostFetcher(test_conf(*(FAST + ['politeness.obey_robots=false', ca])))
        (by_name,) = hf.fetch([{'url': site.url('/', 'localhost'), 'depth': 0}])
        hf = fetcher.HostFetcher(test_conf(*(FAST + ['politeness.obey_robots=false', ca])))
        (by_ip,) = hf.fetch([{'url': site.url('/'), 'depth': 0}])
    assert by_name['status'] == R.FETCH_FETCHED and 'secret handshake' in by_name['body']
    assert (by_ip['status'], by_ip['reason']) == (R.FETCH_NETWORK_ERROR, 'tls_hostname')
    assert site.paths == ['/']


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
