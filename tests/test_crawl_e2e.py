"""End-to-end crawls of the fixture website, one per runner, checking the whole output."""
import pytest
import collections
import json
import os
import xml.etree.ElementTree as ET

from lxml import etree

from drivers.crawl import Crawl
from jobs.lib import records as R
from tests.helpers import ROOT, crawl_fixture, crawl_site, read_records, read_xml, test_conf
from drivers.runtime.launch import make_runner

pytestmark = pytest.mark.crawl

DELAY = 0.2


def check_whole_output(site, out, report):
    paths = site.paths()
    pages = [p for p in paths if p != '/robots.txt']

    # Nothing fetched twice, robots obeyed, depth honoured (seeds are depth 0).
    assert len(pages) == len(set(pages)), collections.Counter(pages).most_common(3)
    assert '/private/secret.html' not in paths
    assert '/a/2.html' in paths and '/a/3.html' not in paths
    assert '/trap/1/2/3/' in paths and '/trap/1/2/3/4/' not in paths
    assert '/nofollow.html' not in paths
    assert all(r['ua'].startswith('mrcrawl/') for r in site.requests)

    # Politeness from the server's own log: one host, requests at least DELAY apart.
    times = sorted(r['t'] for r in site.requests)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= DELAY * 0.95, min(gaps)

    # Every URL of a layer's in/ leaves it exactly once, with a status: as a page record
    # of out/ (and, when the parse is its own job, as a doc record of doc/ first).
    fused = not os.path.exists(os.path.join(out, 'doc'))
    layers = sorted(os.listdir(os.path.join(out, 'in')))
    assert layers == ['000', '001', '002', '003']
    for layer in layers:
        urls_in = [r['url'] for r in read_records(os.path.join(out, 'in', layer))]
        pages = read_records(os.path.join(out, 'out', layer))
        assert sorted(urls_in) == sorted(p['url'] for p in pages)
        assert all(p['status'] in R.FETCH_STATUSES for p in pages)
        assert all(p['kind'] == 'page' and 'body' not in p for p in pages)
        if not fused:
            docs = read_records(os.path.join(out, 'doc', layer))
            assert sorted(urls_in) == sorted(d['url'] for d in docs)
        # The parse counters (the fetch job's when it parsed) count every HTML page.
        parse_step = 'fetch-%s' % layer if fused else 'parse-%s' % layer
        with open(os.path.join(out, 'steps', parse_step + '.json')) as f:
            parse = json.load(f)['counters']['parse']
        assert parse['pages_parsed_total'] == sum(
            1 for p in pages if p['status'] == R.FETCH_FETCHED and p['title'] is not None)
        assert os.path.exists(os.path.join(out, 'steps', 'parse-%s.json' % layer)) != fused
        # ... and feed the per-layer summary.
        assert report['layers'][int(layer)]['links_rejected'] == {
            k[len('link_rejected_'):-len('_total')]: v for k, v in parse.items()
            if k.startswith('link_rejected_')}
    assert any(row['links_rejected'] for row in report['layers'])
    # The home page's link to /image.png is not followed: no parser reads its type.
    assert report['layers'][0]['links_rejected']['extension'] == 1
    row1 = report['layers'][1]
    assert row1['urls_in'] == row1['accounted'] == 9
    assert row1['robots_denied'] == 1 and row1['http_error'] == 1

    # xml/: one valid document per distinct indexable page.
    xml = read_xml(os.path.join(out, 'xml'))
    schema = etree.XMLSchema(etree.parse(os.path.join(ROOT, 'conf', 'page.xsd')))
    for url, doc in xml.items():
        schema.assertValid(etree.fromstring(doc.encode('utf-8')))
        assert ET.fromstring(doc).find('url').text == url
    base = site.url('')
    expected = {'/', '/a.html', '/a/1.html', '/a/2.html', '/c.html', '/~user/',
                '/latin1.html', '/trap/1/', '/trap/1/2/', '/trap/1/2/3/', '/near1.html'}
    got = {u[len(base):] for u in xml}
    got = {u.replace('%7E', '~') for u in got}
    dup_pair = {'/b.html', '/dup.html'}
    assert len(got & dup_pair) == 1, got
    assert got - dup_pair == expected
    kept = (got & dup_pair).pop()
    dups = [u.text for u in ET.fromstring(xml[base + kept]).find('duplicates')]
    assert dups == [base + (dup_pair - {kept}).pop()]
    c_dups = [u.text for u in ET.fromstring(xml[base + '/c.html']).find('duplicates')]
    assert c_dups == [base + '/redirect']
    # The same article with another date and session id: near duplicates (SimHash), the
    # shorter URL kept; a printable copy folded by its rel=canonical.
    near = ET.fromstring(xml[base + '/near1.html']).find('duplicates')
    assert [(u.text, u.get('kind')) for u in near] == [(base + '/near1b.html', 'near')]
    a_dups = ET.fromstring(xml[base + '/a.html']).find('duplicates')
    assert [(u.text, u.get('kind')) for u in a_dups] == [(base + '/a-print.html', 'canonical')]
    # Language, headings, main text without the boilerplate, in-link anchors.
    article = ET.fromstring(xml[base + '/near1.html'])
    assert article.find('language').text == 'en'
    assert [(h.get('level'), h.text) for h in article.find('headings')] == [
        ('1', 'A long article')]
    main = article.find('main_text').text
    assert 'Session' not in main and 'Printed on' not in main and len(main) > 3000
    assert 'Session' in article.find('text').text
    anchors = {(a.get('from'), a.text) for a in
               ET.fromstring(xml[base + '/a.html']).find('anchors')}
    assert (base + '/', 'link to /a.html') in anchors
    assert (base + '/a/1.html', 'link to /a.html') in anchors
    c_anchors = {a.text for a in ET.fromstring(xml[base + '/c.html']).find('anchors')}
    assert c_anchors == {'link to /redirect'}      # the link went to /redirect
    latin1 = ET.fromstring(xml[base + '/latin1.html'])
    assert latin1.find('title').text == 'Caf\u00e9'
    assert 'Cr\u00e8me br\u00fbl\u00e9e' in latin1.find('text').text

    # crawldb: one record per known URL, the deeper ones unfetched.
    db = read_records(os.path.join(out, 'crawldb', '003'))
    by_url = {r['url']: r for r in db}
    assert len(by_url) == len(db)
    assert by_url[base + '/a/3.html']['status'] == R.DB_UNFETCHED
    assert by_url[base + '/private/secret.html']['status'] == R.DB_DENIED
    assert by_url[base + '/missing']['status'] == R.DB_GONE
    assert by_url[base + '/redirect']['status'] == R.DB_REDIRECTED

    # report.json matches what was printed and saved.
    saved = json.load(open(os.path.join(out, 'report.json')))
    assert saved['layers'] == report['layers']
    assert saved['xml']['documents'] == len(xml)
    assert saved['merge']['exact_duplicates'] == 1
    assert saved['merge']['near_duplicates'] == 1
    assert saved['merge']['canonical_duplicates'] == 1
    # The parse fingerprinted every page: the merge hashed none again.
    merge_step = json.load(open(os.path.join(out, 'steps', 'merge.json')))
    assert merge_step['counters']['merge']['merged_pages_total'] > 10
    assert 'near_hashed_in_merge_total' not in merge_step['counters']['merge']


