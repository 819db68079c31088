"""mrcrawl as a wheel: built, installed (not editable) into a fresh virtual environment,
and run from outside the source tree. conf/ reaches it as package data (setup.cfg,
jobs/lib/conf), so the defaults, the XML schema and the shipped site configs are found
without the checkout."""
import glob
import os
import subprocess
import sys
import zipfile

from tests.conftest import ROOT


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
