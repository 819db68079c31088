"""MRCurrent after the change (drivers/later/affected_current.py): a later build shuffles the
fetches of the URLs the fetch named in changes/ only, and its current/ is the one a
shuffle of every fetch makes."""
import pytest
import json
import os

import orjson

from drivers.later import affected_current
from drivers.crawl import Crawl
from jobs.current import MRCurrent
from jobs.lib import counters as C
from jobs.lib.sidefile import MetaSink
from tests.helpers import FETCHED_BASE, fetched, read_records, test_conf
from tests.helpers import run_job

pytestmark = pytest.mark.job


def page(path, layer, prev=None, **kw):
    return fetched(path, layer, 'fetched', prev, http_status=200,
                   digest='sha1:%s%d' % (path, layer), **kw)


#: Layers 0-1 are the first cycle, layer 2 the second's. h is fetched in layer 0, and
#: again in layer 1 by following a link under another politeness key.
LAYERS = {
    0: [page('a', 0), page('b', 0, final_url=FETCHED_BASE + 'b2'),
        fetched('c', 0, 'deferred', reason='time_budget'), page('f', 0), page('h', 0)],
    1: [page('c', 1), page('d', 1),
        fetched('g', 1, 'robots_denied', reason='robots_txt'), page('h', 1, followed=True)],
    2: [fetched('a', 2, 'not_modified', 'fetched', reason='http_304', http_status=304),
        page('d', 2, 'fetched'), page('e', 2),
        fetched('f', 2, 'http_error', 'fetched', reason='http_404', http_status=404)],
}


def crawl_folder(tmp_path, cycle2_first=2, changes=(0, 1, 2)):
    """A crawl folder holding LAYERS as the fetch writes them (meta/L, changes/L for
    the layers *changes*), and two cycles, the second from layer *cycle2_first*."""
    out = str(tmp_path / 'crawl')
    c = Crawl(out, test_conf(), runner='inline', progress=lambda m: None)
    c.prepare()
    for layer, pages in LAYERS.items():
        sink = MetaSink(c.path('meta', '%03d' % layer), c.path('changes', '%03d' % layer)
                        if layer in changes else None, 'part-f00000')
        for p in pages:
            sink.add(dict(p, text='words', main_text='words'))
        sink.commit()
    os.makedirs(c.path('cycles'))
    for n, first in ((1, 0), (2, cycle2_first)):
        with open(c.path('cycles', '%03d.json' % n), 'w') as f:
            json.dump({'cycle': n, 'first_layer': first, 'layers': [], 'format': 1}, f)
    return c


def inputs(c):
    return [c.path('meta', '%03d' % layer) for layer in LAYERS]


def full_run(c, tmp_path):
    """MRCurrent shuffling every fetch: (its records, counters, --links-dir rows)."""
    links = str(tmp_path / 'links-full')
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(c.conf, f)
    lines = [line.decode() for path in inputs(c) for name in sorted(os.listdir(path))
             if name.startswith('part-') for line in open(os.path.join(path, name), 'rb')]
    out, counters = run_job(MRCurrent, conf_file, [], '--since', '1', '--links-dir',
                            links, raw_lines=[line.rstrip('\n') for line in lines])
    return [orjson.loads(line) for line in out], counters, read_records(links)


def key(records):
    return sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in records)


@pytest.mark.unit
def test_the_changes_name_what_may_replace_a_current_fetch_but_a_304_over_a_page(tmp_path):
    c = crawl_folder(tmp_path)
    names = {}
    for layer in LAYERS:
        folder = c.path('changes', '%03d' % layer)
        names[layer] = {n: sorted(orjson.loads(line)[len(FETCHED_BASE):]
                                  for line in open(os.path.join(folder, n), 'rb'))
                        for n in sorted(os.listdir(folder))}
    # Definitive fetches in part-f, the others and the followed one in held-f; the 304
    # over a's page nowhere.
    assert names == {0: {'held-f00000': ['c'], 'part-f00000': ['a', 'b', 'f', 'h']},
                     1: {'held-f00000': ['h'], 'part-f00000': ['c', 'd', 'g']},
                     2: {'held-f00000': [], 'part-f00000': ['d', 'e', 'f']}}


