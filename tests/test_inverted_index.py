"""The downstream example job reads xml/ folders as an indexing team would."""
import pytest
import os

from jobs.lib import xmlpage
from tests.helpers import run_index

pytestmark = pytest.mark.job


def write_xml_folder(folder):
    os.makedirs(folder)
    pages = [{'url': 'http://h/a', 'status': 'fetched', 'fetch_time': '2026-11-30T00:00:00Z',
              'title': 'Apple orchard', 'text': 'menu apple orchard footer',
              'main_text': 'The apple orchard in\nspring. Apple trees.',
              'anchors': [{'from': 'http://h/b', 'text': 'fruit farm'}]},
             {'url': 'http://h/b', 'status': 'fetched', 'fetch_time': '2026-11-30T00:00:00Z',
              'title': 'Farm', 'text': 'a farm page with no main text', 'main_text': ''}]
    with open(os.path.join(folder, 'part-00000'), 'w', encoding='utf-8') as f:
        f.write('%s\t%s\n' % (pages[0]['url'], xmlpage.page_xml(pages[0])))
        f.write('http://h/gone\t%s\n' % xmlpage.deletion_xml(
            {'url': 'http://h/gone', 'http_status': 404, 'fetch_time': '2026-12-01T00:00:00Z'}))
    with open(os.path.join(folder, 'part-00001'), 'w', encoding='utf-8') as f:
        f.write('%s\t%s\n' % (pages[1]['url'], xmlpage.page_xml(pages[1])))
        f.write('not a document line\n')


def check(index, counters):
    assert index['apple']['postings'] == [
        {'url': 'http://h/a', 'tf': {'title': 1, 'main_text': 2}}]
    assert index['farm']['df'] == 2      # b's title, a's in-link anchor text
    assert {p['url']: p['tf'] for p in index['farm']['postings']} == {
        'http://h/a': {'anchors': 1}, 'http://h/b': {'title': 1, 'main_text': 1}}
    assert 'menu' not in index           # boilerplate: only in the full text
    assert counters['documents_total'] == 2
    assert counters['skipped_deletion_total'] == 1
    assert counters['malformed_line_total'] == 1


def test_inverted_index_inline_on_a_local_folder(tmp_path):
    folder = str(tmp_path / 'xml')
    write_xml_folder(folder)
    check(*run_index('inline', folder))
