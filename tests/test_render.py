"""Pages that need a browser (jobs.lib.render): a site's ``render = true`` loads its pages
in headless Chromium, whose own requests the crawler fetches under its rules. Real
browser, real loopback servers; each fetch task starts one browser."""
import glob
import hashlib
import io
import json
import os
import sys
import time

import pytest

from drivers.fixtures.site import FixtureSite
from jobs.fetch import MRFetch
from jobs.lib import counters as C, sites
from jobs.lib.sites import SiteConfigError
from tests.helpers import crawl_site, current_xml, read_records, test_conf
from tests.helpers import DELAY, check_politeness
from drivers.runtime.launch import make_runner

pytestmark = pytest.mark.browser

APP_PAGE = (b'<html><head><title>App</title><script src="/app.js"></script>%s</head>'
            b'<body><div id="app"></div>%s</body></html>')
# Builds the page's heading (a site field) and its links once the DOM is there.
APP_JS = (b"document.addEventListener('DOMContentLoaded', function () {\n"
          b"  document.getElementById('app').innerHTML = '<h1 class=\"title\">Built by "
          b"script</h1>' +\n    '<a href=\"/made/1.html\">one</a> <a href=\"/made/2.html\">"
          b"two</a>';\n});\n")
SITE = '[site]\nhosts = ["%s"]\nrender = %s\n\n[fields.heading]\ncss = "h1.title"\n'


def _serve_app(s, head=b'', body=b''):
    s.overrides['/'] = APP_PAGE % (head, body)
    s.overrides['/app.js'] = ('typed', 'application/javascript', APP_JS)
    for n in (1, 2):
        s.overrides['/made/%d.html' % n] = b'<html><title>Made %d</title><p>x</p></html>' % n


def _conf(tmp_path, host, render, *settings):
    conf = test_conf('politeness.delay=%s' % DELAY, *settings)
    path = tmp_path / 'app.toml'
    path.write_text(SITE % (host, 'true' if render else 'false'))
    conf['sites'] = [sites.load_file(str(path))]
    return conf


def _counters(out, layer='000'):
    with open(os.path.join(out, 'steps', 'fetch-%s.json' % layer)) as f:
        return json.load(f)['counters']


@pytest.mark.unit
def test_render_is_a_boolean_of_the_site_table(tmp_path):
    path = tmp_path / 'bad.toml'
    path.write_text('[site]\nhosts = ["a.example"]\nrender = "yes"\n')
    with pytest.raises(SiteConfigError, match='site.render must be true or false'):
        sites.load_file(str(path))
    path.write_text('[site]\nhosts = ["a.example"]\n')
    assert sites.load_file(str(path))['render'] is False


@pytest.mark.parametrize('render', [False, True])
def test_links_and_fields_built_by_script_need_rendering(tmp_path, render):
    """Without rendering the script's heading and links are missing; with it they are
    found and followed, the field is in the page and in xml/, the WARC keeps the bytes
    as served, and the server sees the same politeness (and User-Agent) as a fetch."""
    with FixtureSite('127.0.0.2') as s:
        _serve_app(s)
        out, report = crawl_site(s, tmp_path, _conf(tmp_path, '127.0.0.2', render), depth=1)
        check_politeness(s)
        paths = s.paths()
    pages = {p['url']: p for p in read_records(os.path.join(out, 'out', '000'))}
    home = pages[s.url('/')]
    counters = _counters(out)
    if not render:
        assert home['fields']['heading'] is None and home['links'] == []
        assert '/app.js' not in paths and '/made/1.html' not in paths
        assert 'render' not in counters and 'rendered' not in home
        assert 'render' not in report['layers'][0]
        return
    assert home['rendered'] is True
    assert home['fields']['heading'] == 'Built by script'
    assert [link['url'] for link in home['links']] == [s.url('/made/1.html'),
                                                      s.url('/made/2.html')]
    assert sorted(paths) == sorted(['/robots.txt', '/', '/app.js', '/made/1.html',
                                    '/made/2.html'])
    assert 'Built by script' in current_xml(out)[s.url('/')]
    r = counters['render']
    assert r['pages_rendered_total'] == 1 and r['browser_starts_total'] == 1
    assert r['browser_pages_total'] == 1
    assert report['layers'][0]['render'] == r       # report.json's layer rows
    assert r['subrequests_fetched_total'] == 1
    assert r['subrequest_bytes_total'] == len(APP_JS)
    # Layer 1's two pages (no scripts): one task, one browser, one page of their key.
    assert _counters(out, '001')['render'] == {'pages_rendered_total': 2,
                                               'browser_starts_total': 1,
                                               'browser_pages_total': 1}
    from jobs.lib import warcfile
    data, _ = warcfile.read_payload(out, home)
    assert data == APP_PAGE % (b'', b'')          # the bytes served, not the DOM