def test_crawl_inline_runner(site, tmp_path):
    out, report = crawl_fixture(site, tmp_path, 'inline')
    check_whole_output(site, out, report)
    check_meta_written(out)
    # The downstream example job reads the crawl's xml/ folder as it is.
    from tests.helpers import run_index
    index, counters = run_index('inline', os.path.join(out, 'xml'))
    base = site.url('')
    assert counters['documents_total'] == len(read_xml(os.path.join(out, 'xml')))
    assert [p['url'] for p in index['orchard']['postings']] == [base + '/near1.html']
    # c.html is found by "redirect" also through the anchor text of links to /redirect.
    assert {p['url']: p['tf'] for p in index['redirect']['postings']} == {
        base + '/c.html': {'title': 1, 'main_text': 1, 'anchors': 1},
        base + '/': {'main_text': 1}}


def check_meta_written(out):
    """Each fused fetch wrote its pages without their text (meta/L), one line per page
    (read by optimize, merge and index), and marked it whole."""
    from jobs.lib import counters as C
    layers = sorted(os.listdir(os.path.join(out, 'out')))
    assert layers and sorted(os.listdir(os.path.join(out, 'meta'))) == layers
    for layer in layers:
        with open(os.path.join(out, 'steps', 'fetch-%s.json' % layer)) as f:
            counters = json.load(f)['counters']
        pages = read_records(os.path.join(out, 'out', layer))
        metas = read_records(os.path.join(out, 'meta', layer))
        assert counters['fetch'][C.META_RECORDS] == len(metas) == len(pages) > 0
        assert os.path.exists(os.path.join(out, 'meta', layer, '_SUCCESS'))


