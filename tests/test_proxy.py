"""Fetching through real proxies (Debian's tinyproxy and microsocks, tests/proxy.py):
http by absolute URI, https through CONNECT with TLS end to end, robots.txt the same
way; SOCKS5 with the host resolved by the proxy or here; proxies with credentials (the
password a reference, never in a record); hosts that bypass it; a site's own proxy;
the address policy still on the page's host."""
import pytest

from jobs.lib import config, fetcher, httpio, records as R, routes, secretref, sites
from jobs.lib.netpolicy import Blocked, Resolver
from jobs.lib.politeness import Slot
from tests.helpers import test_conf
from tests.proxy import MicroSocks, TinyProxy
from tests.tls_site import TLSSite, make_certs

pytestmark = pytest.mark.unit

FAST = ['politeness.delay=0', 'fetch.read_timeout=3', 'fetch.connect_timeout=3',
        'fetch.max_retries=0']


def fetch(urls, *settings, sites=None):
    conf = test_conf(*(FAST + list(settings)))
    if sites is not None:
        conf['sites'] = sites
    hf = fetcher.HostFetcher(conf)
    return list(hf.fetch([{'url': u, 'depth': 0} for u in urls])), hf


def test_http_pages_and_robots_txt_go_through_the_proxy(site):
    with TinyProxy() as proxy:
        docs, _ = fetch([site.url('/'), site.url('/a.html')], 'fetch.proxy=' + proxy.url())
    assert [d['status'] for d in docs] == [R.FETCH_FETCHED] * 2
    assert proxy.requests() == ['GET %s HTTP/1.1' % site.url(p)
                                for p in ('/robots.txt', '/', '/a.html')]
    assert site.paths() == ['/robots.txt', '/', '/a.html']


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp('certs'))


def test_https_goes_through_connect_and_is_verified_end_to_end(certs):
    """One CONNECT (the key's one connection, kept), TLS to the site inside it: the
    site's certificate is verified against fetch.ca_bundle, as without a proxy."""
    with TLSSite(*certs['good']) as web, TinyProxy() as proxy:
        docs, _ = fetch([web.url('/'), web.url('/missing')], 'fetch.proxy=' + proxy.url(),
                        'fetch.ca_bundle=' + certs['ca'][0])
    assert [(d['status'], d['http_status'], d['tls_verified']) for d in docs] == \
        [(R.FETCH_FETCHED, 200, True), (R.FETCH_HTTP_ERROR, 404, True)]
    assert proxy.requests() == ['CONNECT 127.0.0.1:%d HTTP/1.0' % web.port]
    assert web.paths == ['/robots.txt', '/', '/missing']


def test_a_proxy_with_credentials_reads_the_password_where_it_fetches(site, monkeypatch):
    """The password is a reference in the settings (a literal one is refused at start),
    read from the environment in the task; it reaches no record, not even the WARC's
    request headers. A wrong one: the proxy refuses it (tinyproxy with a 401)."""
    with pytest.raises(config.ConfigError, match='write the proxy\'s password as'):
        test_conf('fetch.proxy=http://crawler:s3cret@127.0.0.1:3128')
    monkeypatch.setenv('MRCRAWL_TEST_PROXY_PASSWORD', 's3c-ret')
    with TinyProxy(user='crawler', password='s3c-ret') as proxy:
        good = proxy.url('crawler:${MRCRAWL_TEST_PROXY_PASSWORD}')
        docs, _ = fetch([site.url('/')], 'fetch.proxy=' + good, 'warc.enabled=true')
        monkeypatch.setenv('MRCRAWL_TEST_PROXY_PASSWORD', 'wrong')
        refused, _ = fetch([site.url('/')], 'fetch.proxy=' + good,
                           'politeness.obey_robots=false')
    assert docs[0]['status'] == R.FETCH_FETCHED and 's3c-ret' not in str(docs)
    sent = dict(docs[0]['http']['request']['headers'])
    assert 'Proxy-Authorization' not in sent and 'proxy-authorization' not in sent
    assert (refused[0]['status'], refused[0]['reason']) == (R.FETCH_HTTP_ERROR, 'http_401')
    assert len(proxy.requests()) == 3


