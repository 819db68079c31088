"""Shared test fixtures: the fixture website on loopback and a crawl helper."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from drivers.fixtures.site import FixtureSite  # noqa: E402
from jobs.lib import config  # noqa: E402

#: Settings every test crawl uses: loopback must be allowed, delays short.
TEST_SETTINGS = ['security.allow_private_networks=true', 'politeness.delay=0.2',
                 'fetch.read_timeout=5', 'fetch.connect_timeout=2']


@pytest.fixture
def site():
    with FixtureSite() as s:
        yield s


def test_conf(*extra):
    return config.load(overrides=TEST_SETTINGS + list(extra))


test_conf.__test__ = False


def crawl_site(site, folder, conf, depth, start='/', runner='inline'):
    """Crawl *site* from its path *start* into FOLDER/crawl: (out path, report)."""
    seeds = os.path.join(str(folder), 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write(site.url(start) + '\n')
    out = os.path.join(str(folder), 'crawl')
    from drivers.crawl import Crawl
    report = Crawl(out, conf, runner=runner, depth=depth, progress=lambda m: None).run(seeds)
    return out, report


def at(days):
    """An ISO-8601 UTC time *days* from now (re-crawl times)."""
    from datetime import datetime, timedelta, timezone
    t = datetime.now(timezone.utc) + timedelta(days=days)
    return t.strftime('%Y-%m-%dT%H:%M:%SZ')


def read_records(folder):
    """All JSON-lines records of a job output folder."""
    out = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(('.', '_')):
            continue
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def current_xml(out):
    """{url: xml text} of a crawl as it stands: xml/ (the base build) with every delta
    OUT/outputs.json lists applied in order, as an indexer applies them."""
    docs = read_xml(os.path.join(out, 'xml'))
    for build in json.load(open(os.path.join(out, 'outputs.json'))).get('deltas', []):
        for url, doc in read_xml(os.path.join(out, 'delta', build, 'xml')).items():
            if doc.startswith('<deletion'):
                docs.pop(url, None)
            else:
                docs[url] = doc
    return docs


def current_merged(out):
    """{url: merged record} of a crawl as it stands: merged/ with the deltas' records."""
    recs = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    for build in json.load(open(os.path.join(out, 'outputs.json'))).get('deltas', []):
        for r in read_records(os.path.join(out, 'delta', build, 'records')):
            if r['kind'] == 'deletion':
                recs.pop(r['url'], None)
            else:
                recs[r['url']] = r
    return recs


def read_xml(folder):
    """{url: xml text} from xml/part-*."""
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            for line in f:
                url, _, doc = line.rstrip('\n').partition('\t')
                assert url not in out, 'page %s written twice' % url
                out[url] = doc
    return out


# -- kinds of test -----------------------------------------------------------------------
#: Every test is one kind, by the heaviest thing it runs: ``unit`` (functions and classes
#: in this process, loopback servers included), ``job`` (mrjob jobs, job modules and
#: Python scripts in a process of their own), ``crawl`` (the crawl loop or the mrcrawl
#: command), ``browser`` (Chromium), ``hadoop`` (the test cluster). A marker says it: the
#: module's ``pytestmark``, or the test's own, which wins. ``make test-fast`` runs the unit
#: and job tests. A test that runs something heavier than its kind fails, saying which
#: kind it needs.
KINDS = ('unit', 'job', 'crawl', 'browser', 'hadoop')


def _kind_of(item):
    """The closest kind marker: the test's own, else its class's or module's."""
    return next((m.name for m in item.iter_markers() if m.name in KINDS), None)


def pytest_addoption(parser):
    parser.addoption('--kinds', default='', metavar='KIND,...',
                     help='run only the tests of these kinds (%s)' % ', '.join(KINDS))


def pytest_collection_modifyitems(config, items):
    bad = [item.nodeid for item in items if _kind_of(item) is None]
    if bad:
        raise pytest.UsageError('tests without a kind (%s: tests/conftest.py):\n  %s'
                                % ('/'.join(KINDS), '\n  '.join(bad)))
    wanted = set(filter(None, config.getoption('kinds').split(',')))
    if wanted - set(KINDS):
        raise pytest.UsageError('--kinds: unknown %s' % ', '.join(sorted(wanted - set(KINDS))))
    if wanted:     # by the closest kind marker, which -m cannot tell from the module's
        keep = [item for item in items if _kind_of(item) in wanted]
        kept = set(map(id, keep))
        config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
        items[:] = keep


@pytest.fixture(autouse=True)
def _kind_guard(request, monkeypatch):
    """Fail a test that runs more than its kind allows (the first such call says what)."""
    import subprocess
    import threading

    from mrjob.runner import MRJobRunner

    from drivers.crawl import Crawl
    from jobs.lib.render import Renderer
    kind = _kind_of(request.node)
    if kind == 'hadoop':
        yield
        return
    rank, in_threads = KINDS.index(kind), []

    def need(least, what):
        if rank < KINDS.index(least):
            why = '%s runs %s: mark it %s, not %s' % (request.node.nodeid, what, least, kind)
            if threading.current_thread() is not threading.main_thread():
                in_threads.append(why)       # said at teardown
            pytest.fail(why, pytrace=False)

    def guard(owner, name, least, what):
        real = getattr(owner, name)

        def checked(*args, **kwargs):
            need(least, what)
            return real(*args, **kwargs)
        monkeypatch.setattr(owner, name, checked)

    guard(MRJobRunner, 'run', 'job', 'a job')
    guard(Crawl, 'run', 'crawl', 'a crawl')
    guard(Renderer, '_launch', 'browser', 'Chromium')
    real_popen = subprocess.Popen.__init__

    def popen(self, args, *rest, **kwargs):
        words = [str(a) for a in (args if isinstance(args, (list, tuple)) else [args])]
        if any(w in ('drivers.cli', 'make') or w.endswith('/mrcrawl') for w in words):
            need('crawl', 'the mrcrawl command')
        elif any(w.startswith('jobs.') or w.endswith('.py') or w == '-c' for w in words):
            need('job', 'a job or Python script')
        return real_popen(self, args, *rest, **kwargs)
    monkeypatch.setattr(subprocess.Popen, '__init__', popen)
    yield
    if in_threads:
        pytest.fail(in_threads[0], pytrace=False)