def xml_lines(folder):
    lines = []
    for name in sorted(os.listdir(folder)):
        if not name.startswith(('.', '_')):
            with open(os.path.join(folder, name), 'rb') as f:
                lines.extend(f.read().splitlines())
    return sorted(lines)


def test_merge_reads_the_pages_metadata_and_falls_back_to_their_text(site, tmp_path):
    """merge_map/ and the index from meta/* equal those from out/*; with SimHashes of
    another merge.shingle_words the merge takes out/* again and hashes the text. The
    merge join wrote xml/ itself: the lines MRHtmlToXml makes from merged/, and the
    same again when a resumed crawl finds merged/ without xml/."""
    import pyarrow.parquet as pq
    from jobs.lib import counters as C

    def read_parquet_rows(folder):
        return pq.read_table(folder).to_pylist()
    out, report = crawl_fixture(site, tmp_path, 'inline', depth=2)
    xml = xml_lines(os.path.join(out, 'xml'))
    with open(os.path.join(out, 'steps', 'xml.json')) as f:
        step = json.load(f)
    assert step['made_by'] == 'mergejoin' and 'runner' not in step
    assert step['counters']['xml'][C.XML_DOCS] == report['xml']['documents'] == len(xml) > 5
    with open(os.path.join(out, 'steps', 'mergejoin.json')) as f:
        assert 'xml' not in json.load(f)['counters']
    crawl = Crawl(out, test_conf(), runner='inline', progress=lambda m: None)
    crawl.prepare()
    crawl.fs.rm(crawl.path('xml'))
    crawl.fs.rm(crawl.path('steps', 'xml.json'))
    made = crawl.html_to_xml.xml()
    assert made['runner'] == 'inline' and xml_lines(os.path.join(out, 'xml')) == xml
    assert made['counters']['xml'][C.XML_DOCS] == len(xml)
    layers = sorted(os.listdir(os.path.join(out, 'out')))
    metas = [os.path.join(out, 'meta', n) for n in layers]
    outs = [os.path.join(out, 'out', n) for n in layers]
    from_meta = read_records(os.path.join(out, 'merge_map'))
    rows_meta = read_parquet_rows(os.path.join(out, 'index'))
    for conf, expect_fallback in ((test_conf('merge.shingle_words=4'), True),
                                  (test_conf(), False)):
        messages = []
        crawl = Crawl(out, conf, runner='inline', progress=messages.append)
        crawl.prepare()
        assert crawl.merger.meta_sources(layers) == metas
        ref = Crawl(str(tmp_path / 'ref'), conf, runner='inline', progress=lambda m: None)
        ref.prepare()
        for c in (crawl, ref):
            c.fs.rm(c.path('merge_map'))
            c.fs.rm(c.path('merged'))      # else merge_group takes merged/ as done
        step, _ = crawl.merger.merge_group(1, metas, outs)
        direct, _ = ref.merger.merge_group(1, None, outs)
        got = read_records(os.path.join(out, 'merge_map'))
        assert got == read_records(os.path.join(ref.out, 'merge_map'))
        assert step['counters'] == direct['counters']
        assert any('merging from out/' in m for m in messages) == expect_fallback
        if not expect_fallback:
            assert got == from_meta and len(got) > 5
        else:
            assert step['counters']['merge']['near_hashed_in_merge_total'] > 5
    # The index made from meta/* has every row the pages give.
    ref = Crawl(str(tmp_path / 'ref2'), test_conf(), runner='inline', progress=lambda m: None)
    ref.prepare()
    ref.fs.rm(ref.path('merge_map'))
    os.symlink(os.path.join(out, 'merge_map'), ref.path('merge_map'))
    from drivers.later.affected_index import build_index
    build_index(ref, outs)
    key = lambda r: (r['url'], r['layer'])  # noqa: E731
    assert sorted(read_parquet_rows(ref.path('index')), key=key) == sorted(rows_meta, key=key)


