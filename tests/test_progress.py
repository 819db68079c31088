"""The fetch's progress line (drivers/reports/progress.py): its figures from a job's
counters, where it is drawn, the counters read from the tasks' logs while they run, and
a crawl whose fetch takes more than 10 s showing it, with OUT/status.json valid JSON at
every moment. On YARN: tests/test_hadoop.py."""
import io
import json
import os
import re
import threading
import time

import pytest

from drivers.crawl import Crawl
from drivers.fixtures.site import FixtureSite
from drivers.reports.progress import FetchProgress, TaskLogCounters, Ticker, duration
from jobs.lib import counters as C
from tests.helpers import test_conf

pytestmark = pytest.mark.unit

LINE = re.compile(r'fetch (\d{3}): ([\d,]+) of ([\d,]+) URLs \((\d+)%\), ([\d.]+|-) pages/s '
                  r'now, ([\d.]+|-) average, (\d+) hosts in flight, (\d+) errors, (.+) left$')


def fetch_counters(fetched, http_error=0, timeout=0, followed=0, in_flight=0):
    group = {C.status(C.FETCH, 'fetched'): fetched, C.FOLLOWED: followed,
             C.status(C.FETCH, 'http_error', '404'): http_error,
             C.status(C.FETCH, 'network_error', 'timeout'): timeout, C.BYTES: 10 * fetched}
    return {C.FETCH: group, C.LIVE: {C.KEYS_IN_FLIGHT: in_flight}}


def test_the_figures_count_the_layers_urls_and_the_recent_rate():
    p = FetchProgress(3, 1000, now=100.0)
    p.update(fetch_counters(0, in_flight=8), now=102.0)
    assert p.figures['pages_per_second_now'] is None and p.figures['eta_seconds'] is None
    assert LINE.match(p.line()).group(9) == 'time unknown'
    p.update(fetch_counters(100, http_error=5, timeout=5, followed=10, in_flight=8), 112.0)
    # Followed URLs were in no in/: 110 statuses, 100 of the layer's URLs done.
    f = p.figures
    assert (f['done'], f['fetched'], f['errors'], f['keys_in_flight']) == (100, 100, 10, 8)
    assert f['pages_per_second_now'] == 10.0 and f['pages_per_second'] == 8.33
    assert f['eta_seconds'] == 90.0        # 900 left at 10 URLs/s
    m = LINE.match(p.line())
    assert m.groups() == ('003', '100', '1,000', '10', '10.0', '8.3', '8', '10', '1 min 30 s')
    # The rates "now" forget what is older than the window.
    p.update(fetch_counters(400, followed=10), 142.0)
    p.update(fetch_counters(430, followed=10), 172.0)
    assert p.figures['pages_per_second_now'] == 1.0 and p.figures['keys_in_flight'] == 0
    p.update(fetch_counters(1010, followed=10), 180.0)
    assert p.figures['eta_seconds'] == 0.0 and LINE.match(p.line()).group(4) == '100'


def test_durations_read_as_a_person_writes_them():
    assert [duration(s) for s in (None, 7.4, 92, 3600 * 2 + 5 * 60 + 9)] == \
        ['time unknown', '7 s', '1 min 32 s', '2 h 05 min']


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_the_line_redrawn_in_place_and_a_log_a_line_a_period():
    term = Terminal()
    t = Ticker(term, log_seconds=30)
    t.show('one')
    t.show('two')
    t.say('  YARN application application_1_0001: http://rm/proxy/application_1_0001/')
    t.show('three')
    t.clear()
    assert term.getvalue() == (
        '\r\x1b[Kone\r\x1b[Ktwo\r\x1b[K  YARN application application_1_0001: '
        'http://rm/proxy/application_1_0001/\n\r\x1b[Kthree\r\x1b[K')
    now = [0.0]
    log = io.StringIO()
    t = Ticker(log, log_seconds=30, clock=lambda: now[0])
    for now[0] in (5.0, 29.0, 30.0, 45.0, 59.9, 60.0, 61.0):
        t.show('at %g' % now[0])
    t.clear()
    assert log.getvalue() == 'at 30\nat 60\n'
    Ticker(None, 30).show('nowhere')      # no stream: nothing to draw on


