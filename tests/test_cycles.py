"""Crawl cycles: a finished crawl rerun grows and refreshes it; outputs follow; deltas."""
import json
import os
import subprocess
import sys

import pytest
from lxml import etree

from drivers.crawl import Crawl
from drivers.runtime.steps import CrawlError
from drivers.fixtures.site import ROBOTS, html_page, link_list
from jobs.lib.sites import resolve as sites_resolve
from tests.helpers import (ROOT, at, crawl_site, current_merged, current_xml, read_records,
                           read_xml, test_conf)
from tests.helpers import run_index

pytestmark = pytest.mark.crawl


def _quiet(_):
    pass


def _body(title, words):
    return html_page(title, '<p>%s</p>' % words + link_list('/'))


CYCLE1 = {
    '/': html_page('Home', link_list('/t/edit.html', '/t/gone.html', '/t/noindex.html',
                              '/t/moved.html', '/t/same.html', '/t/robots.html',
                              '/t/dupe-copy.html')),
    '/t/edit.html': _body('Edited later', 'first edition of a page about rivers'),
    '/t/gone.html': _body('Gone later', 'a page about mountains that will disappear'),
    '/t/noindex.html': _body('Noindex later', 'a page about forests, soon hidden'),
    '/t/moved.html': _body('Moved later', 'a page about deserts that will move'),
    '/t/same.html': _body('Never changes', 'a page about oceans that stays as it is'),
    '/t/robots.html': _body('Robots later', 'a page about lakes robots.txt will forbid'),
    '/t/dupe-copy.html': _body('Copied later', 'a page about islands, soon a copy'),
}


def _cycle2(site):
    """Between the cycles: an edit, a new page linked from a changed one, a 404, a
    noindex, a redirect, a robots.txt Disallow, and a page that becomes a copy."""
    o = site.overrides
    o['/'] = html_page('Home', link_list('/t/edit.html', '/t/gone.html', '/t/noindex.html',
                                  '/t/moved.html', '/t/same.html', '/t/robots.html',
                                  '/t/dupe-copy.html', '/t/new.html'))
    o['/t/edit.html'] = _body('Edited', 'new edition of a page about rivers')
    o['/t/gone.html'] = None
    o['/t/noindex.html'] = html_page('Noindex', '<p>hidden now</p>',
                                 head='<meta name="robots" content="noindex">')
    o['/t/moved.html'] = ('redirect', '/t/target.html')
    o['/t/target.html'] = _body('Target', 'the new home of the page about deserts')
    o['/t/new.html'] = _body('New', 'a page that appeared in the second cycle')
    o['/t/dupe-copy.html'] = o['/t/same.html']
    site.robots = ROBOTS + b'Disallow: /t/robots.html\n'