def test_connect_carries_the_proxys_credentials(certs, monkeypatch):
    monkeypatch.setenv('MRCRAWL_TEST_PROXY_PASSWORD', 's3c-ret')
    with TLSSite(*certs['good']) as web, TinyProxy('crawler', 's3c-ret') as proxy:
        docs, _ = fetch([web.url('/')], 'fetch.ca_bundle=' + certs['ca'][0], 'fetch.proxy='
                        + proxy.url('crawler:${MRCRAWL_TEST_PROXY_PASSWORD}'))
    assert (docs[0]['status'], docs[0]['tls_verified']) == (R.FETCH_FETCHED, True)
    assert proxy.requests() == ['CONNECT 127.0.0.1:%d HTTP/1.0' % web.port]


def test_a_password_is_percent_encoded_into_the_proxy_url(monkeypatch, tmp_path):
    """A password may hold what a URL cannot (tinyproxy's own cannot, so not tested
    against it): read from a file here, percent-encoded into the URL requests sends."""
    (tmp_path / 'pass').write_text('p@ss:w/rd\n')
    conf = test_conf('fetch.proxy=http://crawler:${file:%s}@proxy.corp:3128'
                     % (tmp_path / 'pass'))
    assert routes.Routes(conf).proxy('https://example.com/') == \
        'http://crawler:p%40ss%3Aw%2Frd@proxy.corp:3128'
    assert routes.Routes(conf).proxy('http://example.com/') == \
        'http://crawler:p%40ss%3Aw%2Frd@proxy.corp:3128'


def test_a_password_that_cannot_be_read_is_one_line_at_start_and_counted_in_a_task(
        site, monkeypatch):
    monkeypatch.delenv('MRCRAWL_TEST_ABSENT', raising=False)
    conf = test_conf('fetch.proxy=http://crawler:${MRCRAWL_TEST_ABSENT}@127.0.0.1:9')
    ((where, text),) = routes.secret_settings(conf)
    with pytest.raises(secretref.SecretError) as e:
        secretref.check(text, where)
    assert str(e.value) == ('fetch.proxy: ${MRCRAWL_TEST_ABSENT}: the environment '
                            'variable is not set')
    docs, _ = fetch([site.url('/')], 'fetch.proxy=' + text)
    assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_DEFERRED,
                                                      'robots_secret_unavailable')
    docs, _ = fetch([site.url('/')], 'fetch.proxy=' + text, 'politeness.obey_robots=false')
    assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_NETWORK_ERROR,
                                                      'secret_unavailable')
    assert site.paths() == []


def test_bypassed_hosts_and_a_sites_own_proxy(site):
    """fetch.proxy_bypass sends a host straight to it; a site's proxy ("" for none)
    wins over fetch.proxy for its pages."""
    with TinyProxy() as proxy, TinyProxy() as other:
        direct, _ = fetch([site.url('/')], 'fetch.proxy=' + proxy.url(),
                          'fetch.proxy_bypass=[".nowhere.example", "127.0.0.0/8"]')
        spec = sites.parse_site({'site': {'hosts': ['127.0.0.1'], 'proxy': other.url()}},
                                'local.toml')
        by_site, _ = fetch([site.url('/a.html')], 'fetch.proxy=' + proxy.url(),
                           sites=[spec])
        spec = sites.parse_site({'site': {'hosts': ['127.0.0.1'], 'proxy': ''}}, 'local.toml')
        site_direct, _ = fetch([site.url('/b.html')], 'fetch.proxy=' + proxy.url(),
                               sites=[spec])
    assert [d[0]['status'] for d in (direct, by_site, site_direct)] == [R.FETCH_FETCHED] * 3
    assert proxy.requests() == []
    assert other.requests() == ['GET %s HTTP/1.1' % site.url(p)
                                for p in ('/robots.txt', '/a.html')]
    assert site.paths().count('/robots.txt') == 3