def step_runners(out):
    runners = {}
    for name in os.listdir(os.path.join(out, 'steps')):
        with open(os.path.join(out, 'steps', name)) as f:
            runners[name[:-len('.json')]] = json.load(f).get('runner')
    return runners


def test_crawl_local_runner(site, tmp_path):
    # runner.uber_max_bytes = 0: every job runs as the local runner's task processes.
    out, report = crawl_fixture(site, tmp_path, 'local', settings=['runner.uber_max_bytes=0'])
    check_whole_output(site, out, report)
    check_meta_written(out)
    runners = step_runners(out)
    assert set(runners.values()) - {None} == {'local'}, runners   # None: inject


def test_small_jobs_of_a_local_crawl_run_inline(site, tmp_path):
    """runner.uber_max_bytes (default 8 MiB a step): jobs with small inputs run in the driver
    on the inline runner (Hadoop's uber mode). The fixture's layers are small and
    politeness-bound (one host, delay 0.2 s), so they are fetched inline too
    (runner.inline_fetch_max_urls), as one fetch list; with no delay they have task
    processes (two fetch lists parse on two cores)."""
    n0 = len(site.requests)
    out, report = crawl_fixture(site, tmp_path, 'local', depth=1)
    runners = step_runners(out)
    assert runners['fetch-000'] == runners['fetch-001'] == 'inline'
    assert runners['optimize-000'] == runners['generate-001'] == runners['mergejoin'] \
        == 'inline'
    assert runners['xml'] is None      # written by the merge join's tasks
    pages = [p for p in site.paths() if p != '/robots.txt']
    assert len(pages) == len(set(pages)) >= 5
    for layer in ('000', '001'):
        ins = read_records(os.path.join(out, 'in', layer))
        outs = read_records(os.path.join(out, 'out', layer))
        assert sorted(r['url'] for r in ins) == sorted(p['url'] for p in outs)
    assert len(read_xml(os.path.join(out, 'xml'))) >= 5
    # One connection and the delay per host, inline as in task processes.
    times = [r['t'] for r in site.requests[n0:]]
    assert len(times) >= 6
    assert all(b - a >= 0.19 for a, b in zip(times, times[1:])), times

    (tmp_path / 'nodelay').mkdir()
    fast, _ = crawl_fixture(site, tmp_path / 'nodelay', 'local', depth=1,
                            settings=['politeness.delay=0'])
    runners = step_runners(fast)
    # The fetch lists in the driver, the fetch itself as local task processes.
    assert runners['fetch-000'] == runners['fetch-001'] == 'inline+local'
    for layer in ('000', '001'):
        assert (sorted((p['url'], p['status']) for p in read_records(
            os.path.join(out, 'out', layer))) == sorted(
            (p['url'], p['status']) for p in read_records(os.path.join(fast, 'out', layer))))

    # Past the limit, the same step runs as local tasks.
    crawl = Crawl(str(tmp_path / 'other'), test_conf('runner.uber_max_bytes=100'),
                  runner='local', progress=lambda m: None)
    from jobs.optimize import MROptimize
    from jobs.fetch import MRFetch
    small, big = os.path.join(out, 'in', '000'), os.path.join(out, 'out', '001')
    assert crawl.runner_for(MROptimize, [small]) == 'inline'
    assert crawl.runner_for(MROptimize, [small, big]) == 'local'
    assert crawl.runner_for(MRFetch, [small]) == 'local'
    # The limit is per step: a job of more steps saves more starts by running inline.
    from jobs.generate import MRGenerate
    from jobs.merge import MRMerge
    mid = tmp_path / 'mid.json'
    mid.write_bytes(b' ' * 150)
    assert crawl.runner_for(MROptimize, [str(mid)]) == 'local'        # 1 step: 100 bytes
    assert crawl.runner_for(MRMerge, [str(mid)]) == 'inline'          # 7 steps: 700
    assert crawl.runner_for(MRGenerate, [str(mid)], ['--max-depth', '2']) == 'local'
    assert crawl.runner_for(MRGenerate, [str(mid)], [                 # + the seeds' join
        '--max-depth', '2', '--inject', '--recrawl-at', '2026-01-01T00:00:00Z']) == 'inline'
    # The inline fetch's conditions (delay 0.2 s in the test conf).
    crawl = Crawl(str(tmp_path / 'other'), test_conf(), runner='local',
                  progress=lambda m: None)
    assert crawl.conf['politeness']['delay'] == 0.2
    inline = crawl.crawler.fetch_inline
    assert inline(2000, 10, '001', [small])
    assert not inline(2001, 10, '001', [small])        # runner.inline_fetch_max_urls
    assert not inline(100, 11, '001', [small])         # 11 x 0.02 s > the delay
    assert not inline(100, None, '001', [small])       # hosts unknown
    tight = Crawl(str(tmp_path / 'other'), test_conf('runner.uber_max_bytes=100'),
                  runner='local', progress=lambda m: None).crawler
    assert tight.fetch_inline(100, 5, '001', [small])
    assert not tight.fetch_inline(100, 5, '001', [small, big])    # over 100 bytes of input
    # Every host in flight at once: 1 MiB holds 32 keys (jobs.lib.keyqueue).
    few = Crawl(str(tmp_path / 'other'), test_conf('fetch.keys_memory_mb=1',
                                                   'politeness.delay=2'),
                runner='local', progress=lambda m: None).crawler
    assert few.fetch_inline(1000, 32, '001', [small])
    assert not few.fetch_inline(1000, 33, '001', [small])
    assert not Crawl(str(tmp_path / 'other'), test_conf(), runner='inline',
                     progress=lambda m: None).crawler.fetch_inline(100, 5, '001', [small])
    # A Hadoop crawl's small layer (hadoop.driver_fetch_max_urls, hadoop.local_max_bytes
    # of input), whatever its hosts' CPU: a YARN job's fixed cost is more.
    yarn = Crawl(str(tmp_path / 'other'), test_conf('hadoop.local_max_bytes=150'),
                 runner='local', progress=lambda m: None)
    yarn.runner = 'hadoop'
    assert yarn.crawler.fetch_inline(4000, 500, '001', [str(mid)])
    assert not yarn.crawler.fetch_inline(4001, 500, '001', [str(mid)])
    assert not yarn.crawler.fetch_inline(4000, 500, '001', [str(mid), small])
    off = Crawl(str(tmp_path / 'other'), test_conf('hadoop.driver_fetch_max_urls=0'),
                runner='local', progress=lambda m: None)
    off.runner = 'hadoop'
    assert not off.crawler.fetch_inline(10, 5, '001', [str(mid)])