def test_browser_requests_obey_robots_and_the_page_budget(tmp_path):
    """A script robots.txt disallows is never requested; past render.max_requests the
    browser's requests are aborted; each outcome is counted."""
    images = b''.join(b'<img src="/img/%d.png">' % i for i in range(4))
    with FixtureSite('127.0.0.3') as s:
        _serve_app(s, b'<script src="/private/track.js"></script>', images)
        out, _ = crawl_site(s, tmp_path, _conf(tmp_path, '127.0.0.3', True,
                                               'render.max_requests=3'), depth=0)
        check_politeness(s)
        paths = s.paths()
    assert '/private/track.js' not in paths
    sub = [p for p in paths if p not in ('/', '/robots.txt')]
    assert len(sub) == 3 and '/app.js' in sub     # the first script comes first
    r = _counters(out)['render']
    assert r['subrequests_aborted_robots_total'] == 1
    assert r['subrequests_fetched_total'] == 3
    assert r['subrequests_aborted_over_budget_requests_total'] == 2
    assert r['pages_rendered_total'] == 1


def test_no_browser_means_a_plain_fetch_and_one_warning(tmp_path):
    """render.browser names no file: every page is fetched as usual, the task says so
    once in its log, and the counters say why no page was rendered."""
    with FixtureSite('127.0.0.4') as s:
        _serve_app(s)
        conf = _conf(tmp_path, '127.0.0.4', True, 'render.browser=/nonexistent/chromium')
        conf_file = tmp_path / 'conf.json'
        conf_file.write_text(json.dumps(conf))
        urls = [s.url('/'), s.url('/made/1.html'), s.url('/made/2.html')]
        job = MRFetch(['-r', 'inline', '--crawl-conf', str(conf_file)])
        job.sandbox(stdin=io.BytesIO(''.join(
            json.dumps({'kind': 'url', 'url': u, 'depth': 0}) + '\n' for u in urls).encode()))
        with make_runner(job) as runner:
            runner.run()
            docs = [v for _, v in job.parse_output(runner.cat_output())]
            counters = C.merge_steps(runner.counters())
            logs = b''.join(open(p, 'rb').read() for p in glob.glob(os.path.join(
                runner._get_local_tmp_dir(), '**', 'stderr'), recursive=True))
        assert '/app.js' not in s.paths()
    assert sorted(d['url'] for d in docs) == sorted(urls)
    assert all(d['status'] == 'fetched' and not d.get('rendered') for d in docs)
    home = next(d for d in docs if d['url'] == s.url('/'))
    assert home['fields']['heading'] is None and home['links'] == []
    assert counters['render'] == {'render_failed_unavailable_total': 3,
                                  'browser_unavailable_total': 1}
    assert logs.count(b'WARNING render: no browser') == 1


def test_a_request_to_another_key_goes_through_that_keys_fetcher(tmp_path):
    """An image on another host: fetched with that host's robots.txt and delay, by the
    task's fetcher of its key, and counted as such."""
    with FixtureSite('127.0.0.5') as s, FixtureSite('127.0.0.6') as other:
        _serve_app(s, body=b'<img src="%s"><img src="%s">' % (
            other.url('/image.png').encode(), other.url('/private/x.png').encode()))
        out, _ = crawl_site(s, tmp_path, _conf(tmp_path, '127.0.0.5', True), depth=0)
        check_politeness(s)
        check_politeness(other)
        assert other.paths() == ['/robots.txt', '/image.png']
    r = _counters(out)['render']
    assert r['subrequests_other_key_total'] == 2 and r['subrequests_fetched_total'] == 2
    assert r['subrequests_aborted_robots_total'] == 1
    assert r['subrequest_robots_txt_fetched_total'] == 1


