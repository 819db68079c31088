"""Content types as plug-ins (jobs/lib/content.py): plain text, PDF, one of your own,
and hostile PDFs held to the parser's time and memory limits."""
import json
import os
import time

import pytest
from lxml import etree

from drivers.fixtures.site import html_page, link_list
from jobs.lib import config, content, filters
from tests.helpers import ROOT, crawl_site, read_records, read_xml, test_conf
from tests.pdfs import make_pdf

pytestmark = pytest.mark.unit


def limits(**changes):
    parse = dict(config.load()['parse'])
    parse.update(changes)
    return parse


def parse_pdf(data, **changes):
    registry = content.Registry(['pdf'])
    return registry.parse(registry.by_type['application/pdf'], data,
                          'http://127.0.0.1/doc.pdf', limits(**changes))


def test_a_pdf_gives_its_title_text_and_links():
    data = make_pdf(['Rivers of Europe, see https://example.org/danube.html', 'The Rhine'],
                    title='Rivers', links=['https://example.org/rhine.html', '/seine.html'])
    got = parse_pdf(data)
    assert got['title'] == 'Rivers'
    assert got['text'] == 'Rivers of Europe, see https://example.org/danube.html The Rhine'
    # Link annotations first, then the URLs written in the text.
    assert [link['url'] for link in got['links']] == [
        'https://example.org/rhine.html', '/seine.html', 'https://example.org/danube.html']


@pytest.mark.parametrize('kind', ['truncated', 'encrypted', 'garbage'])
def test_an_unreadable_pdf_is_an_error_with_a_reason(kind):
    data = {'truncated': make_pdf(['a page cut in the middle'] * 3)[:300],
            'encrypted': make_pdf(['secret'], encrypted=True),
            'garbage': b'%PDF-1.7\n' + os.urandom(2000)}[kind]
    with pytest.raises(content.ParserError) as e:
        parse_pdf(data)
    assert str(e.value).startswith('pdf_'), e.value


def test_a_compression_bomb_meets_the_memory_limit_and_the_task_goes_on():
    """300 MB of spaces in a 300 KB stream: with 64 MB allowed the child dies, the
    caller gets an error at once; with enough memory the same file reads."""
    data = make_pdf(['bomb'], bomb_mb=300)
    assert len(data) < 1 << 20
    start = time.monotonic()
    with pytest.raises(content.ParserError) as e:
        parse_pdf(data, parser_memory_mb=64)
    assert str(e.value) in ('memory', 'died_sigabrt', 'died_sigsegv', 'died_sigkill')
    assert time.monotonic() - start < 10
    assert parse_pdf(data, parser_memory_mb=2048)['text'] == 'bomb'


def test_a_huge_pdf_is_read_up_to_its_page_limit():
    data = make_pdf(['page %d' % i for i in range(1, 1201)])
    assert parse_pdf(data, pdf_max_pages=3)['text'] == 'page 1 page 2 page 3'
    got = parse_pdf(data, max_text_chars=40)
    assert len(got['text']) <= 40 and got['text'].startswith('page 1 page 2')


class SlowParser:
    """A parser that never finishes: the time limit ends it."""
    name = 'slow'
    types = ('application/x-slow',)
    extensions = ('slow',)
    sandbox = True

    def parse(self, data, url, limits):
        time.sleep(60)


class CsvParser:
    """A parser of your own: the first row is the title, cells are the text, and cells
    that look like URLs are links."""
    name = 'csv'
    types = ('text/csv',)
    extensions = ('csv',)
    sandbox = False

    def parse(self, data, url, limits):
        rows = [line.split(',') for line in data.decode('utf-8').splitlines() if line]
        cells = [c.strip() for row in rows for c in row]
        return {'title': ' '.join(rows[0]) if rows else None, 'text': ' '.join(cells),
                'links': [{'url': c, 'text': 'csv'} for c in cells if c.startswith('/')]}


def test_a_parser_past_its_time_is_stopped():
    registry = content.Registry(['tests.test_content:SlowParser'])
    start = time.monotonic()
    with pytest.raises(content.ParserError) as e:
        registry.parse(registry.parsers[0], b'x', 'u', limits(parser_seconds=0.5))
    assert str(e.value) == 'timeout' and time.monotonic() - start < 5


def test_parsers_that_cannot_load_are_configuration_errors():
    for bad, why in (('nope', 'neither a built-in'), ('no.such.module:X', 'cannot load'),
                     ('tests.test_content:limits', 'has no')):
        with pytest.raises(config.ConfigError) as e:
            config.load(overrides=['parse.parsers=["%s"]' % bad])
        assert 'parse.parsers' in str(e.value) and why in str(e.value)