def test_a_later_build_shuffles_only_the_urls_the_change_touches(tmp_path):
    """The second cycle's MRCurrent shuffles c (deferred, then fetched, in the first
    cycle), h (followed again), d and f (fetched again: changed, gone) and e (new); a, b
    and g keep their only fetch up to the last build (a's 304 is dropped) and leave the
    mappers as read.
    current/, the counters and the redirect rows are those of a shuffle of all."""
    c = crawl_folder(tmp_path)
    told = []
    c.progress = told.append
    links = c.path('tmp', 'links_side')
    step = affected_current.run(c, inputs(c), ['--since', '1'] + c.task_path_args(
        '--links-dir', links), 1)
    assert told == []
    made = read_records(c.path('current'))
    full, full_counters, full_links = full_run(c, tmp_path)
    assert key(made) == key(full) and len(made) == 8
    n = step['counters'][C.CURRENT]
    assert n.pop(C.CURRENT_UNSHUFFLED) == 3
    assert n == full_counters[C.CURRENT]
    assert (n[C.CURRENT_PAGES], n[C.CURRENT_READ], n[C.CURRENT_NEW]) == (8, 13, 3)
    rows = read_records(links)
    assert key(rows) == key(full_links)
    assert {'url': FETCHED_BASE + 'b', 'final': FETCHED_BASE + 'b2'} in rows
    passed = [n for n in os.listdir(c.path('current')) if n.startswith('part-m')]
    assert passed and not os.path.exists(affected_current.pass_side(c))
    assert not os.path.exists(affected_current.keys_side(c))


@pytest.mark.unit
def test_every_fetch_is_shuffled_past_the_keys_and_files_bounds(tmp_path):
    """The map tasks hold the keys: past runner.task_keys_max_bytes of changes/ to
    read, every fetch is shuffled; so it is when the last current/ holds over
    merge.current_max_files files (each build that passes lines adds some)."""
    c = crawl_folder(tmp_path)
    assert affected_current.key_files(c, inputs(c), 1, None)[1] is None
    c.conf['runner']['task_keys_max_bytes'] = 8
    files, why = affected_current.key_files(c, inputs(c), 1, None)
    assert files is None and why.startswith('changes/ holds ') and \
        why.endswith('over runner.task_keys_max_bytes (8)')
    c.conf['runner']['task_keys_max_bytes'] = 1 << 20
    prev = c.path('prev_current')
    os.makedirs(prev)
    for n in range(3):
        open(os.path.join(prev, 'part-m%05d' % n), 'w').close()
    new = [prev, c.path('meta', '002')]
    assert affected_current.key_files(c, new, 1, prev)[1] is None
    c.conf['merge']['current_max_files'] = 2
    assert affected_current.key_files(c, new, 1, prev) == (
        None, 'the last current/ holds over merge.current_max_files (2) files')


def test_every_fetch_is_shuffled_when_the_changes_cannot_say(tmp_path):
    """A base of several cycles (a URL may have two definitive fetches there), or a
    layer without changes/ (an earlier version): the driver says why and shuffles
    every fetch, to the same current/."""
    for case, kw, why in (
            ('cycles', {'cycle2_first': 1}, 'the fetches up to layer 1 are of several '
                                            'cycles'),
            ('older', {'changes': (0, 2)}, 'layer 001 has no changes/ (an earlier version)')):
        c = crawl_folder(tmp_path / case, **kw)
        told = []
        c.progress = told.append
        step = affected_current.run(c, inputs(c), ['--since', '1'], 1)
        assert told == ['current: %s: every fetch shuffled' % why]
        assert C.CURRENT_UNSHUFFLED not in step['counters'][C.CURRENT]
        assert key(read_records(c.path('current'))) == key(full_run(c, tmp_path / case)[0])


def test_a_changed_page_names_the_targets_of_the_anchors_that_came_or_went(tmp_path):
    """--links-dir: a page fetched again at the same URL names only the targets whose
    anchors from it changed (an edit that keeps its links names none); one that now
    ends at another URL names every target of both fetches, its anchors' source moved."""
    conf_file = str(tmp_path / 'conf.json')
    with open(conf_file, 'w') as f:
        json.dump(test_conf(), f)

    def links(*pairs):
        return [{'url': FETCHED_BASE + t, 'text': text, 'rel': ''} for t, text in pairs]
    old = links(('t1', 'one'), ('t2', 'two'), ('t4', 'four'))
    new = links(('t1', 'one'), ('t2', 'deux'), ('t3', 'three'), ('t4', ' four '))
    records = [dict(page('p', 0), links=old), dict(page('p', 2, 'fetched'), links=new),
               dict(page('e', 0), links=old), dict(page('e', 2, 'fetched'), links=old),
               dict(page('q', 0), links=old),
               dict(page('q', 2, 'fetched', final_url=FETCHED_BASE + 'q2'), links=new)]
    rows_dir = str(tmp_path / 'links')
    run_job(MRCurrent, conf_file, records, '--since', '1', '--links-dir', rows_dir)
    rows = {r['url'][len(FETCHED_BASE):]: [t[len(FETCHED_BASE):] for t in r['targets']]
            for r in read_records(rows_dir) if 'targets' in r}
    assert rows == {'p': ['t2', 't3'], 'e': [], 'q': ['t1', 't2', 't3', 't4']}
