"""A site's [request] table against nginx (tests/nginx.py): HTTP basic credentials
(auth_basic; digest against lighttpd), a header and a cookie a page needs, all read from the environment or a
file where the request is made, sent only to the site's URLs, over https (or http when
the site says so), never to an origin whose certificate failed, and never kept in a
record or the WARC."""
import pytest

from jobs.lib import counters as C, fetcher, records as R, routes, secretref, sites
from tests.helpers import test_conf
from tests.lighttpd import Lighttpd
from tests.nginx import Nginx
from tests.tls_site import make_certs

pytestmark = pytest.mark.unit

SERVER = """
server {
    listen 127.0.0.1:PORT %(ssl)s;
    %(certs)s
    root DIR/www;
    location /private/ { auth_basic "members"; auth_basic_user_file DIR/htpasswd; }
    location /members/ { if ($cookie_session != "opensesame") { return 403; } }
    location /api/ { if ($http_x_api_key != "k3y") { return 403; } }
}
"""
PAGES = ('/private/', '/members/', '/api/')
FILES = {'htpasswd': b'crawler:{PLAIN}s3c-ret\n'} | {
    'www%sindex.html' % p: b'<html><title>in</title><body>inside</body></html>'
    for p in PAGES}
SECRETS = ('s3c-ret', 'opensesame', 'k3y')


def web(certs=None):
    """nginx over https with *certs* ((cert, key)), else over http."""
    conf = {'ssl': 'ssl' if certs else '', 'certs': 'ssl_certificate %s; '
            'ssl_certificate_key %s;' % certs if certs else ''}
    return Nginx(SERVER % conf, FILES)


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp('certs'))


@pytest.fixture
def secrets_env(monkeypatch, tmp_path):
    monkeypatch.setenv('MRCRAWL_TEST_PASSWORD', 's3c-ret')
    monkeypatch.setenv('MRCRAWL_TEST_API_KEY', 'k3y')
    (tmp_path / 'cookie').write_text('opensesame\n')
    return str(tmp_path / 'cookie')


def site_spec(cookie_file, hosts=('127.0.0.1',), **request):
    table = {'user': 'crawler', 'password': '${MRCRAWL_TEST_PASSWORD}',
             'headers': {'X-Api-Key': '${MRCRAWL_TEST_API_KEY}', 'Accept-Language': 'en'},
             'cookies': {'session': '${file:%s}' % cookie_file}} | request
    return sites.parse_site({'site': {'hosts': list(hosts)}, 'request': table}, 'films.toml')


def fetch(server, spec, *settings):
    conf = test_conf('politeness.delay=0', 'politeness.obey_robots=false',
                     'fetch.max_retries=0', *settings)
    conf['sites'] = [spec] if spec else []
    hf = fetcher.HostFetcher(conf)
    docs = list(hf.fetch([{'url': server.url(p, scheme=scheme(server)), 'depth': 0}
                          for p in PAGES]))
    return [d['http_status'] for d in docs], docs, hf


def scheme(server):
    return 'https' if 'ssl;' in open(server.dir + '/nginx.conf').read() else 'http'


def test_credentials_a_header_and_a_cookie_open_the_sites_pages(certs, secrets_env):
    with web(certs['good']) as server:
        codes, docs, _ = fetch(server, site_spec(secrets_env), 'warc.enabled=true',
                               'fetch.ca_bundle=' + certs['ca'][0])
        without, _, _ = fetch(server, None, 'fetch.ca_bundle=' + certs['ca'][0])
    assert codes == [200, 200, 200] and without == [401, 403, 403]
    assert [r['user'] for r in server.requests()] == ['crawler'] * 3 + ['-'] * 3
    assert all(d['status'] == R.FETCH_FETCHED for d in docs)
    assert not any(s in str(docs) for s in SECRETS)          # no record holds a secret
    sent = {k.lower(): v for k, v in docs[0]['http']['request']['headers']}
    assert sent['accept-language'] == 'en'        # a plain header is archived as sent
    assert not {'authorization', 'cookie', 'x-api-key'} & set(sent)


