"""br and zstd bodies from a real server: nginx sending pre-compressed files with their
Content-Encoding (as its brotli_static and gzip_static do), a page in each coding and a
bomb in each, cut at fetch.max_body_bytes and never held whole."""
import tracemalloc

import pytest

from drivers.fixtures.site import bomb, encoded
from jobs.lib import fetcher, records as R
from tests.helpers import test_conf
from tests.nginx import Nginx

pytestmark = pytest.mark.unit

SERVER = """
server {
    listen 127.0.0.1:PORT;
    root DIR/www;
    location ~ \\.br$ { types { } default_type "text/html; charset=utf-8";
                       add_header Content-Encoding br; }
    location ~ \\.zst$ { types { } default_type "text/html; charset=utf-8";
                        add_header Content-Encoding zstd; }
}
"""
PAGE = ('<html><head><title>Coded</title></head><body>%s</body></html>'
        % ('<p>came through its coding</p>' * 40)).encode()
SUFFIX = {'br': 'br', 'zstd': 'zst'}


@pytest.fixture(scope='module')
def server():
    files = {}
    for coding, suffix in SUFFIX.items():
        files['www/page.html.' + suffix] = encoded(coding, PAGE)
        files['www/bomb.html.' + suffix] = bomb(coding, 256)
    with Nginx(SERVER, files) as web:
        yield web


def fetch(server, path, *settings):
    hf = fetcher.HostFetcher(test_conf('politeness.delay=0', 'politeness.obey_robots=false',
                                       *settings))
    (doc,) = hf.fetch([{'url': server.url(path, scheme='http'), 'depth': 0}])
    return doc


@pytest.mark.parametrize('coding', ['br', 'zstd'])
def test_a_page_sent_in_br_or_zstd_is_read_as_sent_plain(server, coding):
    doc = fetch(server, '/page.html.' + SUFFIX[coding])
    assert doc['status'] == R.FETCH_FETCHED and doc['headers']['content-encoding'] == coding
    assert doc['body'].count('came through its coding') == 40
    assert doc['length'] == len(PAGE) and doc['truncated'] is False


@pytest.mark.parametrize('coding', ['br', 'zstd'])
def test_a_br_or_zstd_bomb_from_nginx_is_cut_at_the_limit(server, coding):
    """256 MiB of zeros (a few hundred KiB on the wire): 1 MiB kept, truncated, and
    memory never near the whole."""
    tracemalloc.start()
    try:
        doc = fetch(server, '/bomb.html.' + SUFFIX[coding], 'fetch.max_body_bytes=1048576')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert doc['status'] == R.FETCH_FETCHED and doc['headers']['content-encoding'] == coding
    assert doc['truncated'] is True and doc['length'] == 1048576
    assert peak < 16 * 1024 * 1024, peak
    assert server.requests()[-1]['status'] == '200'