def test_the_address_policy_applies_to_the_browsers_requests(tmp_path):
    """With private networks refused for the task, a script the page loads from a
    loopback address is never requested (the page itself comes from a fetcher that
    may: a test-only split), and the page is rendered without it."""
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    with FixtureSite('127.0.0.7') as s:
        _serve_app(s)
        conf = _conf(tmp_path, '127.0.0.7', True)
        hf = HostFetcher(conf, resolver=Resolver(True))
        renderer = Renderer(conf, RobotsCache(), Resolver(False))
        try:
            docs = list(renderer.each(hf, [{'kind': 'url', 'url': s.url('/'), 'depth': 0}],
                                      0, None))
        finally:
            stats = {}
            renderer.close(stats.__setitem__)
        assert '/app.js' not in s.paths()
    assert docs[0]['rendered'] and 'Built by script' not in docs[0]['body']
    assert stats['subrequests_aborted_private_address_total'] == 1
    assert stats['pages_rendered_total'] == 1


def _run_fetch(tmp_path, conf, records, *args):
    """MRFetch of *records* (one task with fetch.reducers=1): its counters."""
    conf_file = tmp_path / 'conf.json'
    conf_file.write_text(json.dumps(conf))
    job = MRFetch(['-r', 'inline', '--crawl-conf', str(conf_file)] + list(args))
    job.sandbox(stdin=io.BytesIO(''.join(json.dumps(r) + '\n' for r in records).encode()))
    with make_runner(job) as runner:
        runner.run()
        return C.merge_steps(runner.counters())


def _after(event, body, then=None):
    """A FixtureSite override: *body*, once *event* is set (at most 60 s); *then* is
    set first, when the request arrives."""
    def serve():
        if then is not None:
            then.set()
        event.wait(60.0)
        return body
    return serve


def test_a_request_to_a_key_another_thread_is_fetching_is_aborted(tmp_path):
    """The image's host is one of the task's keys, fetched by its own thread meanwhile:
    a second fetcher would not keep that key's delay, so the request is aborted. In
    order, through the servers: the page is served once busy's thread is inside its
    request for /hold.html, which is answered once the page says its image failed."""
    import threading
    holding, failed = threading.Event(), threading.Event()
    with FixtureSite('127.0.0.8') as s, FixtureSite('127.0.0.9') as busy:
        _serve_app(s, body=b'<img src="%s" onerror="fetch(\'/failed\')">'
                   % busy.url('/image.png').encode())
        s.overrides['/'] = _after(holding, s.overrides['/'])
        s.overrides['/failed'] = _after(failed, b'<p>ok</p>', then=failed)
        busy.overrides['/hold.html'] = _after(failed, b'<p>held</p>', then=holding)
        conf = _conf(tmp_path, '127.0.0.8', True, 'fetch.reducers=1',
                     'fetch.read_timeout=60')      # /hold.html waits for a render
        urls = [s.url('/'), busy.url('/hold.html')] + \
            [busy.url('/a.html?i=%d' % i) for i in range(3)]
        counters = _run_fetch(tmp_path, conf, [{'kind': 'url', 'url': u, 'depth': 0}
                                               for u in urls])
        check_politeness(busy)
        assert failed.is_set() and '/failed' in s.paths()
        assert '/image.png' not in busy.paths()
    assert counters['render']['subrequests_aborted_key_busy_total'] == 1
    assert counters['render']['pages_rendered_total'] == 1


def test_a_key_in_flight_is_not_asked_by_the_renderer(tmp_path):
    """Every key of the list is in flight at once (jobs.lib.keyqueue), even with one
    thread: the page's image is on another key of the list, in flight and waiting out
    its delay, so the renderer's request for it is refused (key_busy) rather than
    sent beside that key's own requests, and both keys keep their delay."""
    delay = 1.0
    with FixtureSite('127.0.0.10') as s, FixtureSite('127.0.0.11') as k:
        s.overrides['/'] = b'<html><img src="%s"></html>' % k.url('/image.png').encode()
        s.overrides['/first.html'] = b'<html><p>first</p></html>'
        k.overrides['/b.html'] = b'<html><p>b</p></html>'
        conf = _conf(tmp_path, '127.0.0.10', True, 'fetch.reducers=1', 'fetch.threads=1',
                     'politeness.delay=%s' % delay)
        counters = _run_fetch(tmp_path, conf, [
            {'kind': 'url', 'url': s.url('/first.html'), 'depth': 0, 'priority': 2},
            {'kind': 'url', 'url': s.url('/'), 'depth': 0, 'priority': 1},  # rendered last
            {'kind': 'url', 'url': k.url('/a.html'), 'depth': 0},
            {'kind': 'url', 'url': k.url('/b.html'), 'depth': 0},
            {'kind': 'url', 'url': k.url('/c.html'), 'depth': 0}])
        assert sorted(k.paths()) == ['/a.html', '/b.html', '/c.html', '/robots.txt']
        check_politeness(k, delay)
        check_politeness(s, delay)
    assert counters['render']['subrequests_aborted_key_busy_total'] == 1
    assert counters['render'].get('subrequests_fetched_total', 0) == 0


