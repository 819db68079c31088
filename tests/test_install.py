"""mrcrawl as a wheel: built, installed (not editable) into a fresh virtual environment,
and run from outside the source tree. conf/ reaches it as package data (setup.cfg,
jobs/lib/conf), so the defaults, the XML schema and the shipped site configs are found
without the checkout."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from tests.helpers import ROOT

# Each test installs the wheel into a new environment: as slow as a crawl.
pytestmark = pytest.mark.crawl


def run(*cmd, **kw):
    res = subprocess.run(list(cmd), capture_output=True, text=True, timeout=600, **kw)
    assert res.returncode == 0, (cmd, res.stdout[-2000:], res.stderr[-2000:])
    return res


def test_the_wheel_runs_the_demo_outside_the_source_tree(tmp_path):
    run(sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation',
        '--quiet', '-w', str(tmp_path / 'wheels'), ROOT, cwd=str(tmp_path))
    (wheel,) = glob.glob(str(tmp_path / 'wheels' / 'mrcrawl-*.whl'))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {'jobs/lib/conf/defaults.toml', 'jobs/lib/conf/page.xsd'} <= names
    assert any(n.startswith('jobs/lib/conf/sites/') for n in names)
    # A fresh venv: mrcrawl from the wheel only; its dependencies from this test's
    # environment, added by a .pth line (whose own .pth files, the editable install of
    # the checkout among them, are not read).
    venv = tmp_path / 'venv'
    run(sys.executable, '-m', 'venv', str(venv))
    site = run(str(venv / 'bin' / 'python'), '-c',
               'import sysconfig; print(sysconfig.get_paths()["purelib"])').stdout.strip()
    deps = [p for p in sys.path if p.endswith('site-packages')]
    with open(os.path.join(site, 'deps.pth'), 'w') as f:
        f.write('\n'.join(deps) + '\n')
    run(str(venv / 'bin' / 'python'), '-m', 'pip', 'install', '--no-deps', '--quiet', wheel)
    away = tmp_path / 'elsewhere'
    away.mkdir()
    where = run(str(venv / 'bin' / 'python'), '-c', 'import jobs, drivers; '
                'print(jobs.__file__); print(drivers.__file__)', cwd=str(away)).stdout
    assert ROOT not in where and where.count(site) == 2, where
    res = run(str(venv / 'bin' / 'mrcrawl'), 'demo', '--depth', '1', '--out', 'demo',
              '-r', 'inline', cwd=str(away))
    xml = glob.glob(str(away / 'demo' / 'xml' / 'part-*'))
    assert xml and sum(1 for p in xml for _ in open(p)) > 3, res.stdout


#: Distributions of the test environment the wheelhouse leaves out: the installers
#: (the fresh environment has its own) and mrcrawl itself (built from the checkout).
NOT_IN_WHEELHOUSE = {'pip', 'setuptools', 'wheel', 'mrcrawl'}


def repack(dist, folder):
    """An installed distribution *dist* (importlib.metadata) as a wheel in *folder*: the
    files its RECORD lists under site-packages (scripts outside it are left out: pip
    writes entry points anew), tagged as its WHEEL file says. A wheelhouse made of the
    test environment itself, so that a fresh install needs no network."""
    import base64
    import hashlib
    info = dist._path                       # the .dist-info folder
    site = os.path.dirname(str(info))
    tags = [line.split(':', 1)[1].strip() for line in
            (info / 'WHEEL').read_text().splitlines() if line.startswith('Tag:')]
    parts = [sorted({t.split('-')[i] for t in tags}) for i in range(3)]
    name = '%s-%s.whl' % (info.name[:-len('.dist-info')], '-'.join('.'.join(p) for p in parts))
    record, skip = [], {'RECORD', 'INSTALLER', 'REQUESTED', 'direct_url.json'}
    path = os.path.join(folder, name)
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_STORED) as z:
        for rel in sorted({row.split(',', 1)[0] for row in (info / 'RECORD').read_text()
                           .splitlines() if row}):
            full = os.path.normpath(os.path.join(site, rel))
            if (rel.startswith('..') or '__pycache__' in rel or os.path.basename(rel) in skip
                    or not os.path.isfile(full)):
                continue
            data = open(full, 'rb').read()
            z.writestr(rel, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=')
            record.append('%s,sha256=%s,%d' % (rel, digest.decode(), len(data)))
        record.append('%s/RECORD,,' % info.name)
        z.writestr('%s/RECORD' % info.name, '\n'.join(record) + '\n')
    return path


@pytest.fixture(scope='session')
def wheelhouse(tmp_path_factory):
    """mrcrawl's wheel and every other distribution of this environment as wheels."""
    from importlib import metadata
    folder = str(tmp_path_factory.mktemp('wheelhouse'))
    run(sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation',
        '--quiet', '-w', folder, ROOT, cwd=folder)
    for dist in metadata.distributions():
        if dist.metadata['Name'].lower() not in NOT_IN_WHEELHOUSE and \
                str(dist._path).endswith('.dist-info'):
            repack(dist, folder)
    return folder


PYTHON311 = shutil.which('python3.11')


@pytest.mark.skipif(PYTHON311 is None, reason='needs the python3.11 command')
def test_a_wheel_installed_by_python_3_11s_own_pip_has_every_dependency(wheelhouse,
                                                                       tmp_path):
    """The wheel installed into a fresh environment by the pip that Python 3.11 ships
    (23.2, not upgraded), from a wheelhouse holding far more than mrcrawl needs: what
    lands is what setup.cfg asks for, as pip 23.2 reads it. That pip does not match
    jusText's lxml[html_clean] with lxml's html-clean extra, so before lxml_html_clean
    was named, trafilatura could not load and every page had an empty main text.
    Every module of jobs/ and drivers/ imports there, and trafilatura and the language
    model run."""
    venv = tmp_path / 'venv'
    run(PYTHON311, '-m', 'venv', str(venv))
    python = str(venv / 'bin' / 'python')
    version = run(python, '-m', 'pip', '--version').stdout
    assert version.startswith('pip 23.2'), version
    (wheel,) = glob.glob(os.path.join(wheelhouse, 'mrcrawl-*.whl'))
    run(python, '-m', 'pip', 'install', '--quiet', '--no-index', '--no-compile',
        '--find-links', wheelhouse, wheel, cwd=str(tmp_path))
    run(python, '-m', 'pip', 'check')
    check = textwrap.dedent('''
        import importlib, pkgutil, sys
        import jobs, drivers
        assert all('/venv/' in m.__file__ for m in (jobs, drivers)), jobs.__file__
        names = [m.name for p in (jobs, drivers)
                 for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')]
        for name in names:
            importlib.import_module(name)
        from jobs.lib import maintext
        page = ('<html><body><nav><a href="/">Home</a></nav><article><h1>Rivers</h1>'
                + '<p>The river runs through the valley and feeds the old mill. ' * 8
                + '</p></article><footer>Contact</footer></body></html>')
        text = maintext.main_text(page, 'http://example.test/', 'trafilatura')
        print(len(names), maintext.language(text), repr(text[:40]))
        assert 'The river runs through the valley' in text, text
    ''')
    res = run(python, '-c', check, cwd=str(tmp_path))
    count, lang, _ = res.stdout.split(' ', 2)
    assert int(count) > 40 and lang == 'en', res.stdout
    installed = run(python, '-m', 'pip', 'list', '--format=freeze').stdout.lower()
    assert 'pytest' not in installed          # only what mrcrawl asks for was installed