@pytest.mark.parametrize('compact_ratio', ['0.5', '0'])
def test_second_cycle_refreshes_grows_and_writes_the_delta(site, tmp_path, compact_ratio):
    """With merge.compact_ratio 0.5 (the default) the second cycle's outputs are a delta
    over the first's; with 0 they are rebuilt in full. Both describe the same crawl."""
    site.overrides.update(CYCLE1)
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0',
                     'merge.compact_ratio=' + compact_ratio)
    out, first = crawl_site(site, tmp_path, conf, depth=1)
    base = site.url('')
    xml1 = read_xml(os.path.join(out, 'xml'))
    assert {base + p for p in CYCLE1} <= set(xml1)

    _cycle2(site)
    mark = len(site.requests)
    _, second = crawl_site(site, tmp_path, conf, depth=1)
    asked = {r['path'] for r in site.requests[mark:]}
    # recrawl.interval = 0: every known page was due; the new link was fetched in the
    # same cycle, one layer later.
    assert {'/', '/t/edit.html', '/t/same.html', '/t/new.html'} <= asked
    assert [row['layer'] for row in second['layers']] == [0, 1, 2, 3]
    assert [c['layers'] for c in second['cycles']] == [[0, 1], [2, 3]]
    assert second['build'] == '002' and first['build'] == '001'
    cycles = sorted(os.listdir(os.path.join(out, 'cycles')))
    assert cycles == ['001.json', '002.json']
    c2 = json.load(open(os.path.join(out, 'cycles', '002.json')))
    assert c2['first_layer'] == 2 and c2['finished'] is True

    # The outputs describe the crawl as it now stands: xml/ in full, or xml/ of the
    # first build with the second's delta (OUT/outputs.json says which).
    outputs = json.load(open(os.path.join(out, 'outputs.json')))
    xml2 = current_xml(out)
    if compact_ratio == '0':
        assert outputs['mode'] == 'full' and outputs['deltas'] == []
        assert read_xml(os.path.join(out, 'xml')) == xml2
    else:
        assert outputs['mode'] == 'delta' and outputs['deltas'] == ['002']
        assert outputs['base'] == '001' and read_xml(os.path.join(out, 'xml')) == xml1
        assert second['xml']['base'] == '001' and second['xml']['deltas'] == ['002']
    for gone in ('/t/gone.html', '/t/noindex.html', '/t/moved.html', '/t/robots.html',
                 '/t/dupe-copy.html'):
        assert base + gone not in xml2, gone
    assert 'new edition' in xml2[base + '/t/edit.html']
    assert base + '/t/new.html' in xml2 and base + '/t/target.html' in xml2
    assert json.load(open(os.path.join(out, 'outputs.json')))['build'] == '002'
    assert not os.path.exists(os.path.join(out, 'prev_merged'))

    # The delta: added and changed pages as in a full merge, and deletions with why.
    delta = read_xml(os.path.join(out, 'delta', '002', 'xml'))
    docs = {u: etree.fromstring(d.encode('utf-8')) for u, d in delta.items()}
    deleted = {u[len(base):]: (d.get('reason'), d.findtext('duplicate_of'))
               for u, d in docs.items() if d.tag == 'deletion'}
    assert deleted == {
        '/t/gone.html': ('gone', None), '/t/noindex.html': ('noindex', None),
        '/t/moved.html': ('redirected', base + '/t/target.html'),
        '/t/robots.html': ('robots_denied', None),
        '/t/dupe-copy.html': ('duplicate', base + '/t/same.html')}
    pages = {u[len(base):] for u, d in docs.items() if d.tag == 'page'}
    # '/' (a new link), the edit, the new pages, and the page whose duplicate group grew.
    assert pages == {'/', '/t/edit.html', '/t/new.html', '/t/target.html', '/t/same.html'}
    assert delta[base + '/t/same.html'] == xml2[base + '/t/same.html']
    merged = current_merged(out)
    assert merged[base + '/t/same.html']['duplicates'] == [base + '/t/dupe-copy.html']
    assert merged[base + '/t/target.html']['duplicates'] == [base + '/t/moved.html']
    schema = etree.XMLSchema(etree.parse(os.path.join(ROOT, 'conf', 'page.xsd')))
    for doc in docs.values():
        schema.assertValid(doc)

    # Applying the delta to the first cycle's documents gives the second's, exactly.
    applied = dict(xml1)
    for url, doc in docs.items():
        if doc.tag == 'deletion':
            applied.pop(url, None)
        else:
            applied[url] = delta[url]
    assert applied == xml2

    # The example downstream job: the first cycle's index with the delta applied is
    # the index of the second cycle's xml/.
    index1 = str(tmp_path / 'index1')
    with open(os.path.join(index1 + '.xml'), 'w') as f:
        f.writelines('%s\t%s\n' % kv for kv in sorted(xml1.items()))
    base_index, _ = run_index('inline', index1 + '.xml')
    os.makedirs(index1)
    with open(os.path.join(index1, 'part-00000'), 'w') as f:
        f.writelines(json.dumps(e) + '\n' for e in base_index.values())
    updated, counters = run_index('inline', '--apply-delta', index1,
                                  os.path.join(out, 'delta', '002', 'xml'))
    xml2_file = str(tmp_path / 'xml2.xml')
    with open(xml2_file, 'w') as f:
        f.writelines('%s\t%s\n' % kv for kv in sorted(xml2.items()))
    full, _ = run_index('inline', xml2_file)
    assert updated == full and 'rivers' in full
    assert counters['applied_deletion_total'] == 5
    assert not any(p['url'] == base + '/t/gone.html'
                   for e in updated.values() for p in e['postings'])