@pytest.mark.unit
def test_the_renderer_keeps_the_delay_after_a_keys_thread_ended():
    """A key's thread is done; then a page of another key asks the renderer for an
    image of it (no browser needed: the request handed to the renderer's fetching
    directly). That request keeps the delay after the thread's last request, and its
    Crawl-delay."""
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    from jobs.lib.subrequest import Asked, Budget
    delay = 1.0
    robots = b'User-agent: *\nCrawl-delay: %s\n' % str(delay).encode()
    with FixtureSite('127.0.0.12') as s, FixtureSite('127.0.0.13', robots=robots) as k:
        conf = test_conf('politeness.delay=%s' % DELAY)
        cache, resolver = RobotsCache(), Resolver(True)
        renderer = Renderer(conf, cache, resolver)
        page = HostFetcher(conf, cache, resolver)
        page.key = '%s:%d' % (s.host, s.port)
        try:
            kf = HostFetcher(conf, cache, resolver)
            docs = list(renderer.each(kf, [{'kind': 'url', 'url': k.url('/a.html'),
                                            'depth': 0}], 0, '%s:%d' % (k.host, k.port)))
            assert docs[0]['status'] == 'fetched'
            got = renderer.requests.fetch(Asked(k.url('/image.png'), 'GET', {}), page,
                                          Budget(conf['render']))
        finally:
            renderer.close()
        assert got[0] == 200
        assert k.paths() == ['/robots.txt', '/a.html', '/image.png']
        check_politeness(k, delay)


@pytest.mark.unit
@pytest.mark.parametrize('max_crawl_delay', [5.0, 0.5])
def test_the_renderers_requests_keep_a_keys_crawl_delay(max_crawl_delay):
    """Two images of a key whose robots.txt asks for a Crawl-delay, through the task's
    fetcher of that key: one Crawl-delay apart, or aborted (and never requested) when
    that is over politeness.max_crawl_delay, as the key's own pages would be refused."""
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    from jobs.lib.subrequest import Asked, Budget
    robots = b'User-agent: *\nCrawl-delay: 1\n'
    with FixtureSite('127.0.0.14') as s, FixtureSite('127.0.0.15', robots=robots) as k:
        conf = test_conf('politeness.delay=%s' % DELAY,
                         'politeness.max_crawl_delay=%s' % max_crawl_delay)
        cache, resolver = RobotsCache(), Resolver(True)
        renderer = Renderer(conf, cache, resolver)
        page = HostFetcher(conf, cache, resolver)
        page.key = '%s:%d' % (s.host, s.port)
        try:
            got = [renderer.requests.fetch(Asked(k.url('/%d.png' % i), 'GET', {}), page,
                                           Budget(conf['render'])) for i in (1, 2)]
        finally:
            renderer.close()
        if max_crawl_delay < 1:
            assert got == ['crawl_delay', 'crawl_delay']
            assert k.paths() == ['/robots.txt']
            return
        assert [g[0] for g in got] == [404, 404]     # the fixture has no such images
        assert k.paths() == ['/robots.txt', '/1.png', '/2.png']
        check_politeness(k, 1.0)


def test_a_keys_pace_counts_the_renderers_requests(tmp_path):
    """The pace record of a key (when its last request ended, for later layers) counts
    a rendered page's request to it after its own flow ended (its one URL, fetched
    while the page's key waits its delay before the page); a key only the renderer
    asked gets one too."""
    with FixtureSite('127.0.0.16') as s, FixtureSite('127.0.0.17') as k, \
            FixtureSite('127.0.0.18') as only:
        s.overrides['/'] = b'<html><img src="%s"><img src="%s"></html>' % (
            k.url('/image.png').encode(), only.url('/image.png').encode())
        s.overrides['/first.html'] = b'<html><p>first</p></html>'
        # Two threads: one waits for the page's render while the other fetches k.
        conf = _conf(tmp_path, '127.0.0.16', True, 'fetch.reducers=1', 'fetch.threads=2')
        out = tmp_path / 'robots'
        _run_fetch(tmp_path, conf, [
            {'kind': 'url', 'url': k.url('/a.html'), 'depth': 0},
            {'kind': 'url', 'url': s.url('/first.html'), 'depth': 0, 'priority': 2},
            {'kind': 'url', 'url': s.url('/'), 'depth': 0, 'priority': 1}],
            '--robots-dir', str(out))
        assert k.paths() == ['/robots.txt', '/a.html', '/image.png']
        # The servers log monotonic times; the pace records are epoch seconds.
        asked = {site: site.requests[-1]['t'] + time.time() - time.monotonic()
                 for site in (k, only)}
        check_politeness(k)
    paces = {r['key']: r for f in out.iterdir() for r in map(json.loads, f.open())
             if r['kind'] == 'pace'}
    assert paces['%s:%d' % (k.host, k.port)]['url'] == k.url('/a.html')
    assert paces['%s:%d' % (only.host, only.port)]['url'] == only.url('/image.png')
    for site in (k, only):
        assert paces['%s:%d' % (site.host, site.port)]['ended_at'] >= asked[site]