def test_crawl_with_a_separate_parse_job(site, tmp_path):
    # fetch.parse = false: fetch -> doc/L -> MRParse -> out/L, the same whole output.
    out, report = crawl_fixture(site, tmp_path, 'inline', settings=['fetch.parse=false',
                                                                   'fetch.follow_hops=0'])
    assert sorted(os.listdir(os.path.join(out, 'doc'))) == ['000', '001', '002', '003']
    docs = read_records(os.path.join(out, 'doc', '000'))
    assert docs[0]['kind'] == 'doc' and docs[0]['body']
    check_whole_output(site, out, report)


@pytest.mark.unit
def test_parser_driver_decides_whether_the_fetch_parses_and_where_it_writes(tmp_path):
    """fetch.parse on: the fetch writes out/L, unless a run without it left doc/L (its
    pages are then parsed, not fetched again); off: doc/L, and the crawl makes doc/."""
    fused = Crawl(str(tmp_path / 'a'), test_conf(), runner='inline', depth=1)
    assert fused.parser.folders() == ('out',)
    assert fused.parser.fused(0) and fused.parser.fetch_output(0) == fused.path('out', '000')
    fused.fs.mkdirs(fused.path('doc', '001'))
    assert not fused.parser.fused(1) and fused.parser.fetch_output(1) == fused.path('doc', '001')
    assert fused.parser.fused(0)
    separate = Crawl(str(tmp_path / 'b'), test_conf('fetch.parse=false', 'fetch.follow_hops=0'),
                     runner='inline', depth=1)
    assert separate.parser.folders() == ('out', 'doc')
    assert not separate.parser.fused(0)
    assert separate.parser.fetch_output(0) == separate.path('doc', '000')