def test_another_hosts_pages_get_nothing(certs, secrets_env):
    """Only URLs of the site: here the site is localhost, the pages 127.0.0.1's."""
    with web(certs['good']) as server:
        codes, _, _ = fetch(server, site_spec(secrets_env, hosts=['localhost']),
                            'fetch.ca_bundle=' + certs['ca'][0])
    assert codes == [401, 403, 403]


def test_over_http_only_when_the_site_says_so(secrets_env):
    with web() as server:
        codes, _, hf = fetch(server, site_spec(secrets_env))
        allowed, _, _ = fetch(server, site_spec(secrets_env, over_http=True))
    assert codes == [401, 403, 403] and allowed == [200, 200, 200]
    assert hf.stats[C.credentials_withheld('http')] == 3


def test_never_to_an_origin_whose_certificate_failed(certs, secrets_env):
    """fetch.verify_tls = false fetches a self-signed site's pages, but a party in the
    middle could be reading them: its credentials stay home."""
    with web(certs['self_signed']) as server:
        codes, docs, hf = fetch(server, site_spec(secrets_env))
    assert codes == [401, 403, 403] and {d['tls_verified'] for d in docs} == {False}
    assert hf.stats[C.credentials_withheld('unverified')] == 3


def test_secrets_are_references_checked_at_start(tmp_path, monkeypatch):
    for request, why in [({'user': 'u', 'password': 'plain'}, 'request.password: write it'),
                         ({'cookies': {'session': 'plain'}}, 'request.cookies: write cookie'),
                         ({'headers': {'Authorization': 'Bearer x'}},
                          'request.headers: write Authorization'),
                         ({'user': 'u'}, 'request.user and request.password go together'),
                         ({'headers': {'X-A': 'two\nlines'}}, 'request.headers must be')]:
        with pytest.raises(sites.SiteConfigError, match='films.toml: ' + why):
            sites.parse_site({'site': {'hosts': ['h']}, 'request': request}, 'films.toml')
    monkeypatch.delenv('MRCRAWL_TEST_PASSWORD', raising=False)
    conf = test_conf()
    conf['sites'] = [site_spec(str(tmp_path / 'absent'))]
    found = routes.secret_settings(conf)
    assert [w for w, _ in found] == ['films.toml: request.password',
                                     'films.toml: request.headers.X-Api-Key',
                                     'films.toml: request.cookies.session']
    with pytest.raises(secretref.SecretError, match='films.toml: request.password: '
                       r'\$\{MRCRAWL_TEST_PASSWORD\}: the environment variable is not set'):
        secretref.check(found[0][1], found[0][0])
    with pytest.raises(secretref.SecretError, match='cannot read the file'):
        secretref.check(found[2][1], found[2][0])


def test_digest_credentials_answer_the_challenge(monkeypatch):
    """auth = "digest" (lighttpd, as nginx has none): the 401's challenge is answered
    with the site's credentials; basic ones are refused there."""
    monkeypatch.setenv('MRCRAWL_TEST_PASSWORD', 's3c-ret')
    page = {'private/index.html': b'<html><title>in</title><body>inside</body></html>'}
    codes = {}
    with Lighttpd('crawler', 's3c-ret', page) as server:
        for auth in ('digest', 'basic'):
            spec = sites.parse_site({'site': {'hosts': ['127.0.0.1']}, 'request': {
                'user': 'crawler', 'password': '${MRCRAWL_TEST_PASSWORD}', 'auth': auth,
                'over_http': True}}, 'films.toml')
            conf = test_conf('politeness.delay=0', 'politeness.obey_robots=false')
            conf['sites'] = [spec]
            (doc,) = fetcher.HostFetcher(conf).fetch([{'url': server.url('/private/'),
                                                       'depth': 0}])
            codes[auth] = (doc['status'], doc['http_status'])
            assert 's3c-ret' not in str(doc)
    assert codes == {'digest': (R.FETCH_FETCHED, 200), 'basic': (R.FETCH_HTTP_ERROR, 401)}
    with pytest.raises(sites.SiteConfigError, match='request.auth must be one of basic, '
                       "digest, got 'ntlm'"):
        sites.parse_site({'site': {'hosts': ['h']}, 'request': {'auth': 'ntlm'}}, 'f.toml')