@pytest.mark.unit
def test_the_renderer_keeps_the_delay_after_a_keys_last_request_in_an_earlier_layer():
    """A key asked just now in an earlier layer (its pace record, joined to the task's
    list): the renderer's first request to it keeps the delay after that one."""
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    from jobs.lib.subrequest import Asked, Budget
    delay = 1.0
    with FixtureSite('127.0.0.19') as s, FixtureSite('127.0.0.20') as k:
        conf = test_conf('politeness.delay=%s' % delay, 'politeness.obey_robots=false')
        cache, resolver = RobotsCache(), Resolver(True)
        renderer = Renderer(conf, cache, resolver)
        page = HostFetcher(conf, cache, resolver)
        page.key = '%s:%d' % (s.host, s.port)
        renderer.requests.paces['%s:%d' % (k.host, k.port)] = time.time()
        asked = time.monotonic()
        try:
            got = renderer.requests.fetch(Asked(k.url('/image.png'), 'GET', {}), page,
                                          Budget(conf['render']))
        finally:
            renderer.close()
        assert got[0] == 200 and k.paths() == ['/image.png']
        assert k.requests[0]['t'] >= asked + delay * 0.95


@pytest.mark.job
def test_a_task_that_renders_nothing_needs_no_render_distribution():
    """Every fetch task makes a Renderer; on YARN, a crawl that renders nothing ships
    neither Playwright nor CacheControl, so neither may be imported by it."""
    import subprocess
    import sys
    code = ("import sys\n"
            "sys.modules['playwright'] = sys.modules['cachecontrol'] = None\n"
            "from jobs.fetch import MRFetch\n"
            "from jobs.lib.render import Renderer\n"
            "from jobs.lib.netpolicy import Resolver\n"
            "from jobs.lib.robots import RobotsCache\n"
            "from tests.helpers import test_conf\n"
            "r = Renderer(test_conf(), RobotsCache(), Resolver(True))\n"
            "assert list(r.steps(type('F', (), {'steps': lambda *a: iter([{}]), 'key': 'k', 'slot': None})(),"
            " [], 0, 'k')) == [{}]\n"
            "r.close()\n")
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr


@pytest.mark.unit
def test_playwright_is_shipped_to_yarn_only_for_a_crawl_that_renders(tmp_path):
    from drivers.runtime import hadoop
    render = ('playwright', 'cachecontrol')
    for conf in (test_conf(), _conf(tmp_path, 'h.example', False)):
        assert not set(render) & set(hadoop.task_distributions(conf))
    assert hadoop.task_distributions(_conf(tmp_path, 'h.example', True))[-2:] == render


def _kill_browsers(renderers=False):
    """SIGKILL the browsers this process started (Playwright's driver's children), or
    their renderer processes."""
    import signal

    def parent(pid):
        with open('/proc/%d/stat' % pid) as f:
            return int(f.read().rpartition(')')[2].split()[1])

    def mine(pid):
        for _ in range(6):
            pid = parent(pid)
            if pid == os.getpid():
                return True
        return False
    killed = 0
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                cmd = f.read()
            if b'chromium' not in cmd or not mine(pid):
                continue
            if (b'--type=renderer' in cmd) if renderers else (b'--type=' not in cmd):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        except (OSError, ValueError):
            continue
    return killed


def _open_pages(renderer):
    """Pages open in the renderer's browser, once what its loop has to do is done."""
    import asyncio

    async def count():
        await asyncio.sleep(0.5)
        return len(renderer._context[1].pages)
    return asyncio.run_coroutine_threadsafe(count(), renderer._loop).result(10)