def test_rerun_of_a_finished_crawl_fetches_nothing(site, tmp_path):
    out, report = crawl_fixture(site, tmp_path, 'inline', depth=1)
    n = len(site.requests)
    out2, report2 = crawl_fixture(site, tmp_path, 'inline', depth=1)
    assert len(site.requests) == n
    assert report2['layers'] == report['layers']


def test_depth_zero_fetches_only_the_seeds(site, tmp_path):
    out, report = crawl_fixture(site, tmp_path, 'inline', depth=0)
    assert [p for p in site.paths() if p != '/robots.txt'] == ['/']
    assert len(report['layers']) == 1
    assert len(read_xml(os.path.join(out, 'xml'))) == 1


def test_fetch_plan_runs_only_for_layers_with_more_hosts_than_keys_in_flight(
        tmp_path, monkeypatch):
    from drivers.fixtures.site import FixtureSite
    from jobs.lib import keyqueue
    monkeypatch.setattr(keyqueue, 'KEY_BYTES', 1024 * 1024)    # a key per MiB
    with FixtureSite('127.0.0.2') as one, FixtureSite('127.0.0.3') as two:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text('%s\n%s\n' % (one.url('/'), two.url('/')))
        for keys, planned in ((1, True), (2, False)):
            out = str(tmp_path / ('keys%d' % keys))
            Crawl(out, test_conf('fetch.keys_memory_mb=%d' % keys), runner='inline',
                  depth=1, progress=lambda m: None).run(str(seeds))
            steps = sorted(os.listdir(os.path.join(out, 'steps')))
            with open(os.path.join(out, 'steps', 'inject.json')) as f:
                assert json.load(f)['counters']['inject']['seed_hosts_total'] == 2
            with open(os.path.join(out, 'steps', 'generate-001.json')) as f:
                assert json.load(f)['counters']['generate']['generated_hosts_total'] == 2
            have = [s for s in steps if s.startswith('plan-')]
            assert have == (['plan-000.json', 'plan-001.json'] if planned else []), steps
            assert os.path.isdir(os.path.join(out, 'plan')) == planned
            assert not os.path.exists(os.path.join(out, 'plan_sums', '001'))
            if planned:
                check_plan_from_generate(out, tmp_path)
            for layer in ('000', '001'):   # either way, nothing lost
                ins = read_records(os.path.join(out, 'in', layer))
                pages = read_records(os.path.join(out, 'out', layer))
                # Following is on (the default): a host done while the other is still
                # fetching may fetch its links too, as 'followed' records.
                assert sorted(r['url'] for r in ins) == \
                    sorted(p['url'] for p in pages if not p.get('followed'))


def check_plan_from_generate(out, tmp_path):
    """The seeds' layer was planned by MRPlanFetch; layer 1's plan was placed from the
    costs generate summed, with no job, and is the one MRPlanFetch makes of in/001."""
    from jobs.plan_fetch import MRPlanFetch
    with open(os.path.join(out, 'steps', 'plan-000.json')) as f:
        assert json.load(f)['runner'] == 'inline'
    with open(os.path.join(out, 'steps', 'plan-001.json')) as f:
        step = json.load(f)
    assert step['made_by'] == 'generate' and 'runner' not in step
    job = MRPlanFetch(args=['-r', 'inline', '--crawl-conf', os.path.join(out, 'conf.json'),
                            '--output-dir', str(tmp_path / 'replan'),
                            os.path.join(out, 'in', '001')])
    with make_runner(job) as runner:
        runner.run()
        counters = runner.counters()[0]
    assert step['counters'] == {'plan': counters['plan']}
    placed = read_records(os.path.join(out, 'plan', '001'))
    assert placed and placed == read_records(str(tmp_path / 'replan'))