def test_the_join_writes_the_delta_the_delta_job_writes(site, tmp_path):
    """The driver's delta comes from MRMergeJoin's tasks (--delta-dir, against the last
    build's signatures/), with no job of its own: it equals MRDelta's, from the
    signatures or from the last build's merged pages (a crawl of an earlier version)."""
    from jobs.delta import MRDelta
    from jobs.lib.xmlpage import doc_key_value
    from jobs.merge_join import MRMergeJoin
    from tests.helpers import run_job
    site.overrides.update(CYCLE1)
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0', 'merge.compact_ratio=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    previous = {name: read_records(os.path.join(out, name)) for name in ('signatures',
                                                                         'merged')}
    assert sorted(r['url'] for r in previous['signatures']) == sorted(
        r['url'] for r in previous['merged'])
    _cycle2(site)
    crawl_site(site, tmp_path, conf, depth=1)
    steps = os.path.join(out, 'steps')
    assert json.load(open(os.path.join(steps, 'delta-002.json')))['made_by'] == 'mergejoin'
    assert not os.path.exists(os.path.join(steps, 'delta-002-xml.json'))
    assert not os.path.exists(os.path.join(out, 'prev_signatures'))
    fused = read_records(os.path.join(out, 'delta', '002', 'records'))
    assert {r['kind'] for r in fused} == {'merged', 'deletion'}
    assert read_xml(os.path.join(out, 'delta', '002', 'xml')) == {
        k.decode(): v.decode() for k, v in map(doc_key_value, fused)}

    def key(recs):
        return sorted(json.dumps(r, sort_keys=True) for r in recs)

    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(conf, f)
    merged, current, maps, anchors = (read_records(os.path.join(out, name)) for name in
                                      ('merged', 'current', 'merge_map', 'anchors'))
    assert current and not any('text' in r for r in current)     # from meta/
    pages = [r for layer in sorted(os.listdir(os.path.join(out, 'out')))
             for r in read_records(os.path.join(out, 'out', layer))]
    for name, prev in previous.items():
        records, counters = run_job(MRDelta, conf_file, prev + merged + current,
                                    '--build', '002')
        assert key(records) == key(fused), name
        side = tmp_path / ('delta-from-' + name)
        _, counters = run_job(MRMergeJoin, conf_file, maps + anchors + pages + prev,
                              '--build', '002', '--delta-dir', str(side))
        assert key(read_records(str(side / 'records'))) == key(fused), name
        assert counters['delta']['deleted_total'] == 5


