"""Names under a crawl folder are spelled in drivers/folder/layout.py only: no other
module of drivers/ passes one as a literal to a path it builds (``c.path('merged')``,
``fs.join(out, 'conf.json')``) or writes an old version's name (``'prev_...'``). A
folder records its layout's version, and one of another layout is refused."""
import ast
import os

import pytest

from drivers.folder import layout, settings
from drivers.runtime import fs as fslib
from tests.helpers import ROOT

pytestmark = pytest.mark.unit

#: Calls that build a path under OUT from their arguments.
PATH_CALLS = ('path', 'join', '_path')


def layout_names():
    """Every name layout.py spells: its string constants and the parts of its paths."""
    names = set()
    for value in vars(layout).values():
        if isinstance(value, str):
            names.add(value)
            names.update(value.split('/'))
        elif isinstance(value, frozenset):
            names.update(value)
    return names


def under_out(node):
    """Does *node* (a join's first argument) name the crawl folder or a path in it: a
    variable ``out``, an attribute ``.out``, a ``.path(...)`` call?"""
    if isinstance(node, ast.Name):
        return node.id in ('out', 'out_dir')
    if isinstance(node, ast.Attribute):
        return node.attr == 'out'
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in ('path', '_path')


def docstrings(tree):
    """The docstring nodes of *tree* (a module's, a class's, a function's)."""
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def literal_names(path, names):
    """(line, name) of each literal in *path* that spells a name of *names* where a path
    under OUT is built, or an old version's name."""
    with open(path) as f:
        tree = ast.parse(f.read())
    skip, found = docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value.startswith('prev_') and id(node) not in skip:
            found.append((node.lineno, node.value))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
        if name in ('path', '_path') or name == 'join' and node.args and \
                under_out(node.args[0]):
            found += [(a.lineno, a.value) for a in node.args if isinstance(a, ast.Constant)
                      and isinstance(a.value, str) and a.value in names]
    return found


def test_only_the_layout_spells_the_names_under_a_crawl_folder():
    names = layout_names()
    offenders = []
    for folder, _, files in os.walk(os.path.join(ROOT, 'drivers')):
        for fname in files:
            path = os.path.join(folder, fname)
            rel = os.path.relpath(path, ROOT)
            if not fname.endswith('.py') or rel in ('drivers/folder/layout.py',) or \
                    rel.startswith('drivers/fixtures/'):
                continue
            offenders += ['%s:%d %r' % (rel, line, name)
                          for line, name in literal_names(path, names)]
    assert offenders == []


def test_the_check_finds_a_name_spelled_elsewhere(tmp_path):
    """The test above is no empty pass: a module that spells names is caught."""
    bad = tmp_path / 'bad.py'
    bad.write_text('def f(c, fs, out, stage):\n    """prev_x/ may be named here."""\n'
                   "    c.path('merged')\n    fs.join(out, 'conf.json')\n"
                   "    c.path('tmp', 'joined')\n    fs.join(stage, 'out')\n"
                   "    fs.join(c.path(layout.DELTA), 'xml')\n    return 'prev_index'\n")
    assert sorted(literal_names(str(bad), layout_names())) == [
        (3, 'merged'), (4, 'conf.json'), (5, 'joined'), (5, 'tmp'), (7, 'xml'),
        (8, 'prev_index')]


def test_a_folder_records_its_layout_and_another_layout_is_refused(tmp_path):
    fs = fslib.for_path(str(tmp_path))
    out = str(tmp_path / 'crawl')
    settings.check_folder(out)                       # new: accepted, nothing written
    fs.mkdirs(out)
    settings.mark(fs, out)
    assert settings.layout_of(fs, out) == layout.VERSION
    settings.check_folder(out, existing=True)
    (tmp_path / 'crawl' / layout.MARKER).write_text('A crawl folder.\nlayout %d\n'
                                                    % (layout.VERSION + 1))
    with pytest.raises(settings.FolderRefused) as e:
        settings.check_folder(out, existing=True)
    assert str(e.value) == (
        '%s is a crawl folder of layout %d, written by a newer mrcrawl; this one reads '
        'layout %d only: nothing was read or written; crawl into a new folder'
        % (out, layout.VERSION + 1, layout.VERSION))
    (tmp_path / 'crawl' / layout.MARKER).write_text('A crawl folder, before the line.\n')
    assert settings.layout_of(fs, out) == 1