def test_a_keys_pages_load_in_turn_in_one_browser_page(tmp_path):
    """Three pages of one key load in one browser page, closed when the key's fetch
    ends; its renderer killed between two pages costs a new page, not the render."""
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    with FixtureSite('127.0.0.11') as s:
        _serve_app(s)
        for n in (1, 2):
            s.overrides['/made/%d.html' % n] = APP_PAGE % (b'', b'<p>%d</p>' % n)
        conf = _conf(tmp_path, '127.0.0.11', True)
        renderer = Renderer(conf, RobotsCache(), Resolver(True))
        items = [{'kind': 'url', 'url': s.url(p), 'depth': 0}
                 for p in ('/', '/made/1.html', '/made/2.html')]
        stats = {}
        try:
            docs = list(renderer.each(HostFetcher(conf, resolver=Resolver(True)),
                                      items, 0, None))
            assert _open_pages(renderer) == 0
            docs = renderer.each(HostFetcher(conf, resolver=Resolver(True)), items, 0, None)
            first = next(docs)
            assert _kill_browsers(renderers=True) >= 1
            rest = list(docs)
            assert _open_pages(renderer) == 0
        finally:
            renderer.close(stats.__setitem__)
        check_politeness(s)
    assert all(d['rendered'] and 'Built by script' in d['body'] for d in [first] + rest)
    assert '<p>2</p>' in rest[-1]['body']
    assert stats['pages_rendered_total'] == 6 and stats['browser_starts_total'] == 1
    assert stats['browser_pages_total'] == 3


def _render_pages(conf, paths, site):
    """Render *paths* of *site* as one key's fetch of one task: (docs, counters)."""
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    renderer, stats = Renderer(conf, RobotsCache(), Resolver(True)), {}
    items = [{'kind': 'url', 'url': site.url(p), 'depth': 0} for p in paths]
    try:
        docs = list(renderer.each(HostFetcher(conf, resolver=Resolver(True)), items, 0,
                                  None))
    finally:
        renderer.close(stats.__setitem__)
    return docs, stats


@pytest.mark.parametrize('cache_bytes', [33554432, 0])
def test_the_browsers_requests_are_cached_as_a_browsers_are(tmp_path, cache_bytes):
    """Three pages of a key load the same scripts. One the server says is fresh for an
    hour is asked for once; one with only an ETag is revalidated (a 304, no body); a
    no-store one is fetched for each page. render.cache_bytes = 0: no cache."""
    scripts = b''.join(b'<script src="/%s.js"></script>' % n for n in (b'etag', b'nostore'))
    js = b'window.seen = (window.seen || 0) + 1;'
    with FixtureSite('127.0.0.12') as s:
        _serve_app(s, scripts)
        s.overrides['/app.js'] += ([('Cache-Control', 'max-age=3600')],)
        s.overrides['/etag.js'] = ('typed', 'application/javascript', js)
        s.overrides['/nostore.js'] = ('typed', 'application/javascript', js,
                                      [('Cache-Control', 'no-store')])
        for n in (1, 2):
            s.overrides['/made/%d.html' % n] = APP_PAGE % (scripts, b'<p>%d</p>' % n)
        conf = _conf(tmp_path, '127.0.0.12', True, 'render.cache_bytes=%d' % cache_bytes)
        docs, stats = _render_pages(conf, ['/', '/made/1.html', '/made/2.html'], s)
        check_politeness(s)
        asked = [(r['path'], r['headers'].get('If-None-Match')) for r in s.requests]
    assert all(d['rendered'] and 'Built by script' in d['body'] for d in docs)
    etag = '"%s"' % hashlib.sha1(js).hexdigest()[:16]
    if not cache_bytes:
        # (a page's scripts are asked for at once: their order is the threads')
        assert sorted(a for a in asked if a[0].endswith('.js')) == sorted(
            (p, None) for p in ('/app.js', '/etag.js', '/nostore.js') for _ in range(3))
        assert 'subrequests_cached_total' not in stats
        assert stats['subrequests_fetched_total'] == 9
        return
    assert [a for a in asked if a[0] == '/app.js'] == [('/app.js', None)]
    assert [a for a in asked if a[0] == '/etag.js'] == [('/etag.js', None)] + \
        [('/etag.js', etag)] * 2
    assert [a for a in asked if a[0] == '/nostore.js'] == [('/nostore.js', None)] * 3
    assert stats['subrequests_cached_total'] == 2
    assert stats['subrequests_revalidated_total'] == 2
    assert stats['subrequests_fetched_total'] == 7
    assert stats['subrequest_bytes_total'] == len(APP_JS) + 4 * len(js)