def test_a_delta_build_joins_only_what_changed_and_equals_a_full_one(site, tmp_path):
    """The same two cycles crawled into two folders, one adding its second build as a
    delta over the first (the default), one rebuilding in full (compact_ratio 0): their
    deltas and the documents they describe are the same, while the delta build read no
    page of the first cycle: unchanged pages' records were not read, those with new
    folds or anchors were read back from the first build's merged/ by their place, and
    a copy that leads once its original changed was read back from the page store."""
    from jobs.lib.deltas import signature
    site.overrides.update(CYCLE1)
    links = ['/t/%s.html' % p for p in ('edit', 'gone', 'noindex', 'moved', 'same',
                                         'robots', 'dupe-copy', 'still', 'pair',
                                         'pair-copy')]
    site.overrides['/'] = html_page('Home', link_list(*links))
    site.overrides['/t/still.html'] = _body('Still', 'a page that nothing changes')
    pair = _body('Pair', 'a page about valleys with a copy at a longer URL')
    site.overrides['/t/pair.html'] = site.overrides['/t/pair-copy.html'] = pair
    for mode in ('delta', 'full'):
        (tmp_path / mode).mkdir()
    confs = {mode: test_conf('politeness.delay=0.02', 'recrawl.interval=0',
                             'merge.compact_ratio=' + ratio)
             for mode, ratio in (('delta', '0.5'), ('full', '0'))}
    outs = {mode: crawl_site(site, tmp_path / mode, conf, depth=1)[0]
            for mode, conf in confs.items()}
    first = current_merged(outs['delta'])
    assert site.url('/t/pair-copy.html') in first[site.url('/t/pair.html')]['duplicates']
    _cycle2(site)
    site.overrides['/'] = html_page('Home', link_list(*links, '/t/new.html'))
    site.overrides['/t/pair.html'] = _body('Pair', 'the original page about valleys, now '
                                                    'rewritten, no longer the same')
    for mode, conf in confs.items():
        crawl_site(site, tmp_path / mode, conf, depth=1)

    def view(out):
        return {url: signature(r) for url, r in current_merged(out).items()}

    def delta(out):
        return {r['url']: signature(r) if r['kind'] == 'merged' else r['reason']
                for r in read_records(os.path.join(out, 'delta', '002', 'records'))}

    assert view(outs['delta']) == view(outs['full'])
    assert delta(outs['delta']) == delta(outs['full'])
    assert site.url('/t/pair-copy.html') in delta(outs['delta'])      # a page of its own
    outputs = json.load(open(os.path.join(outs['delta'], 'outputs.json')))
    assert outputs['mode'] == 'delta'           # no page was missing: no full rebuild
    steps = os.path.join(outs['delta'], 'steps')
    join = json.load(open(os.path.join(steps, 'mergejoin.json')))['counters']['merge_join']
    # /t/same.html (304, a new duplicate) and /t/pair-copy.html (304, leading now) are
    # read back; /t/still.html (304, the same folds and anchors) is not read at all.
    assert join['stored_reread_total'] == 2 and 'leader_not_stored_total' not in join
    assert join['stored_reused_total'] == 1
    # It joined the URLs the change affects only (drivers/later/affected_anchors.py): here
    # the home page links to every page, so all of them.
    assert join['join_affected_urls_total'] >= len(view(outs['delta']))
    assert outputs['changes'] == len(delta(outs['delta'])) and outputs['store'] == 1
    sigs = [r for r in read_records(os.path.join(outs['delta'], 'signatures'))]
    pages = {r['url']: r for r in sigs if r['kind'] == 'signature'}
    assert set(pages) == set(view(outs['delta']))
    assert {r['at'][0].rsplit('/', 1)[0] for r in pages.values()} == {
        'merged', 'delta/002/records'}
    # Pages folded into another now keep their place too, for the day they lead.
    folded = {r['url'] for r in sigs if r['kind'] == 'stored'}
    assert site.url('/t/dupe-copy.html') in folded


def test_a_delta_build_killed_after_its_join_resumes_without_joining_again(
        site, tmp_path, monkeypatch):
    """A run that dies while the delta join's files move into place (one moved, the
    rest not): rerunning the same command moves the rest without running the join
    again, and the outputs are whole."""
    from drivers.merge_driver import MergeDriver
    site.overrides.update(CYCLE1)
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    _cycle2(site)
    real, calls = MergeDriver.move_sides, []

    def dies_once(self, sides, moves):
        if not calls:
            calls.append(moves)
            real(self, sides, moves[:1])
            raise RuntimeError('killed')
        return real(self, sides, moves)

    monkeypatch.setattr(MergeDriver, 'move_sides', dies_once)
    with pytest.raises(RuntimeError):
        crawl_site(site, tmp_path, conf, depth=1)
    assert not os.path.exists(os.path.join(out, 'delta', '002'))
    # The index's child beside the join went with the failure (drivers/runtime/beside.py):
    # left waiting to hand over its value, it kept this process from exiting.
    import multiprocessing
    assert multiprocessing.active_children() == []
    joined = os.stat(os.path.join(out, 'steps', 'mergejoin.json')).st_mtime_ns
    mark = len(site.requests)
    crawl_site(site, tmp_path, conf, depth=1)
    assert len(site.requests) == mark                   # nothing fetched again
    assert os.stat(os.path.join(out, 'steps', 'mergejoin.json')).st_mtime_ns == joined
    outputs = json.load(open(os.path.join(out, 'outputs.json')))
    assert outputs['mode'] == 'delta' and outputs['deltas'] == ['002']
    assert outputs['changes'] == len(read_xml(os.path.join(out, 'delta', '002', 'xml')))
    docs = current_xml(out)
    assert 'new edition' in docs[site.url('/t/edit.html')]
    assert site.url('/t/gone.html') not in docs
    sigs = read_records(os.path.join(out, 'signatures'))
    assert {r['url'] for r in sigs if r['kind'] == 'signature'} == set(docs)


