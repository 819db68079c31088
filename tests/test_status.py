"""OUT/status.json while a crawl runs (drivers/reports/status.py): read as each step
starts, it names the step, its layer and the layers done; at the end it says how the
run ended."""
import json
import os
import re

import pytest

from drivers.crawl import Crawl
from drivers.runtime.steps import CrawlError
from tests.helpers import crawl_site, test_conf

pytestmark = pytest.mark.crawl


def watch(monkeypatch, seen):
    """Append status.json's content to *seen* as each step starts."""
    real = Crawl.on_step

    def on_step(self, name):
        real(self, name)
        with open(os.path.join(self.out, 'status.json')) as f:
            seen.append((name, json.load(f)))
    monkeypatch.setattr(Crawl, 'on_step', on_step)


def test_status_names_each_step_and_the_layers_done(site, tmp_path, monkeypatch):
    seen = []
    watch(monkeypatch, seen)
    out, report = crawl_site(site, tmp_path, test_conf(), depth=2)
    ran = {n[:-len('.json')] for n in os.listdir(os.path.join(out, 'steps'))}
    names = [name for name, _ in seen]
    # Every job the driver runs, as it started: each layer's, then the merge's (the
    # index is built beside the merge, and the XML by the join).
    assert set(names) <= ran and len(names) == len(set(names))
    assert {n for n in ran if n.split('-')[0] in ('fetch', 'optimize', 'generate')} | \
        {'merge', 'anchors', 'mergejoin'} <= set(names)
    for name, status in seen:
        assert status['state'] == 'running' and status['step'] == name
        assert (status['cycle'], status['depth'], status['pid']) == (1, 2, os.getpid())
        assert [r['layer'] for r in status['layers']] == list(range(len(status['layers'])))
    second = [s for name, s in seen if name.startswith('fetch-') and s['layer'] == 1][0]
    first = report['layers'][0]
    assert second['layers'] == [{'layer': 0, 'urls_in': first['urls_in'],
                                 'fetched': first['fetched'],
                                 'errors': first['http_error'] + first['network_error'],
                                 'seconds': first['seconds']}]
    assert second['eta_seconds'] == pytest.approx(2 * first['seconds'], abs=0.1)
    with open(os.path.join(out, 'status.json')) as f:
        final = json.load(f)
    assert final['state'] == 'finished' and final['step'] is None and final['ended']
    assert [(r['layer'], r['fetched']) for r in final['layers']] == \
        [(r['layer'], r['fetched']) for r in report['layers']]
    assert final['fetched'] == sum(r['fetched'] for r in report['layers']) > 0
    assert final['eta_seconds'] is None and final['pages_per_second'] > 0


def test_a_failed_run_says_so_with_its_error(site, tmp_path, monkeypatch):
    def broken(job_cls, args):
        raise RuntimeError('the disk went away')
    monkeypatch.setattr(Crawl, 'run_job', staticmethod(broken))
    with pytest.raises(CrawlError, match='the disk went away'):
        crawl_site(site, tmp_path, test_conf(), depth=1)
    with open(os.path.join(str(tmp_path), 'crawl', 'status.json')) as f:
        status = json.load(f)
    assert status['state'] == 'failed' and 'the disk went away' in status['error']
    assert status['step'] is None and status['layer'] == 0


def test_report_html_is_redrawn_after_each_layer_while_the_crawl_runs(site, tmp_path,
                                                                     monkeypatch):
    """A user can open report.html in the middle of a crawl: as each layer's fetch starts,
    it shows the layers before it; at the end, the full page."""
    seen = []
    real = Crawl.on_step

    def on_step(self, name):
        real(self, name)
        if name.startswith('fetch-'):
            path = os.path.join(self.out, 'report.html')
            seen.append((int(name[-3:]), open(path).read() if os.path.exists(path) else None))
    monkeypatch.setattr(Crawl, 'on_step', on_step)
    out, report = crawl_site(site, tmp_path, test_conf(), depth=2)
    assert [layer for layer, _ in seen] == [0, 1, 2] and seen[0][1] is None
    for layer, page in seen[1:]:
        assert 'the crawl is running: its layers so far' in page
        table = page.split('<h2>Per layer</h2>')[1].split('</table>')[0]
        rows = re.findall(r'<tr><td>(\d{3})</td>', table)
        assert rows == ['%03d' % n for n in range(layer)], (layer, rows)
    with open(os.path.join(out, 'report.html')) as f:
        final = f.read()
    assert 'the crawl is running' not in final and '<img' in final