def test_a_parsers_extensions_pass_the_link_filter():
    default = filters.LinkFilter.for_conf(config.load())
    assert default.reason('http://a.com/report.pdf') is None          # "pdf" by default
    assert default.reason('http://a.com/sheet.csv') is None           # not denied anyway
    none = filters.LinkFilter.for_conf(config.load(overrides=['parse.parsers=[]']))
    assert none.reason('http://a.com/report.pdf') == 'extension'


@pytest.mark.crawl
def test_pdf_text_and_your_own_type_are_crawled_merged_and_written_as_xml(site, tmp_path):
    """A page links a PDF, a text file and a CSV: each becomes a page of its own, through
    merge and XML, with its content type; the PDF's and the CSV's links are followed."""
    site.overrides['/'] = html_page('Home', link_list('/docs/report.pdf', '/docs/notes.txt',
                                               '/docs/table.csv'))
    site.overrides['/docs/report.pdf'] = ('typed', 'application/pdf', make_pdf(
        ['Annual report about rivers and lakes'], title='Annual report',
        links=['/docs/from-pdf.html']))
    site.overrides['/docs/notes.txt'] = ('typed', 'text/plain; charset=utf-8',
                                         b'Plain   notes\nabout lakes')
    site.overrides['/docs/table.csv'] = ('typed', 'text/csv',
                                         b'City,Lake\n/docs/from-csv.html,x\n')
    site.overrides['/docs/cut.pdf'] = ('typed', 'application/pdf', make_pdf(
        ['a page cut in the middle'] * 3)[:300])
    site.overrides['/'] = html_page('Home', link_list('/docs/report.pdf', '/docs/notes.txt',
                                               '/docs/table.csv', '/docs/cut.pdf'))
    site.overrides['/docs/from-pdf.html'] = html_page('Linked from the PDF', '<p>yes</p>')
    site.overrides['/docs/from-csv.html'] = html_page('Linked from the CSV', '<p>yes</p>')
    conf = test_conf('politeness.delay=0.02',
                     'parse.parsers=["text", "pdf", "tests.test_content:CsvParser"]')
    out, report = crawl_site(site, tmp_path, conf, depth=2)
    merged = {r['url'][len(site.url('')):]: r for r in read_records(os.path.join(out, 'merged'))}
    pdf = merged['/docs/report.pdf']
    assert pdf['content_type'] == 'application/pdf' and pdf['title'] == 'Annual report'
    assert pdf['text'] == 'Annual report about rivers and lakes'
    assert merged['/docs/notes.txt']['text'] == 'Plain notes about lakes'
    assert merged['/docs/table.csv']['title'] == 'City Lake'
    assert {'/docs/from-pdf.html', '/docs/from-csv.html'} <= set(merged)
    xml = read_xml(os.path.join(out, 'xml'))
    doc = etree.fromstring(xml[site.url('/docs/report.pdf')].encode('utf-8'))
    assert doc.findtext('fetch/content_type') == 'application/pdf'
    assert doc.find('fetch').get('parser') == 'pdf' and doc.find('fetch/parse_error') is None
    schema = etree.XMLSchema(etree.parse(os.path.join(ROOT, 'conf', 'page.xsd')))
    schema.assertValid(doc)
    # A PDF no parser can read is a document of its fetch metadata, saying why.
    cut = etree.fromstring(xml[site.url('/docs/cut.pdf')].encode('utf-8'))
    schema.assertValid(cut)
    assert cut.find('fetch').get('parser') == 'pdf'
    assert cut.findtext('fetch/parse_error').startswith('pdf: pdf_')
    home = etree.fromstring(xml[site.url('/')].encode('utf-8'))
    assert home.find('fetch').get('parser') is None          # HTML
    fetched = [read_records(os.path.join(out, 'out', n)) for n in sorted(os.listdir(
        os.path.join(out, 'out')))]
    assert [p['url'] for layer in fetched for p in layer if p.get('parse_error')] == [
        site.url('/docs/cut.pdf')]
    # The PDF's bytes are in its WARC record (the raw-body store), not in the records.
    from jobs.lib import warcfile
    page = next(p for layer in fetched for p in layer if p['url'].endswith('report.pdf'))
    assert 'raw_body' not in page
    data, ctype = warcfile.read_payload(out, page)
    assert data == site.overrides['/docs/report.pdf'][2] and ctype == 'application/pdf'
    with open(os.path.join(out, 'steps', 'fetch-001.json')) as f:
        counted = {k: v for group in json.load(f)['counters'].values()
                   for k, v in group.items()}
    assert counted['content_pdf_total'] == counted['content_csv_total'] == 1
    assert counted['content_text_total'] == 1
