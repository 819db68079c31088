import pytest
from drivers.seeds import read_seeds

pytestmark = pytest.mark.unit


def test_bad_lines_counted_good_ones_kept(tmp_path):
    p = tmp_path / 'seeds.txt'
    p.write_bytes(b'\n'.join([
        b'# a comment', b'', b'   ', b'http://Example.COM:80/a/../b#x',
        b'https://example.org/  # a comment after the URL', b'relative/path.html',
        b'http://exa mple.com/', b'http://example.net/\tnutch.score=2.5',
        b'ftp://example.com/file', b'javascript:alert(1)', b'not a url at all',
        b'http://example.com/b', b'\xff\xfe garbage', b'http://[::1', b'mailto:x@y.z']))
    report = read_seeds(str(p))
    assert report.good == ['http://example.com/b', 'https://example.org/',
                           'http://example.net/']
    assert report.duplicates == 1
    assert report.bad == {'not_absolute_url': 2, 'not_http': 3, 'not_utf8': 1,
                          'whitespace_in_url': 2}
    assert sum(report.bad.values()) == len(report.examples)
    assert report.skipped == 3
