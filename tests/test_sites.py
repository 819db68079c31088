"""Per-site extraction (golden pages), the extract command, topical focus, robots
directives, and an end-to-end crawl of a static site with a site config and a topic."""
import http.server
import io
import json
import os
import threading
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout

import lxml.html
import pytest
from lxml import etree

from drivers.crawl import Crawl
from drivers.cli.extract import main_extract
from jobs.lib import config, extract, sites, topic, urls, xmlpage
from jobs.optimize import MROptimize
from jobs.parse import MRParse
from tests.helpers import ROOT, read_records, read_xml, test_conf
from tests.helpers import run_job, run_merge

pytestmark = pytest.mark.unit

DATA = os.path.join(ROOT, 'tests', 'data')
FILMS_TOML = os.path.join(DATA, 'sites', 'films.toml')
FILM_HTML = os.path.join(DATA, 'sites', 'film.html')
FILM_URL = 'http://films.example/film/1'


def film_html():
    with open(FILM_HTML, encoding='utf-8') as f:
        return f.read()


def extract_film(html_text, url=FILM_URL):
    spec = sites.load_file(FILMS_TOML)
    page = extract.Page(html_text, url, normalize=urls.normalizer(config.load()))
    return extract.extract_fields(page, spec['fields']), page, spec


# -- extraction: golden page --------------------------------------------------------

def test_golden_film_page_fields():
    (fields, missing), page, spec = extract_film(film_html())
    with open(os.path.join(DATA, 'sites', 'film.expected.json'), encoding='utf-8') as f:
        assert fields == json.load(f)
    assert missing == []
    assert extract.extract_resources(page, spec['resources']) == [
        {'name': 'trailer', 'url': 'http://films.example/media/avatar-trailer.mp4',
         'max_bytes': 1048576}]


def test_xpath_sees_the_html5_tree_not_a_lenient_guess():
    # The stray <p> inside <table> is foster-parented out of it by HTML5 tree
    # construction; libxml2's HTML parser would have kept it inside.
    assert lxml.html.fromstring(film_html()).xpath('//table//p')
    (fields, _), _, _ = extract_film(film_html())
    assert fields['NOTE_IN_TABLE'] is None


def test_checksum_changes_only_when_a_field_changes():
    base = extract.fields_checksum(extract_film(film_html())[0][0])
    assert base.startswith('crc32:') and len(base) == len('crc32:') + 8
    unrelated = film_html().replace('Filmed in 3D', 'Filmed in 3D, and more')
    assert extract.fields_checksum(extract_film(unrelated)[0][0]) == base
    changed = film_html().replace('1 234 567', '1 234 568')
    assert extract.fields_checksum(extract_film(changed)[0][0]) != base


def test_required_field_missing_is_reported():
    (fields, missing), _, _ = extract_film('<html><body><p>nothing here</p>')
    assert fields['TITLE'] is None and fields['CAST'] == [] and missing == ['TITLE']


@pytest.mark.parametrize('text,expected', [
    ('Year: 2009 г.', 2009), ('1,234 views', 1234), ('1 234 567', 1234567),
    ('-12 degrees', -12), ('no digits', None), ('3.5', 3)])
def test_to_int(text, expected):
    assert extract.to_int(text) == expected


@pytest.mark.parametrize('text,formats,expected', [
    ('2009-12-18T10:00:00Z', (), '2009-12-18'), ('18.12.2009', ('%d.%m.%Y',), '2009-12-18'),
    ('Dec 18, 2009', ('%b %d, %Y',), '2009-12-18'), ('2009-13-45', (), None),
    ('soon', ('%Y',), None)])
def test_to_date(text, formats, expected):
    assert extract.to_date(text, formats) == expected


# -- site configuration files -------------------------------------------------------

@pytest.mark.parametrize('body,message', [
    ('[site]\nhosts = ["a"]\nnmae = "x"\n', 'unknown key site.nmae'),
    ('[site]\n', 'site.hosts or site.urls'),
    ('[site]\nhosts = "a.com"\n[fields.T]\ncss = "h1"\ntype = "number"\n', 'fields.T.type'),
    ('[site]\nhosts = ["a"]\n[fields.T]\ntype = "text"\n', 'fields.T needs one of'),
    ('[site]\nhosts = ["a"]\n[fields.T]\nregex = "(unclosed"\n', 'fields.T.regex'),
    ('[site]\nhosts = ["a"]\n[fields.T]\nxpath = "//[bad"\n', 'fields.T.xpath'),
    ('[site]\nhosts = ["a"]\n[fields.T]\ncss = "h1"\nxpath = "//h1"\n', 'not both'),
    ('[site]\nhosts = ["a"]\n[links]\nfollow = ["("]\n', 'links.follow'),
    ('[site]\nhosts = ["a"]\nrefetch_interval = -5\n', 'site.refetch_interval'),
    ('[site\n', 'not valid TOML'),
])
def test_bad_site_files_name_file_and_key(tmp_path, body, message):
    path = tmp_path / 'bad.toml'
    path.write_text(body)
    with pytest.raises(sites.SiteConfigError) as e:
        sites.load_file(str(path))
    assert message in str(e.value) and str(path) in str(e.value)


