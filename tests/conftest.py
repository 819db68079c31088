"""Shared test fixtures (the fixture website on loopback, a crawl's settings file) and the
kinds of test. The helpers the tests share are in tests/helpers.py."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from drivers.fixtures.site import FixtureSite  # noqa: E402
from tests.helpers import test_conf  # noqa: E402


@pytest.fixture
def site():
    with FixtureSite() as s:
        yield s


@pytest.fixture
def conf_file(tmp_path):
    """The test settings (tests.helpers.TEST_SETTINGS) as a job's --crawl-conf file."""
    path = tmp_path / 'conf.json'
    path.write_text(json.dumps(test_conf()))
    return str(path)


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
        elif any(w.startswith('jobs.') or w.endswith('.py') for w in words) or \
                '-c' in words and 'python' in words[0].rsplit('/', 1)[-1]:
            need('job', 'a job or Python script')
        return real_popen(self, args, *rest, **kwargs)
    monkeypatch.setattr(subprocess.Popen, '__init__', popen)
    yield
    if in_threads:
        pytest.fail(in_threads[0], pytrace=False)