def test_the_address_policy_still_holds_for_the_pages_host(site):
    """Without security.allow_private_networks, a page on loopback is refused before
    the proxy hears of it, although the proxy itself is on loopback."""
    with TinyProxy() as proxy:
        docs, _ = fetch([site.url('/')], 'fetch.proxy=' + proxy.url(),
                        'security.allow_private_networks=false')
        conf = test_conf('fetch.proxy=' + proxy.url())
        session = httpio.KeySession('mrcrawl-test', (2, 2), Resolver(allow_private=False),
                                    Slot(0, 10, lambda: 0.0, lambda s: None),
                                    routes=routes.Routes(conf))
        with pytest.raises(Blocked):     # a hop that the key's first check did not see
            session.get(site.url('/'), 10.0)
        session.close()
    assert (docs[0]['status'], docs[0]['reason']) == (R.FETCH_FILTERED, 'private_address')
    assert proxy.requests() == [] and site.paths() == []


@pytest.mark.parametrize('scheme', ['socks5h', 'socks5'])
def test_socks5_carries_http_and_https_with_credentials(site, certs, monkeypatch, scheme):
    """socks5h: the proxy resolves the host (the policy checked it here first); socks5:
    this side does. https keeps its TLS end to end inside the tunnel."""
    monkeypatch.setenv('MRCRAWL_TEST_PROXY_PASSWORD', 's3c-ret')
    with TLSSite(*certs['good']) as web, MicroSocks('crawler', 's3c-ret') as socks:
        proxy = 'fetch.proxy=' + socks.url('crawler:${MRCRAWL_TEST_PROXY_PASSWORD}', scheme)
        plain, _ = fetch([site.url('/')], proxy)
        tls, _ = fetch([web.url('/')], proxy, 'fetch.ca_bundle=' + certs['ca'][0])
        monkeypatch.setenv('MRCRAWL_TEST_PROXY_PASSWORD', 'wrong')
        refused, _ = fetch([site.url('/a.html')], proxy, 'politeness.obey_robots=false')
    assert plain[0]['status'] == R.FETCH_FETCHED
    assert (tls[0]['status'], tls[0]['tls_verified']) == (R.FETCH_FETCHED, True)
    assert (refused[0]['status'], refused[0]['reason']) == (R.FETCH_NETWORK_ERROR,
                                                            'proxy_error')
    # One connection a key: robots.txt and the page share it.
    assert socks.connections() == ['127.0.0.1:%d' % site.port, '127.0.0.1:%d' % web.port]
    assert site.paths() == ['/robots.txt', '/'] and web.paths == ['/robots.txt', '/']


@pytest.mark.parametrize('value', ['socks4://127.0.0.1:1080', 'http://proxy.corp',
                                   'http://proxy.corp:3128/path'])
def test_a_proxy_that_is_no_http_proxy_url_is_refused(value):
    with pytest.raises(config.ConfigError, match='is not a proxy URL'):
        test_conf('fetch.proxy=' + value)


def test_a_bypass_entry_that_is_no_host_or_network_is_refused():
    assert test_conf('fetch.proxy_bypass=["intranet", ".corp.example", "10.0.0.0/8"]')
    with pytest.raises(config.ConfigError, match="fetch.proxy_bypass: '10.0.0.0/99' is no"):
        test_conf('fetch.proxy_bypass=["10.0.0.0/99"]')
    assert routes.bypassed('a.corp.example', ['.corp.example'])
    assert routes.bypassed('corp.example', ['.corp.example'])
    assert not routes.bypassed('xcorp.example', ['.corp.example'])
    assert routes.bypassed('10.1.2.3', ['10.0.0.0/8']) and not routes.bypassed('11.0.0.1',
                                                                             ['10.0.0.0/8'])