def test_deltas_past_the_compact_ratio_rebuild_the_outputs_in_full(site, tmp_path):
    """A third cycle after deltas that changed more than merge.compact_ratio of the
    base's pages rewrites merged/ and xml/ in full, with its own delta as before."""
    site.overrides.update(CYCLE1)
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0',
                     'merge.compact_ratio=0.1')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    _cycle2(site)
    crawl_site(site, tmp_path, conf, depth=1)
    second = json.load(open(os.path.join(out, 'outputs.json')))
    assert second['mode'] == 'delta' and second['changes'] > 0.1 * second['base_pages']
    before = current_xml(out)
    site.overrides['/t/edit.html'] = _body('Edited', 'third edition of a page about rivers')
    crawl_site(site, tmp_path, conf, depth=1)
    third = json.load(open(os.path.join(out, 'outputs.json')))
    assert third['mode'] == 'full' and third['base'] == '003' and third['deltas'] == []
    xml3 = read_xml(os.path.join(out, 'xml'))
    assert 'third edition' in xml3[site.url('/t/edit.html')]
    assert set(xml3) == set(before)
    assert set(read_xml(os.path.join(out, 'delta', '003', 'xml'))) == {
        site.url('/t/edit.html')}


def test_a_third_cycle_finds_current_fetches_from_the_last_build_and_its_new_layers(
        site, tmp_path):
    """From the third cycle on, MRCurrent reads the last build's current/ and the layers
    new since it, not every layer of every cycle; current/ is the same as from every
    layer, and so are the outputs."""
    from jobs.current import MRCurrent
    from tests.helpers import run_job
    site.overrides.update(CYCLE1)
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    _cycle2(site)
    crawl_site(site, tmp_path, conf, depth=1)
    second = read_records(os.path.join(out, 'current'))
    top = json.load(open(os.path.join(out, 'outputs.json')))['layers']
    # Only the URLs the change touched crossed the shuffle (drivers/later/affected_current.py).
    counters = json.load(open(os.path.join(out, 'steps', 'current.json')))['counters']
    assert 0 < counters['current']['current_unshuffled_total'] < len(second)
    # The cycle's small second layer updated the crawl database writing the db lines of
    # the URLs its pages do not name as read (OptimizerDriver.update).
    update = json.load(open(os.path.join(out, 'steps', 'optimize-003.json')))['counters']
    assert 0 < update['optimize']['db_unshuffled_total'] < update['optimize'][
        'db_records_total']
    site.overrides['/t/edit.html'] = _body('Edited', 'third edition of a page about rivers')
    crawl_site(site, tmp_path, conf, depth=1)
    assert not os.path.exists(os.path.join(out, 'prev_current'))
    layers = sorted(os.listdir(os.path.join(out, 'meta')))
    new = [r for n in layers if int(n) > top
           for r in read_records(os.path.join(out, 'meta', n))]
    assert new and len(layers) > len([n for n in layers if int(n) > top])
    counters = json.load(open(os.path.join(out, 'steps', 'current.json')))['counters']
    assert counters['current']['current_read_total'] == len(second) + len(new)
    assert 0 < counters['current']['current_unshuffled_total'] < len(second)
    # What changed for the merge: the URLs whose current fetch is from the new layers.
    third = read_records(os.path.join(out, 'current'))
    changed = sum(1 for r in third if r['layer'] > top)
    assert counters['current']['current_new_total'] == changed
    assert 0 < changed < counters['current']['current_total'] == len(third)
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(conf, f)
    every = [r for n in layers for r in read_records(os.path.join(out, 'meta', n))]
    full, _ = run_job(MRCurrent, conf_file, every)
    full = [json.loads(line) for line in full]        # the lines as they were read

    def key(recs):
        return sorted(json.dumps(r, sort_keys=True) for r in recs)
    assert key(read_records(os.path.join(out, 'current'))) == key(full)
    assert 'third edition' in current_xml(out)[site.url('/t/edit.html')]


