"""Coverage-guided fuzzing (atheris/libFuzzer) of the HTML-to-records path.

One input is cut by atheris' FuzzedDataProvider into a page URL, a Content-Type header
and a body. The body goes the way a fetched page goes through the crawl:

    encoding.decode(bytes, content-type)   the fetcher's sniffing and decoding
    MRParse.parse_doc(doc record)          jobs.lib.html.parse, site extraction,
                                           link normalisation and filters
    orjson.dumps(page)                     what the parse job writes to out/
    xmlpage.page_xml(page as merged)       the xml/ document

and these invariants are checked (any failure is a crash for the fuzzer):

- parse_doc returns one page record for the doc and never hides an exception as
  ``parse_error`` or ``extract_error``;
- every kept link is an http(s) URL that normalises to itself, has no fragment, and
  the page keeps at most ``parse.max_links_per_page`` links;
- the page serialises as JSON (no lone surrogates) and its text is within
  ``parse.max_text_chars``;
- the XML is one line, parses, and its title and text are the page's, minus the
  characters XML 1.0 cannot hold.

Run (not part of CI; see README "Tests")::

    .venv/bin/python fuzz/fuzz_parse.py -max_total_time=600 -rss_limit_mb=2048 \
        -max_len=65536 fuzz/corpus fuzz/seeds

``fuzz/corpus`` (created, grows as coverage grows) and ``fuzz/seeds`` (a few real pages)
are the corpus folders; crashes are written as ``crash-*`` files in the current folder
and replay with ``.venv/bin/python fuzz/fuzz_parse.py crash-FILE``.
"""
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import atheris

with atheris.instrument_imports():
    import orjson
    from jobs.lib import config, encoding, html, sites, urls, xmlpage
    from jobs.parse import MRParse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Page URLs: a plain host, the example site (so site extraction runs), odd bases.
BASES = ['http://h.example/dir/page.html', 'https://films.example/film/42',
         'http://films.example/films?page=2', 'http://[::1]:8080/a/b/?q=1#f',
         'http://xn--caf-dma.example/%7Euser/', 'https://h.example']
CTYPES = [None, 'text/html', 'text/html; charset=utf-8', 'text/html; charset=latin1',
          'text/html; charset=utf-16', 'text/html; charset=shift_jis',
          'application/xhtml+xml; charset=bogus', 'text/html; charset=x-user-defined']


def _job():
    conf = sites.resolve(config.load(overrides=[
        'parse.sites=["%s"]' % os.path.join(ROOT, 'conf', 'sites'),
        'parse.max_links_per_page=200', 'parse.max_text_chars=5000']))
    fd, path = tempfile.mkstemp(prefix='fuzz-conf-', suffix='.json')
    with os.fdopen(fd, 'w') as f:
        json.dump(conf, f)
    job = MRParse(['--crawl-conf', path])
    job.counters = {}

    def count(name, amount=1):
        job.counters[name] = job.counters.get(name, 0) + amount
    job.count = count          # counters in a dict, not on stderr
    job.mapper_init_parse()
    os.remove(path)
    return job, conf


JOB, CONF = _job()
MAX_LINKS = CONF['parse']['max_links_per_page']
MAX_TEXT = CONF['parse']['max_text_chars']


def check_page(doc, body_text):
    page = JOB.parse_doc(dict(doc, body=body_text))
    assert page['kind'] == 'page' and page['url'] == doc['url']
    assert 'parse_error' not in page, page.get('parse_error')
    assert 'extract_error' not in page, page.get('extract_error')
    assert 'body' not in page
    assert len(page['links']) <= MAX_LINKS
    assert len(page['text']) <= MAX_TEXT
    for link in page['links']:
        url = link['url']
        assert url.startswith(('http://', 'https://')), url
        assert '#' not in url, url
        assert JOB.normalize(url) == url, url
    orjson.dumps(page)         # what the job writes; raises on lone surrogates
    return page


def check_xml(page):
    merged = dict(page, kind='merged', duplicates=[page['url'] + '?dup'])
    out = xmlpage.page_xml(merged)
    assert '\n' not in out and '\r' not in out
    root = ET.fromstring(out)
    assert root.findtext('url') == xmlpage.clean(page['url'])
    assert (root.findtext('title') or '') == xmlpage.clean(page['title'] or '')
    assert (root.findtext('text') or '') == xmlpage.clean(page['text'] or '')
    hrefs = [el.get('href') for el in root.iter('link')]
    assert hrefs == [xmlpage.clean(l['url']) for l in page['links']]


def TestOneInput(data):
    fdp = atheris.FuzzedDataProvider(data)
    base = BASES[fdp.ConsumeIntInRange(0, len(BASES) - 1)]
    ctype = CTYPES[fdp.ConsumeIntInRange(0, len(CTYPES) - 1)]
    depth = fdp.ConsumeIntInRange(0, 2)
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    text, enc = encoding.decode(body, ctype)
    assert isinstance(text, str) and enc
    doc = {'kind': 'doc', 'url': base, 'final_url': urls.normalize(base) or base,
           'depth': depth, 'layer': depth, 'status': 'fetched', 'http_status': 200,
           'content_type': 'text/html', 'encoding': enc, 'digest': 'sha1:X',
           'fetch_time': '2026-11-30T00:00:00Z', 'length': len(body),
           'headers': {'x-robots-tag': 'noarchive'} if depth == 2 else {}}
    page = check_page(doc, text)
    check_xml(page)
    # The same bytes as Latin-1 text (every byte a character: NUL and controls
    # included), cut in the middle as a fetch's body limit cuts a page.
    check_xml(check_page(doc, body.decode('latin-1')[:len(body) // 2]))


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == '__main__':
    main()