def test_resolve_puts_site_configs_into_the_resolved_configuration(tmp_path):
    conf = sites.resolve(config.load())          # default: conf/sites
    assert [s['name'] for s in conf['sites']] == ['example-films']
    json.dumps(conf)                             # plain JSON for OUT/conf.json
    (tmp_path / 'a.toml').write_text('[site]\nname = "dup"\nhosts = ["a"]\n')
    (tmp_path / 'b.toml').write_text('[site]\nname = "dup"\nhosts = ["b"]\n')
    with pytest.raises(config.ConfigError, match='also used by'):
        sites.resolve(config.load(overrides=['parse.sites=["%s"]' % tmp_path]))
    with pytest.raises(config.ConfigError, match='no such file'):
        sites.resolve(config.load(overrides=['parse.sites=["/no/such/dir"]']))


def test_site_matching_by_host_glob_and_url():
    index = sites.SiteIndex([
        {'name': 'a', 'hosts': ['*.a.com'], 'urls': [], 'pages': [], 'follow': [],
         'deny': [], 'fields': {}, 'resources': {}},
        {'name': 'b', 'hosts': [], 'urls': [r'^https?://b\.org/shop/'], 'pages': [],
         'follow': [], 'deny': [], 'fields': {}, 'resources': {}}])
    assert index.match('http://www.a.com/x').name == 'a'
    assert index.match('https://b.org/shop/1').name == 'b'
    assert index.match('https://b.org/blog/1') is None


# -- the extract command ------------------------------------------------------------

def run_extract(*argv):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main_extract(list(argv))
    return rc, out.getvalue()


def test_extract_command_on_a_file_with_links():
    rc, out = run_extract('--site', FILMS_TOML, '--url', FILM_URL, '--links', FILM_HTML)
    assert rc == 0
    report = json.loads(out)
    assert report['matches_site'] and report['extracts_page']
    assert report['fields']['TITLE'] == 'Avatar' and report['fields']['YEAR'] == 2009
    assert report['links']['kept'] == [
        'http://films.example/people/cameron', 'http://films.example/people/worthington',
        'http://films.example/people/saldana', 'http://films.example/film/2']
    assert report['links']['rejected']['site_rule'] == [
        'http://films.example/login', 'http://elsewhere.example/']
    assert report['links']['rejected']['nofollow'] == ['http://films.example/shop/buy']


def test_extract_command_exit_statuses(tmp_path, capsys):
    empty = tmp_path / 'empty.html'
    empty.write_text('<p>no title</p>')
    assert run_extract('--site', FILMS_TOML, str(empty))[0] == 1     # required missing
    bad = tmp_path / 'bad.toml'
    bad.write_text('[site]\n')
    assert run_extract('--site', str(bad), FILM_HTML)[0] == 2
    assert 'site.hosts' in capsys.readouterr().err
    assert run_extract('--site', FILMS_TOML, str(tmp_path / 'missing.html'))[0] == 2


def test_extract_command_fetches_a_url(static_site):
    rc, out = run_extract('--site', FILMS_TOML, static_site + '/film/2')
    assert rc == 0
    report = json.loads(out)
    assert report['matches_site']         # hosts include 127.0.0.1
    assert report['fields']['TITLE'] == 'Titanic' and report['fields']['VIEWS'] == 98765


# -- parse and optimize jobs with sites, topic, robots directives ---------------------

def conf_file_with(tmp_path, *sets, site_files=(FILMS_TOML,)):
    conf = test_conf('parse.sites=%s' % json.dumps(list(site_files)), *sets)
    conf = sites.resolve(conf)
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(conf))
    return str(path)


def doc(url, body, headers=None):
    return {'kind': 'doc', 'url': url, 'final_url': url, 'status': 'fetched',
            'digest': 'sha1:' + url, 'body': body, 'headers': headers or {}}