@pytest.mark.unit
def test_a_304_for_a_response_dropped_meanwhile_is_asked_again_in_full(tmp_path):
    """A stale script is revalidated, and while the 304 is on its way another
    response takes the cache's bytes: the browser, which sent no validators, still
    gets the whole script, asked for again without them (counted)."""
    import email.utils
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.robots import RobotsCache
    from jobs.lib.subrequest import Asked, Budget, SubRequests
    js = b'window.seen = (window.seen || 0) + 1;'
    with FixtureSite('127.0.0.16') as s:
        s.overrides['/etag.js'] = ('typed', 'application/javascript', js)
        conf = _conf(tmp_path, '127.0.0.99', True, 'render.cache_bytes=2000')
        stats = {}
        subs = SubRequests(conf, RobotsCache(), Resolver(True),
                           lambda n, k=1: stats.__setitem__(n, stats.get(n, 0) + k))
        page_fetcher = HostFetcher(conf, resolver=Resolver(True))   # another key's
        url = s.url('/etag.js')
        lookup, stale = subs.cache.lookup, []

        def lookup_then_fill(u, headers):
            # The lookup made right before the request goes out (SubRequests looks up
            # again once the fetcher's turn comes): two other responses come in then.
            got = lookup(u, headers)
            if u == url and getattr(got, 'validators', None):
                stale.append(got)
                if len(stale) == 2:
                    for n in (1, 2):
                        other = lookup('http://127.0.0.16/filler%d.js' % n, {})
                        subs.cache.store(other, 200, {
                            'Date': email.utils.formatdate(usegmt=True),
                            'Cache-Control': 'max-age=60'}, b'x' * 1200)
            return got
        subs.cache.lookup = lookup_then_fill
        try:
            got = [subs.fetch(Asked(url, 'GET', {}), page_fetcher, Budget(conf['render']))
                   for _ in range(2)]
        finally:
            subs.close()
        asked = [(r['path'], r['headers'].get('If-None-Match')) for r in s.requests
                 if r['path'] == '/etag.js']
    etag = '"%s"' % hashlib.sha1(js).hexdigest()[:16]
    assert [(g[0], g[2]) for g in got] == [(200, js), (200, js)]
    assert asked == [('/etag.js', None), ('/etag.js', etag), ('/etag.js', None)]
    assert stats['subrequests_revalidated_dropped_total'] == 1
    assert 'subrequests_revalidated_total' not in stats


