"""The code's import directions: every import of jobs/ and drivers/ (a function's too)
goes from a room to itself or to a room below it, and no modules import each other.

The rooms, bottom to top (docs/data-flow.md, "Where the code lives"):

    jobs.lib          pure helpers the tasks import
    jobs              one MRJob per file; nothing outside jobs/ (the nodes get jobs/ alone)
    drivers.folder.layout  every name under a crawl folder, and nothing else
    drivers.fixtures  websites on loopback for the tests and the demo
    drivers.runtime   where and how a job runs: runners, Hadoop, file systems, steps
    drivers.folder    the crawl folder: its settings and cycles
    drivers.later     later builds and the Parquet index
    drivers.reports   counters, summary, report.json and report.html
    drivers.export    the crawl's pages into other systems (Solr)
    drivers           the crawl loop and the design's five drivers
    drivers.cli       the mrcrawl command

An import inside a function says why on its line or the line above (a heavy or optional
library, a start-up kept short): the others sit at the top of their modules.
"""
import ast
import os

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.unit

#: drivers/folder/layout.py, the names under a crawl folder, imports nothing and is a
#: room of its own below the others: each room of drivers/ joins its names to OUT.
ROOMS = ['jobs.lib', 'jobs', 'drivers.folder.layout', 'drivers.fixtures', 'drivers.runtime',
         'drivers.folder', 'drivers.later', 'drivers.reports', 'drivers.export', 'drivers',
         'drivers.cli']


def modules():
    """{module name: path} of every module in jobs/ and drivers/."""
    found = {}
    for top in ('jobs', 'drivers'):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(folder, name)
                    mod = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
                    found[mod[:-len('.__init__')] if mod.endswith('.__init__') else mod] = path
    return found


def room(module):
    """The longest room *module* is in."""
    return max((r for r in ROOMS if module == r or module.startswith(r + '.')), key=len)


def imports(path, known):
    """[(line, imported module, in a function, commented)] of the file at *path*: the
    project's modules it names (``from pkg import mod`` names pkg.mod)."""
    lines = open(path).read().split('\n')
    tree = ast.parse('\n'.join(lines))
    nested = {id(n) for f in ast.walk(tree)
              if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f) if n is not f}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module + '.' + a.name if node.module + '.' + a.name in known
                     else node.module for a in node.names]
        else:
            continue
        text = lines[node.lineno - 1] + lines[node.lineno - 2].strip()[:1]
        for name in names:
            while name not in known and '.' in name:
                name = name.rsplit('.', 1)[0]
            if name in known:
                found.append((node.lineno, name, id(node) in nested, '#' in text))
    return found


def test_rooms_import_only_themselves_and_the_rooms_below():
    known = modules()
    upward = ['%s:%d imports %s' % (os.path.relpath(path, ROOT), line, name)
              for mod, path in known.items() for line, name, _, _ in imports(path, known)
              if ROOMS.index(room(name)) > ROOMS.index(room(mod))]
    assert upward == []


def test_no_modules_import_each_other():
    """No cycle, even through an import inside a function (Tarjan's components)."""
    known = modules()
    graph = {mod: {name for _, name, _, _ in imports(path, known) if name != mod}
             for mod, path in known.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


def test_imports_inside_functions_say_why():
    """Every import inside a function of jobs/ and drivers/, of the project's modules or
    of any library, carries a comment: the others belong at the top of the module."""
    silent = []
    for mod, path in modules().items():
        lines = open(path).read().split('\n')
        tree = ast.parse('\n'.join(lines))
        for f in ast.walk(tree):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                silent += ['%s:%d %s' % (os.path.relpath(path, ROOT), n.lineno,
                                         lines[n.lineno - 1].strip())
                           for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))
                           and not said_why(lines, n.lineno)]
    assert sorted(set(silent)) == []


def said_why(lines, lineno):
    """A comment on the import's line, on a line of the imports just above it, or on
    the line above them all."""
    while True:
        if '#' in lines[lineno - 1] or lines[lineno - 2].strip().startswith('#'):
            return True
        if not lines[lineno - 2].strip().startswith(('import ', 'from ')):
            return False
        lineno -= 1


def test_the_example_downstream_job_imports_nothing_of_mrcrawl():
    """jobs/inverted_index.py reads the XML as another team's job would."""
    known = modules()
    assert imports(known['jobs.inverted_index'], known) == []


def test_the_test_sees_every_room_and_the_known_edges():
    """The walk above is not vacuous: it finds the job modules' imports of jobs.lib,
    the loop's of its drivers, and function-level imports where they are."""
    known = modules()
    assert {room(m) for m in known} == set(ROOMS)
    crawl = {name for _, name, _, _ in imports(known['drivers.crawl'], known)}
    assert {'drivers.crawler_driver', 'drivers.runtime.steps', 'jobs.lib.counters'} <= crawl
    fetch = {name for _, name, _, _ in imports(known['jobs.fetch'], known)}
    assert 'jobs.base' in fetch and 'jobs.lib.fetcher' in fetch


def test_no_test_module_imports_another():
    """Shared helpers live in tests/helpers.py (fixtures in conftest.py), and the
    fixture sites' helpers are public: a test module imports no other test module and
    no private name of drivers/fixtures/."""
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, 'tests'))):
        if not name.endswith('.py'):
            continue
        path = os.path.join(ROOT, 'tests', name)
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith('tests.test_') or \
                        node.module.startswith('drivers.fixtures') and any(
                            a.name.startswith('_') for a in node.names):
                    found.append('tests/%s:%d %s' % (name, node.lineno, node.module))
            elif isinstance(node, ast.Import):
                found += ['tests/%s:%d %s' % (name, node.lineno, a.name)
                          for a in node.names if a.name.startswith('tests.test_')]
    assert found == []


@pytest.mark.job
def test_the_jobs_that_fetch_nothing_start_without_the_fetchers_libraries():
    """A task imports its job's module first: a job that neither fetches nor parses
    does not pay for requests (about 40 ms), the HTML parser, or lxml, which the
    imports kept inside functions above leave to the jobs that use them."""
    import subprocess
    import sys
    heavy = ('requests', 'selectolax.lexbor', 'lxml.etree', 'warcio')
    for job in ('anchors', 'current', 'dbget', 'dbstats', 'delta', 'generate',
                'index_rows', 'merge', 'merge_join', 'optimize', 'pagerank', 'plan_fetch'):
        code = 'import sys, jobs.%s; print(sorted(m for m in %r if m in sys.modules))' % (
            job, heavy)
        out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip()
        assert (job, out) == (job, '[]')