@pytest.mark.job
def test_parse_job_adds_site_fields_and_applies_site_link_rules(tmp_path):
    conf_file = conf_file_with(tmp_path)
    out, counters = run_job(MRParse, conf_file, [
        doc(FILM_URL, film_html()),
        doc('http://films.example/people/x', '<a href="/login">l</a><a href="/film/9">f</a>'),
        doc('http://other.example/', '<title>Other</title>')])
    by_url = {r['url']: r for r in out}
    film = by_url[FILM_URL]
    assert film['site'] == 'films' and film['refetch_interval'] == 86400
    assert film['fields']['TITLE'] == 'Avatar' and film['fields']['CAST'] == [
        'Sam Worthington', 'Zoe Saldana']
    assert film['fields_checksum'] == extract.fields_checksum(film['fields'])
    assert film['resources'][0]['url'] == 'http://films.example/media/avatar-trailer.mp4'
    person = by_url['http://films.example/people/x']
    assert person['site'] == 'films' and person['fields'] is None   # not a /film/N page
    assert [l['url'] for l in person['links']] == ['http://films.example/film/9']
    other = by_url['http://other.example/']
    assert other['site'] is None and other['fields'] is None
    c = counters['parse']
    assert c['site_pages_total'] == 2 and c['fields_extracted_total'] == 1
    assert c['link_rejected_site_rule_total'] == 3   # /login twice, elsewhere.example
    assert c['resources_found_total'] == 1


@pytest.mark.job
def test_noindex_and_nofollow_from_meta_and_header(tmp_path):
    conf_file = conf_file_with(tmp_path)
    out, counters = run_job(MRParse, conf_file, [
        doc('http://h.com/meta', '<meta name=robots content="noindex,nofollow"><a href=/a>a</a>'),
        doc('http://h.com/hdr', '<a href=/b>b</a><a href=/c>c</a>',
            {'x-robots-tag': 'noindex'}),
        doc('http://h.com/none', '<a href=/d>d</a>', {'x-robots-tag': 'none'})])
    by_url = {r['url']: r for r in out}
    assert by_url['http://h.com/meta']['noindex'] and by_url['http://h.com/meta']['links'] == []
    hdr = by_url['http://h.com/hdr']
    assert hdr['noindex'] and not hdr['nofollow'] and len(hdr['links']) == 2
    assert by_url['http://h.com/none']['links'] == []
    assert counters['parse']['link_rejected_page_nofollow_total'] == 2
    assert counters['parse']['pages_noindex_total'] == 3
    merged, _ = run_merge(conf_file, out)   # noindex pages stay out of merged/
    assert merged == []


TERMS = '["film=2", "director", "cast", "re:avatar|titanic"]'


def test_topic_profile_scores():
    p = topic.Profile(['film=2', 're:crawl(er|ing)?', 'machine learning=-1'])
    assert p.score('', '') == 0
    assert p.score('Film', 'a film, films') == pytest.approx(2 * 2.0)  # title x2 + 1 hit
    assert p.score('', 'Machine  Learning crawler') == pytest.approx(0.0)
    with pytest.raises(topic.TopicError):
        topic.Profile(['re:(x'])
    with pytest.raises(config.ConfigError, match='topic.off_topic_links'):
        config.load(overrides=['topic.off_topic_links=maybe'])


@pytest.mark.job
@pytest.mark.parametrize('policy', ['follow', 'drop', 'deprioritise'])
def test_off_topic_link_policies(tmp_path, policy):
    conf_file = conf_file_with(tmp_path, 'topic.terms=' + TERMS,
                               'topic.off_topic_links=' + policy)
    off = doc('http://g.com/garden', '<title>Garden</title><p>tomatoes</p><a href=/x>x</a>')
    on = doc('http://g.com/films', '<title>Film</title><p>Avatar director</p><a href=/y>y</a>')
    out, counters = run_job(MRParse, conf_file, [off, on])
    by_url = {r['url']: r for r in out}
    assert by_url['http://g.com/films']['on_topic'] is True
    assert by_url['http://g.com/garden']['on_topic'] is False
    assert by_url['http://g.com/garden']['relevance'] == 0
    c = counters['parse']
    assert c['pages_on_topic_total'] == 1 and c['pages_off_topic_total'] == 1
    garden = by_url['http://g.com/garden']
    if policy == 'drop':
        assert garden['links'] == [] and c['link_rejected_off_topic_total'] == 1
    else:
        assert len(garden['links']) == 1
        assert garden['link_depth_step'] == (2 if policy == 'deprioritise' else 1)
    db, _ = run_job(MROptimize, conf_file, [dict(r, depth=0) for r in out])
    by_url = {r['url']: r for r in db}
    assert by_url['http://g.com/y']['depth'] == 1 and by_url['http://g.com/y']['topic_inlinks'] == 1
    if policy != 'drop':
        assert by_url['http://g.com/x']['depth'] == (2 if policy == 'deprioritise' else 1)
        assert 'topic_inlinks' not in by_url['http://g.com/x']


