"""``mrcrawl index OUT --solr URL`` against a real Solr 9 (``make solr-up`` starts it on
127.0.0.1:8983 with the ``mrcrawl`` core of conf/solr/mrcrawl; ``make test`` starts and
stops it). If it is not there the tests fail, loudly.

A crawl indexed; its next cycle (a changed, a new and a deleted page) applied as a
delta; the Solr's documents are the crawl's current pages; a site field is searchable as
its type; an index run killed half-way and run again gives the index a clean run gives.
Each test's documents are its crawl's (the ``crawl`` field): tests share the core."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from drivers.export.solr import SolrIndexer
from drivers.fixtures.site import html_page, link_list
from jobs.lib import sites, solr
from tests.helpers import ROOT, crawl_site, current_xml, test_conf

pytestmark = pytest.mark.crawl

SOLR = os.environ.get('MRCRAWL_SOLR_URL', 'http://127.0.0.1:8983/solr/mrcrawl')

SITE_TOML = '''[site]
name = "shop"
hosts = ["127.0.0.1"]
pages = ['/s/item-\\d+\\.html$']

[fields.price]
css = "span.price"
type = "float"

[fields.released]
css = "time"
attr = "datetime"
type = "date"

[fields.tags]
css = "li.tag"
type = "list"

[fields.stock]
css = "b.stock"
type = "int"
'''


def item(n, price, released, tags, stock, words):
    return html_page('Item %d' % n, '<h1>Item %d</h1><p>%s</p><span class=price>%s</span>'
                     '<time datetime="%s">then</time><ul>%s</ul><b class=stock>%d</b>' % (
                         n, words, price, released,
                         ''.join('<li class=tag>%s</li>' % t for t in tags), stock))


PAGES = {
    '/': html_page('Shop', link_list('/s/item-1.html', '/s/item-2.html', '/s/item-3.html')),
    '/s/item-1.html': item(1, '12.50', '2024-03-01', ['red', 'steel'], 5,
                           'a kettle for rivers of tea'),
    '/s/item-2.html': item(2, '99.00', '2019-06-30', ['blue'], 0, 'a teapot of porcelain'),
    '/s/item-3.html': item(3, '7.25', '2025-11-11', ['red'], 12, 'a mug that will be gone'),
}


def query(fq, q='*:*', **params):
    resp = requests.get(SOLR + '/select', params=dict(params, q=q, fq=fq, rows=1000,
                                                      wt='json'), timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()['response']


def docs_of(out):
    """The crawl's documents in Solr, by id, without Solr's own _version_."""
    found = query('crawl:' + solr.quoted(out), sort='id asc')['docs']
    return {d['id']: {k: v for k, v in d.items() if k != '_version_'} for d in found}


@pytest.fixture
def shop(site, tmp_path):
    try:
        requests.get(SOLR + '/admin/ping', timeout=10).raise_for_status()
    except requests.RequestException as e:
        pytest.fail('no Solr at %s (make solr-up): %s' % (SOLR, e))
    site.overrides.update(PAGES)
    toml = tmp_path / 'shop.toml'
    toml.write_text(SITE_TOML)
    conf = sites.resolve(test_conf('politeness.delay=0.02', 'recrawl.interval=0',
                                   'parse.sites=%s' % json.dumps([str(toml)])))
    return site, conf


def index(out, *args, quiet=False):
    res = subprocess.run([sys.executable, '-m', 'drivers.cli', 'index', out, '--solr', SOLR,
                          '-r', 'inline'] + list(args) + (['-q'] if quiet else []), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_a_crawl_and_its_next_cycle_are_indexed_base_then_delta(shop, tmp_path):
    site, conf = shop
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    printed = index(out)
    assert [line.split()[0] for line in printed.splitlines() if line.startswith('  ')] == \
        ['001']
    base = site.url('')
    current = current_xml(out)
    assert set(docs_of(out)) == set(current) and len(current) == 4
    assert 'solr %s: 4 document(s) of this crawl, build 001' % SOLR in printed
    # Site fields, searchable as their types; the main text as text.
    crawl = 'crawl:' + solr.quoted(out)
    ids = lambda q: sorted(d['id'][len(base):] for d in query(crawl, q)['docs'])  # noqa
    assert ids('price_d:[10 TO 20]') == ['/s/item-1.html']
    assert ids('released_dt:[2024-01-01T00:00:00Z TO NOW]') == ['/s/item-1.html',
                                                              '/s/item-3.html']
    assert ids('tags_ss:red') == ['/s/item-1.html', '/s/item-3.html']
    assert ids('stock_l:0') == ['/s/item-2.html']
    assert ids('rivers') == ['/s/item-1.html'] and ids('title:teapot') == []
    doc = docs_of(out)[base + '/s/item-1.html']
    assert (doc['title'], doc['http_status'], doc['build'], doc['site']) == \
        ('Item 1', 200, '001', 'shop')
    assert doc['warc_file'].startswith('warc/') and doc['warc_offset'] >= 0

    # The next cycle: an edit, a new page, a page gone (404).
    o = site.overrides
    o['/'] = html_page('Shop', link_list('/s/item-1.html', '/s/item-2.html',
                                          '/s/item-3.html', '/s/item-4.html'))
    o['/s/item-2.html'] = item(2, '89.00', '2019-06-30', ['blue', 'sale'], 3,
                               'a teapot of porcelain, cheaper')
    o['/s/item-3.html'] = None
    o['/s/item-4.html'] = item(4, '15.00', '2026-01-02', ['green'], 1, 'a new tray')
    crawl_site(site, tmp_path, conf, depth=1)
    outputs = json.load(open(os.path.join(out, 'outputs.json')))
    assert outputs['base'] == '001' and outputs['deltas'] == ['002']
    printed = index(out)
    posted = [line.split()[0] for line in printed.splitlines() if line.startswith('  ')]
    assert posted == ['002']                     # the delta only, not the base again
    current = current_xml(out)
    assert set(docs_of(out)) == set(current) and len(current) == 4
    assert base + '/s/item-3.html' not in current
    assert ids('price_d:[10 TO 20]') == ['/s/item-1.html', '/s/item-4.html']
    assert ids('tags_ss:sale') == ['/s/item-2.html'] and ids('mug') == []
    assert docs_of(out)[base + '/s/item-2.html']['build'] == '002'
    state = json.load(open(os.path.join(out, 'solr.json')))
    assert state[SOLR]['base'] == '001' and state[SOLR]['deltas'] == ['002']
    # Nothing new: nothing posted.
    assert index(out, quiet=True).strip() == '4 document(s)'
    # Not while a crawl holds the folder (it would replace the outputs under the job).
    with open(os.path.join(out, 'lock.json'), 'w') as f:
        json.dump({'host': socket.gethostname(), 'pid': os.getpid(), 'started': 'now'}, f)
    res = subprocess.run([sys.executable, '-m', 'drivers.cli', 'index', out, '--solr', SOLR],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and 'in use by another mrcrawl run' in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_an_index_run_killed_half_way_and_rerun_gives_a_clean_runs_index(site, tmp_path):
    try:
        requests.get(SOLR + '/admin/ping', timeout=10).raise_for_status()
    except requests.RequestException as e:
        pytest.fail('no Solr at %s (make solr-up): %s' % (SOLR, e))
    out, report = crawl_site(site, tmp_path, test_conf(), depth=2)
    pages = len(current_xml(out))
    assert pages >= 8
    # One document a request, two requests a second (seen within a second: Solr's soft
    # commit): killed once some, not all, are in.
    slow = subprocess.Popen([sys.executable, '-m', 'drivers.cli', 'index', out, '--solr',
                             SOLR, '-r', 'inline', '--set', 'solr.batch_docs=1', '--set',
                             'solr.max_batches_per_second=2'], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(docs_of(out)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    slow.send_signal(signal.SIGKILL)
    slow.wait()
    assert 2 <= len(docs_of(out)) < pages
    assert not os.path.exists(os.path.join(out, 'solr.json'))    # nothing recorded
    index(out)
    after_rerun = docs_of(out)
    assert len(after_rerun) == pages
    # A clean run: the crawl's documents gone, its record too, then indexed again.
    poster = solr.Poster(SOLR, test_conf()['solr'], lambda n, k: None, print)
    poster.delete_query('crawl:' + solr.quoted(out))
    poster.commit()
    os.remove(os.path.join(out, 'solr.json'))
    assert docs_of(out) == {}
    SolrIndexer(out, json.load(open(os.path.join(out, 'conf.json'))), SOLR, 'inline',
                lambda m: None).run()
    assert docs_of(out) == after_rerun


def test_a_folder_crawled_anew_replaces_the_old_crawls_documents(shop, tmp_path):
    """The folder deleted and crawled again (OUT/solr.json gone with it, the build again
    named 001): the old crawl's pages are not the new one's, and go."""
    site, conf = shop
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    index(out)
    assert len(docs_of(out)) == 4
    shutil.rmtree(out)
    site.overrides['/'] = html_page('Shop', link_list('/s/item-1.html'))
    time.sleep(1.1)            # the new crawl's first cycle starts another second
    crawl_site(site, tmp_path, conf, depth=1)
    index(out)
    assert set(docs_of(out)) == set(current_xml(out)) and len(current_xml(out)) == 2