def test_a_deeper_rerun_fetches_only_the_new_layer_and_rebuilds_outputs(site, tmp_path):
    conf = test_conf('politeness.delay=0.02')
    out, first = crawl_site(site, tmp_path, conf, depth=1)
    xml1 = read_xml(os.path.join(out, 'xml'))
    base = site.url('')
    assert base + '/a/1.html' not in xml1
    mark = len(site.requests)
    _, second = crawl_site(site, tmp_path, conf, depth=2)
    # Nothing was due (7-day interval): only depth-2 URLs were fetched, once each.
    paths = [r['path'] for r in site.requests[mark:] if r['path'] != '/robots.txt']
    assert '/a/1.html' in paths and '/' not in paths and '/a.html' not in paths
    assert len(paths) == len(set(paths))
    xml2 = current_xml(out)
    assert base + '/a/1.html' in xml2 and set(xml1) < set(xml2)
    assert second['depth'] == 2
    assert len(second['layers']) == len(first['layers']) + 1
    assert second['totals']['fetched'] == first['totals']['fetched'] + \
        second['layers'][-1]['fetched']
    # Nothing changed among the pages of the first cycle: the delta has the new ones.
    delta = read_xml(os.path.join(out, 'delta', '002', 'xml'))
    assert set(delta) == set(xml2) - set(xml1) | {
        u for u in xml1 if xml1[u] != xml2.get(u)}


def test_two_runs_never_share_a_folder(site, tmp_path):
    conf = test_conf('politeness.delay=0.02')
    out = os.path.join(str(tmp_path), 'crawl')
    os.makedirs(out)
    holder = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    try:
        with open(os.path.join(out, 'lock.json'), 'w') as f:
            json.dump({'host': os.uname().nodename, 'pid': holder.pid,
                       'started': '2026-12-01T00:00:00Z'}, f)
        with pytest.raises(CrawlError, match='in use by another mrcrawl run'):
            crawl_site(site, tmp_path, conf, depth=0)
    finally:
        holder.kill()
        holder.wait()
    # The holder is gone: its lock is recognised as stale and taken over.
    said = []
    seeds = os.path.join(str(tmp_path), 'seeds.txt')
    Crawl(out, conf, runner='inline', depth=0, progress=said.append).run(seeds)
    assert any('taken over' in m for m in said)
    assert not os.path.exists(os.path.join(out, 'lock.json'))


def test_recrawl_is_the_next_cycle_without_seeds(site, tmp_path):
    conf = test_conf('politeness.delay=0.02')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    site.overrides['/a.html'] = html_page('Page A, new edition', '<p>changed</p>')
    report = Crawl(out, conf, runner='inline', depth=None, progress=_quiet).run(None, at(8))
    assert report['depth'] == 1
    delta = read_xml(os.path.join(out, 'delta', '002', 'xml'))
    assert 'new edition' in delta[site.url('/a.html')]