@pytest.mark.job
def test_optimize_marks_changed_fields(tmp_path):
    conf_file = conf_file_with(tmp_path)
    db = [{'kind': 'db', 'url': 'http://f/1', 'status': 'fetched', 'depth': 0,
           'inlinks': 0, 'fields_checksum': 'crc32:00000001'},
          {'kind': 'db', 'url': 'http://f/2', 'status': 'fetched', 'depth': 0,
           'inlinks': 0, 'fields_checksum': 'crc32:00000002'}]
    pages = [{'kind': 'page', 'url': 'http://f/1', 'status': 'fetched', 'depth': 0,
              'links': [], 'fields_checksum': 'crc32:00000001', 'refetch_interval': 60},
             {'kind': 'page', 'url': 'http://f/2', 'status': 'fetched', 'depth': 0,
              'links': [], 'fields_checksum': 'crc32:0000000f'}]
    out, counters = run_job(MROptimize, conf_file, db + pages)
    by_url = {r['url']: r for r in out}
    assert by_url['http://f/1']['fields_changed'] is False
    assert by_url['http://f/1']['refetch_interval'] == 60
    assert by_url['http://f/2']['fields_changed'] is True
    assert by_url['http://f/2']['fields_checksum'] == 'crc32:0000000f'
    assert counters['optimize']['fields_changed_total'] == 1
    assert counters['optimize']['fields_unchanged_total'] == 1


def test_fields_in_xml_validate_against_the_schema():
    (fields, _), _, _ = extract_film(film_html())
    page = {'url': FILM_URL, 'status': 'fetched', 'http_status': 200,
            'fetch_time': '2026-11-30T00:00:00Z', 'depth': 1, 'layer': 1, 'title': 'A',
            'text': '', 'links': [], 'duplicates': [], 'site': 'films', 'fields': fields,
            'fields_checksum': extract.fields_checksum(fields)}
    doc_text = xmlpage.page_xml(page)
    schema = etree.XMLSchema(etree.parse(os.path.join(ROOT, 'conf', 'page.xsd')))
    schema.assertValid(etree.fromstring(doc_text.encode()))
    root = ET.fromstring(doc_text)
    el = root.find('fields')
    assert el.get('site') == 'films' and el.get('checksum') == page['fields_checksum']
    got = {f.get('name'): f for f in el}
    assert got['YEAR'].text == '2009' and got['YEAR'].get('type') == 'int'
    assert [i.text for i in got['CAST']] == ['Sam Worthington', 'Zoe Saldana']
    assert got['NOTE_IN_TABLE'].get('null') == 'true'


# -- end to end: a static site with a site config and a topic profile -----------------

class _StaticHandler(http.server.BaseHTTPRequestHandler):
    """Serves tests/data/films_site as text/html (robots.txt as text/plain)."""
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split('?', 1)[0]
        self.server.paths.append(path)
        if path == '/robots.txt':
            body, ctype = b'User-agent: *\nDisallow:\n', 'text/plain'
        else:
            name = 'index.html' if path == '/' else path.lstrip('/')
            full = os.path.normpath(os.path.join(DATA, 'films_site', name))
            if not full.startswith(os.path.join(DATA, 'films_site')) or not os.path.isfile(full):
                body = b'not found'
                self.send_response(404)
                self.send_header('Content-Type', 'text/plain')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            with open(full, 'rb') as f:
                body, ctype = f.read(), 'text/html; charset=utf-8'
        self.send_response(200)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def static_site():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _StaticHandler)
    server.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield 'http://127.0.0.1:%d' % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    static_site.paths = server.paths