def test_following_changes_when_pages_are_fetched_not_what_comes_out(tmp_path):
    """fetch.follow_hops = 1, the default, on two hosts, one slow: the quick host fetches
    its layer-1 pages during layer 0. Nothing is fetched twice, every in/ URL still
    leaves its layer once, generate never selects a followed URL again, and xml/ equals
    the crawl's without following apart from when each page was fetched (time, layer)."""
    import re
    from drivers.fixtures.site import FixtureSite

    def crawl(name, settings):
        with FixtureSite('127.0.0.2') as quick, FixtureSite('127.0.0.3') as slow:
            seeds = tmp_path / (name + '-seeds.txt')
            seeds.write_text(quick.url('/') + '\n' + ''.join(
                slow.url('/fault/delay?n=0.2&i=%d' % i) + '\n' for i in range(10)))
            out = str(tmp_path / name)
            Crawl(out, test_conf(*settings), runner='inline', depth=3,
                  progress=lambda m: None).run(str(seeds))
            for s in (quick, slow):
                pages = [p for p in s.paths() if p != '/robots.txt']
                assert len(pages) == len(set(pages)), collections.Counter(pages)
                times = sorted(r['t'] for r in s.requests)
                assert min(b - a for a, b in zip(times, times[1:])) >= DELAY * 0.95
            host = quick.url('/')[:-1]
        # The quick host's documents (the slow host's are ten copies of one page).
        strip = re.compile(rb' (time|layer)="[^"]*"')
        docs = sorted(strip.sub(b'', line).replace(host.encode(), b'HOST')
                      for line in xml_lines(os.path.join(out, 'xml'))
                      if line.startswith(host.encode()))
        return out, docs

    plain, plain_docs = crawl('plain', ['fetch.follow_hops=0'])
    # One fetch list: following waits for the listed URLs of its own task only.
    out, docs = crawl('follow', ['fetch.reducers=1'])
    assert docs == plain_docs and len(docs) > 10
    with open(os.path.join(out, 'report.json')) as f:
        rows = json.load(f)['layers']
    assert all(row['accounted'] == row['urls_in'] for row in rows)
    assert rows[0]['followed'] > 0

    followed = set()
    for layer in sorted(os.listdir(os.path.join(out, 'out'))):
        urls_in = [r['url'] for r in read_records(os.path.join(out, 'in', layer))]
        records = read_records(os.path.join(out, 'out', layer))
        assert sorted(urls_in) == sorted(r['url'] for r in records if not r.get('followed'))
        assert not followed & set(urls_in)        # generate does not select them again
        for r in records:
            if r.get('followed'):
                assert r['followed'] == 1 and r['depth'] == int(layer) + 1 <= 3
                followed.add(r['url'])
    assert any(u.endswith('/a.html') for u in followed)
    with open(os.path.join(out, 'steps', 'fetch-000.json')) as f:
        assert json.load(f)['counters']['fetch']['followed_total'] == len(followed)


def test_robots_txt_is_read_once_a_cycle_and_a_failure_is_asked_again(tmp_path):
    """politeness.robots_cache_hours: the fixture site's robots.txt is read in layer 0
    only (its rules still hold in layers 1-3); with 0, once a layer. A robots.txt that
    answers 503 is kept politeness.robots_error_minutes: its host's URLs are deferred
    without a request in the next layers; with 0, it is asked again in every layer."""
    from drivers.fixtures.site import FixtureSite
    for name in ('cached', 'uncached', 'failing', 'failing-asked'):
        (tmp_path / name).mkdir()
    with FixtureSite() as site:
        out, _ = crawl_site(site, tmp_path / 'cached', test_conf(), 3)
        assert site.paths().count('/robots.txt') == 1
        assert '/private/secret.html' not in site.paths()
        with open(os.path.join(out, 'steps', 'fetch-003.json')) as f:
            assert json.load(f)['counters']['fetch']['robots_txt_reused_total'] == 1
    with FixtureSite() as site:
        crawl_site(site, tmp_path / 'uncached', test_conf('politeness.robots_cache_hours=0'), 3)
        assert site.paths().count('/robots.txt') == 4
    with FixtureSite(robots_status=503) as site:
        out, _ = crawl_site(site, tmp_path / 'failing', test_conf(), 2)
        assert site.paths() == ['/robots.txt']            # asked once, then kept
        for layer in ('000', '001', '002'):
            pages = read_records(os.path.join(out, 'out', layer))
            assert [(p['status'], p['reason']) for p in pages] == \
                [('deferred', 'robots_503')], layer       # the seed, deferred each layer
    with FixtureSite(robots_status=503) as site:
        crawl_site(site, tmp_path / 'failing-asked',
                   test_conf('politeness.robots_error_minutes=0'), 2)
        assert site.paths() == ['/robots.txt'] * 3       # deferred, asked in every layer