def test_seeds_a_layer_had_before_are_not_joined_with_the_database_again(site, tmp_path):
    """A crawl rerun with its seeds file: the seeds are all known, so the cycle's generate
    skips the seeds' join (a pass over the whole database); a changed seeds file is
    joined, and its new seed fetched."""
    conf = test_conf('politeness.delay=0.02', 'recrawl.interval=0')
    out, _ = crawl_site(site, tmp_path, conf, depth=1)
    seeds = str(tmp_path / 'seeds.txt')

    def cycle(seeds_text):
        with open(seeds, 'w') as f:
            f.write(seeds_text)
        said, mark = [], len(site.requests)
        report = Crawl(out, conf, runner='inline', depth=1, progress=said.append).run(seeds)
        first = report['cycles'][-1]['layers'][0]
        step = json.load(open(os.path.join(out, 'steps', 'generate-%03d.json' % first)))
        return said, step['counters']['generate'], {r['path'] for r in site.requests[mark:]}

    said, counts, asked = cycle(site.url('/') + '\n')
    assert any('not joined with it again' in m for m in said)
    assert 'injected_known_total' not in counts and not os.path.exists(
        os.path.join(out, 'seeds', '002'))
    assert '/' in asked and counts['recrawl_due_total'] >= 5     # every page due, the seed too
    said, counts, asked = cycle(site.url('/') + '\n' + site.url('/hidden/3.html') + '\n')
    assert not any('not joined' in m for m in said)
    assert counts['injected_known_total'] == 1 and counts['injected_new_total'] == 1
    assert '/hidden/3.html' in asked
    said, counts, _ = cycle(site.url('/') + '\n' + site.url('/hidden/3.html') + '\n')
    assert any('not joined with it again' in m for m in said)      # as in cycle 3
    injected = json.load(open(os.path.join(out, 'seeds', 'injected.json')))['sha256']
    assert len(injected) == 2


def test_a_page_the_changed_filters_exclude_is_kept_then_pruned_without_a_request(
        site, tmp_path):
    """A page the changed filters exclude is not asked again; it stays (a setting is
    no evidence that it is gone) until a cycle prunes: then its delta deletes it."""
    site.overrides.update(CYCLE1)
    out, _ = crawl_site(site, tmp_path, test_conf('politeness.delay=0.02'), depth=1)
    base = site.url('')
    assert base + '/t/same.html' in read_xml(os.path.join(out, 'xml'))
    settings = ('politeness.delay=0.02', 'recrawl.interval=0', 'filter.exclude=["/t/same"]')
    mark = len(site.requests)
    crawl_site(site, tmp_path, test_conf(*settings), depth=1)
    asked = {r['path'] for r in site.requests[mark:]}
    assert '/t/same.html' not in asked and '/t/edit.html' in asked
    assert base + '/t/same.html' in current_xml(out)
    assert base + '/t/same.html' not in read_xml(os.path.join(out, 'delta', '002', 'xml'))
    counters = json.load(open(os.path.join(out, 'steps', 'generate-002.json')))['counters']
    assert counters['generate']['now_excluded_total'] == 1
    mark = len(site.requests)
    crawl_site(site, tmp_path, test_conf(*settings, 'recrawl.prune=true'), depth=1)
    assert '/t/same.html' not in {r['path'] for r in site.requests[mark:]}
    assert base + '/t/same.html' not in current_xml(out)
    delta = read_xml(os.path.join(out, 'delta', '003', 'xml'))
    doc = etree.fromstring(delta[base + '/t/same.html'].encode('utf-8'))
    assert doc.tag == 'deletion' and doc.get('reason') == 'filtered'


SITE = '''[site]
name = "fixture"
hosts = ["127.0.0.1"]
%s
'''