def test_task_logs_are_read_on_from_where_the_last_reading_stopped(tmp_path):
    """Counter lines as mrjob's tasks write them; a half-written last line waits."""
    mapper = tmp_path / 'step' / '001' / 'mapper' / '00000'
    reducer = tmp_path / 'step' / '000' / 'reducer' / '00001'
    for d in (mapper, reducer):
        d.mkdir(parents=True)
    (reducer / 'stderr').write_bytes(b'reporter:counter:fetch,urls_in_total,12\n')
    log = mapper / 'stderr'
    log.write_bytes(b'reporter:counter:fetch,fetch_fetched_total,3\nreporter:status:'
                    b'fetching\nsome warning\nreporter:counter:live,keys_in_flight,4\n'
                    b'reporter:counter:fetch,fetch_fetched_total,1')
    read = TaskLogCounters(str(tmp_path))
    assert read() == {'fetch': {'fetch_fetched_total': 3, 'urls_in_total': 12},
                      'live': {'keys_in_flight': 4}}
    with open(log, 'ab') as f:
        f.write(b'0\nreporter:counter:live,keys_in_flight,-4\n')
    assert read() == {'fetch': {'fetch_fetched_total': 13, 'urls_in_total': 12},
                      'live': {'keys_in_flight': 0}}


class Log(io.StringIO):
    """A stream that is no terminal (the output of a cron job)."""

    def isatty(self):
        return False


def slow_crawl(tmp_path, runner, *settings):
    """12 URLs of one host, each answering after 1 s: a fetch of some 14 s. Returns the
    progress lines, and every status.json read while it ran."""
    out = str(tmp_path / 'crawl')
    seen, done = [], threading.Event()

    def read_status():
        while True:
            stop = done.is_set()     # then one reading more: the run's last status
            try:
                with open(os.path.join(out, 'status.json')) as f:
                    text = f.read()
            except FileNotFoundError:
                text = None
            if text is not None:
                seen.append(json.loads(text))     # never half-written: replaced whole
            if stop:
                return
            time.sleep(0.05)
    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(''.join(site.url('/fault/delay?n=1&i=%d' % i) + '\n'
                                 for i in range(12)))
        live = Log()
        conf = test_conf('progress.seconds=0.5', 'progress.log_seconds=2', *settings)
        reader = threading.Thread(target=read_status)
        reader.start()
        try:
            report = Crawl(out, conf, runner=runner, depth=0, progress=lambda m: None,
                           live=live).run(str(seeds))
        finally:
            done.set()
            reader.join()
    assert report['layers'][0]['fetched'] == 12
    return live.getvalue().splitlines(), seen


@pytest.mark.crawl
@pytest.mark.parametrize('settings', [(), ('runner.inline_fetch_max_urls=0',)],
                         ids=['inline', 'tasks'])
def test_a_long_fetch_shows_its_progress_and_status_json_follows(tmp_path, settings):
    """In the driver (a small layer, inline) and in the local runner's task processes."""
    lines, seen = slow_crawl(tmp_path, 'local', *settings)
    matches = [LINE.match(line) for line in lines]
    assert lines and all(matches), lines
    # A plain line every 2 s of a fetch of over 12 s: at least five, the URLs done
    # growing to most of the layer, one host in flight.
    done = [int(m.group(2)) for m in matches]
    assert len(lines) >= 5 and done == sorted(done) and done[-1] >= 8, lines
    assert {m.group(3) for m in matches} == {'12'} and {m.group(7) for m in matches} == {'1'}
    assert any(m.group(9).endswith(' s') for m in matches)
    during = [s['fetch'] for s in seen if s.get('fetch')]
    assert len(during) >= 10 and during[-1]['done'] >= 8 and during[-1]['urls'] == 12
    assert seen[-1]['state'] == 'finished' and seen[-1]['fetch'] is None