def test_keys_that_start_at_once_share_the_tasks_browser_context(tmp_path):
    """Three keys' first pages wait together for the browser to start: they open their
    pages in one context (in three, Chromium started a renderer process per load)."""
    import asyncio
    import threading
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    with FixtureSite('127.0.0.13') as a, FixtureSite('127.0.0.14') as b, \
            FixtureSite('127.0.0.15') as c:
        for s in (a, b, c):
            _serve_app(s)
        conf = _conf(tmp_path, '127.0.0.1*', True)
        renderer, stats, docs = Renderer(conf, RobotsCache(), Resolver(True)), {}, []
        start = threading.Barrier(3)

        def key(s):
            items = [{'kind': 'url', 'url': s.url(p), 'depth': 0} for p in ('/', '/made/1.html')]
            start.wait()
            docs.extend(renderer.each(HostFetcher(conf, resolver=Resolver(True)), items,
                                      0, None))

        async def contexts():
            return len(renderer._browser.contexts)
        try:
            threads = [threading.Thread(target=key, args=(s,)) for s in (a, b, c)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert asyncio.run_coroutine_threadsafe(contexts(), renderer._loop).result(10) == 1
        finally:
            renderer.close(stats.__setitem__)
        for s in (a, b, c):
            check_politeness(s)
    assert len(docs) == 6 and sum('Built by script' in d['body'] for d in docs) == 3
    assert stats['pages_rendered_total'] == 6 and stats['browser_pages_total'] == 3


@pytest.mark.unit
def test_the_request_cache_keeps_its_bytes_and_drops_the_oldest():
    """render.cache_bytes bounds the cache: the least recently used entry goes first,
    and a response larger than the whole cache is not kept."""
    import email.utils
    from jobs.lib.subcache import Stale, SubCache
    fresh = {'Date': email.utils.formatdate(usegmt=True), 'Cache-Control': 'max-age=60'}
    cache = SubCache(1500)

    def put(url, size):
        stale = cache.lookup(url, {})
        assert isinstance(stale, Stale) and stale.validators == {}
        assert cache.store(stale, 200, fresh, b'x' * size) is None

    put('http://a.example/1.js', 600)
    put('http://a.example/2.js', 600)
    assert cache.lookup('http://a.example/1.js', {})[2] == b'x' * 600   # used: kept
    put('http://a.example/3.js', 600)
    assert isinstance(cache.lookup('http://a.example/2.js', {}), Stale)
    assert cache.lookup('http://a.example/1.js', {})[0] == 200
    put('http://a.example/big.js', 2000)
    assert isinstance(cache.lookup('http://a.example/big.js', {}), Stale)
    assert cache.lookup('http://a.example/3.js', {})[2] == b'x' * 600


def test_a_crashed_browser_is_started_again_for_the_next_page(tmp_path):
    from jobs.lib.fetcher import HostFetcher
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.render import Renderer
    from jobs.lib.robots import RobotsCache
    with FixtureSite('127.0.0.10') as s:
        _serve_app(s)
        conf = _conf(tmp_path, '127.0.0.10', True)
        renderer = Renderer(conf, RobotsCache(), Resolver(True))
        items = [{'kind': 'url', 'url': s.url(p), 'depth': 0}
                 for p in ('/', '/made/1.html')]
        docs = renderer.each(HostFetcher(conf, resolver=Resolver(True)), items, 0, None)
        stats = {}
        try:
            first = next(docs)
            assert _kill_browsers() == 1
            second = next(docs)
        finally:
            docs.close()
            renderer.close(stats.__setitem__)
    assert first['rendered'] and second['rendered']
    assert 'Built by script' in first['body']
    assert stats['browser_starts_total'] == 2 and stats['pages_rendered_total'] == 2


@pytest.mark.unit
def test_the_driver_says_once_when_no_browser_is_there(tmp_path, monkeypatch):
    """At the start of a crawl whose sites ask for rendering, the driver names the
    missing browser once (jobs.lib.render.tool_warnings); nothing when no site renders
    or the browser is there."""
    from jobs.lib import render
    missing = _conf(tmp_path, '127.0.0.4', True, 'render.browser=/nonexistent/chromium')
    assert render.tool_warnings(missing) == [
        'render: no browser at /nonexistent/chromium (render.browser): pages of render = '
        'true sites are parsed as fetched (Debian: apt-get install chromium)']
    assert render.tool_warnings(_conf(tmp_path, '127.0.0.4', True)) == []
    assert render.tool_warnings(_conf(tmp_path, '127.0.0.4', False,
                                      'render.browser=/nonexistent/chromium')) == []
    # Playwright found but not importable (a broken install): said once as well.
    monkeypatch.setitem(sys.modules, 'playwright.sync_api', None)
    assert render.tool_warnings(_conf(tmp_path, '127.0.0.4', True)) == [
        'render: Playwright cannot load (import of playwright.sync_api halted; None in '
        'sys.modules; pip install playwright): pages of render = true sites are parsed '
        'as fetched']


@pytest.mark.unit
def test_a_render_that_never_ends_gives_the_page_back_as_fetched(tmp_path, monkeypatch):
    """A Playwright call that never returns (a killed renderer's page) does not hold the
    key's thread: after 2 x render.max_seconds + 5 s the page comes back with its
    fetched body, counted render_failed_timeout_total."""
    import asyncio
    import concurrent.futures
    import time

    from jobs.lib import render
    from jobs.lib.netpolicy import Resolver
    from jobs.lib.robots import RobotsCache

    async def never(self, job):
        await asyncio.Event().wait()
    monkeypatch.setattr(render.Renderer, '_render_one', never)
    conf = _conf(tmp_path, '127.0.0.12', True, 'render.max_seconds=0.1')
    renderer = render.Renderer(conf, RobotsCache(), Resolver(True))
    doc = {'body': '<p>as fetched</p>'}
    stats = {}
    start = time.monotonic()
    pool = concurrent.futures.ThreadPoolExecutor(1)     # so that the test ends anyway
    try:
        got = pool.submit(renderer._finish, renderer._submit(doc, None)).result(30)
    finally:
        pool.shutdown(wait=False)
        renderer.close(stats.__setitem__)
    assert got is doc and got['body'] == '<p>as fetched</p>' and 'rendered' not in got
    assert stats == {'render_failed_timeout_total': 1}
    assert time.monotonic() - start < 0.2 + render._CLOSE_SECONDS + 5.0