def test_reparse_extracts_new_fields_from_the_stored_pages_without_a_request(site, tmp_path):
    before, after = tmp_path / 'sites1', tmp_path / 'sites2'
    before.mkdir()
    after.mkdir()
    (before / 'fixture.toml').write_text(SITE % '')
    (after / 'fixture.toml').write_text(SITE % '[fields.HEADING]\ncss = "h1"\n')
    conf = sites_resolve(test_conf('politeness.delay=0.02', 'parse.sites=["%s"]' % before))
    out, first = crawl_site(site, tmp_path, conf, depth=1)
    base = site.url('')
    merged = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    assert not merged[base + '/a.html']['fields']     # a site without field rules
    mark = len(site.requests)

    conf2 = sites_resolve(test_conf('politeness.delay=0.02', 'parse.sites=["%s"]' % after))
    report = Crawl(out, conf2, runner='inline', depth=None, progress=_quiet).reparse()
    assert len(site.requests) == mark            # nothing fetched
    merged = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    assert merged[base + '/a.html']['fields'] == {'HEADING': 'Page A (depth 1)'}
    assert 'Page A (depth 1)' in read_xml(os.path.join(out, 'xml'))[base + '/a.html']
    # The same pages, now with their field: the delta has every page, no deletion.
    delta = read_xml(os.path.join(out, 'delta', '001-reparse1', 'xml'))
    assert set(delta) == set(read_xml(os.path.join(out, 'xml')))
    assert not any(d.startswith('<deletion') for d in delta.values())
    assert report['totals']['fetched'] == first['totals']['fetched']
    assert json.load(open(os.path.join(out, 'outputs.json')))['build'] == '001-reparse1'
    # Bodies came from the WARC files; the links found are the same as the first time.
    counters = json.load(open(os.path.join(out, 'steps', 'reparse-001-reparse1-001.json')))
    assert counters['counters']['reparse']['reparsed_total'] > 0
    assert counters['counters']['reparse'].get('warc_unreadable_OSError_total') is None


@pytest.mark.unit
def test_the_delta_signature_follows_what_the_xml_document_carries():
    """Every field whose change changes a page's XML document changes its delta
    signature, but the fetch's time and place (a page fetched again, unchanged)."""
    from jobs.lib.deltas import signature
    from jobs.lib import xmlpage
    page = {'kind': 'merged', 'url': 'http://h/a', 'status': 'fetched', 'http_status': 200,
            'fetch_time': '2026-12-01T00:00:00Z', 'depth': 1, 'layer': 1,
            'content_type': 'text/html', 'encoding': 'utf-8', 'length': 10,
            'digest': 'sha1:X', 'simhash': '00ff', 'language': 'en', 'title': 'T',
            'description': 'D', 'headings': [{'level': 1, 'text': 'H'}], 'text': 'x',
            'main_text': 'y', 'links': [{'url': 'http://h/b', 'text': 'b'}],
            'anchors': [{'from': 'http://h/c', 'text': 'c'}], 'duplicates': ['http://h/d'],
            'near_duplicates': [], 'canonical_duplicates': [], 'site': 's',
            'fields': {'F': 'v'}, 'fields_checksum': 'k', 'resources': [],
            'score': 0.5, 'warc_filename': 'warc/x', 'warc_record_offset': 1, 'elapsed': 0.1}
    volatile = {'fetch_time', 'depth', 'layer', 'status', 'http_status'}
    other = {'headings': [{'level': 2, 'text': 'H2'}],
             'links': [{'url': 'http://h/z', 'text': 'z'}],
             'anchors': [{'from': 'http://h/y', 'text': 'y'}],
             'duplicates': ['http://h/e'], 'near_duplicates': ['http://h/d'],
             'canonical_duplicates': ['http://h/d'], 'fields': {'F': 'w'},
             'resources': [{'name': 'img', 'url': 'http://h/i.png', 'status': 'fetched',
                            'content_type': 'image/png', 'length': 3, 'digest': 'sha1:I',
                            'http_status': 200, 'reason': None, 'truncated': False}],
             'fetch_time': '2027-01-01T00:00:00Z', 'http_status': 304, 'depth': 2,
             'layer': 5, 'length': 11, 'score': 0.25, 'warc_record_offset': 9,
             'elapsed': 0.2}
    for key in page:
        changed = dict(page, **{key: other.get(key, 'other')})
        xml_differs = xmlpage.page_xml(changed) != xmlpage.page_xml(page)
        if key in volatile or not xml_differs:
            # The fetch's time and place, and what the document does not carry.
            assert signature(changed) == signature(page) or key == 'fields_checksum', key
        else:
            assert signature(changed) != signature(page), key