@pytest.mark.crawl
def test_crawl_with_site_config_and_topic_profile(static_site, tmp_path):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text(static_site + '/\n')
    conf = sites.resolve(test_conf(
        'politeness.delay=0', 'parse.sites=%s' % json.dumps([FILMS_TOML]),
        'topic.terms=' + TERMS, 'topic.off_topic_links=drop'))
    out = str(tmp_path / 'crawl')
    report = Crawl(out, conf, runner='inline', depth=2,
                   progress=lambda m: None).run(str(seeds))

    pages = {r['url'][len(static_site):]: r for layer in ('000', '001', '002')
             for r in read_records(os.path.join(out, 'out', layer))}
    assert '/login' not in pages                          # site link rule
    assert '/film/3' not in pages                         # linked only from off-topic page
    assert pages['/gardening.html']['on_topic'] is False
    assert pages['/film/2']['fields']['TITLE'] == 'Titanic'
    assert pages['/film/1']['fields']['YEAR'] == 2009
    assert pages['/film/1']['site'] == 'films' and pages['/']['fields'] is None

    xml = read_xml(os.path.join(out, 'xml'))
    schema = etree.XMLSchema(etree.parse(os.path.join(ROOT, 'conf', 'page.xsd')))
    for doc_text in xml.values():
        schema.assertValid(etree.fromstring(doc_text.encode('utf-8')))
    film2 = ET.fromstring(xml[static_site + '/film/2'])
    assert {f.get('name'): f.text for f in film2.find('fields')}['VIEWS'] == '98765'
    assert static_site + '/people/cameron' not in xml     # meta robots noindex
    assert ET.fromstring(xml[static_site + '/']).find('fields') is None

    merged = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    assert merged[static_site + '/film/1']['fields_checksum'] == pages['/film/1'][
        'fields_checksum']
    topic_report = report['topic']
    on = sum(1 for p in pages.values() if p['on_topic'])
    off = sum(1 for p in pages.values() if p['on_topic'] is False)
    assert topic_report == {'on_topic': on, 'off_topic': off,
                            'harvest_rate': round(on / (on + off), 4)}
    assert off >= 1 and on >= 4
    layer1 = report['layers'][1]['links_rejected']
    assert layer1['off_topic'] == 1


def test_hosts_with_a_port_match_that_host_on_that_port(tmp_path):
    """hosts = ["127.0.0.1:PORT"], as a site on loopback is written, matches the URLs of
    that host and port (a default port where the URL names none), and no other port;
    its entry URL is a page of the site. A bare host still matches every port."""
    path = tmp_path / 'local.toml'
    path.write_text('[site]\nhosts = ["127.0.0.1:8080", "*.films.example:443", "[::1]:81", '
                    '"Plain.example"]\nentry = ["http://127.0.0.1:8080/start"]\n')
    spec = sites.load_file(str(path))
    assert spec['hosts'] == ['127.0.0.1:8080', '*.films.example:443', '[::1]:81',
                             'plain.example']
    assert spec['entry'] == ['http://127.0.0.1:8080/start']
    index = sites.SiteIndex([spec])
    for url, matched in (('http://127.0.0.1:8080/a', True), ('http://127.0.0.1:8081/a', False),
                         ('http://127.0.0.1/a', False), ('https://www.films.example/x', True),
                         ('https://www.films.example:8443/x', False),
                         ('http://www.films.example/x', False), ('http://[::1]:81/', True),
                         ('http://[::1]/', False), ('http://plain.example:9999/', True),
                         ('http://plain.example/', True)):
        assert (index.match(url) is not None) == matched, url
    site_conf = sites.parse_site({'site': {'hosts': ['127.0.0.1:80']}}, 'x.toml')
    assert sites.SiteIndex([site_conf]).match('http://127.0.0.1/') is not None


@pytest.mark.parametrize('entry,message', [
    ('http://films.example/', '\'http://films.example/\' is not a host name: write '
                              '"films.example" (the host alone, or "host:port")'),
    ('https://127.0.0.1:8080/x', 'write "127.0.0.1:8080"'),
    ('films.example/shop', 'write "films.example"'),
    ('films.example:notaport', "the port 'notaport' is not a number from 1 to 65535"),
    ('films.example:0', "the port '0' is not a number from 1 to 65535"),
    ('films.example:', "the port '' is not a number"),
    ('::1', 'an IPv6 address goes in brackets'),
])
def test_a_bad_hosts_entry_says_what_to_write(tmp_path, entry, message):
    path = tmp_path / 'bad.toml'
    path.write_text('[site]\nhosts = [%s]\n' % json.dumps(entry))
    with pytest.raises(sites.SiteConfigError) as e:
        sites.load_file(str(path))
    text = str(e.value)
    assert text.startswith('%s: site.hosts: %r' % (path, entry)), text
    assert message in text and '\n' not in text
