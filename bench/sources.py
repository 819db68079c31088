"""Which mrcrawl code a benchmark runs: the work tree, or a read-only export of a commit
(bench/run.py, bench/same_outputs.py). Standard library only."""
import os
import subprocess

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
WORK = os.path.join(BENCH, 'work')


def mrcrawl_source(src):
    """(PYTHONPATH, description) of the mrcrawl code to run: the work tree as it is, or a
    read-only export of a commit (other engineers edit the work tree while this runs)."""
    if src == 'worktree':
        state = subprocess.run(['git', '-C', ROOT, 'describe', '--always', '--dirty'],
                               capture_output=True, text=True).stdout.strip()
        return None, 'worktree ' + state
    rev = subprocess.run(['git', '-C', ROOT, 'rev-parse', src], capture_output=True,
                         text=True, check=True).stdout.strip()
    dest = os.path.join(WORK, 'src-' + rev[:12])
    if not os.path.isdir(dest):
        os.makedirs(dest + '.tmp', exist_ok=True)
        subprocess.run('git -C %s archive %s | tar -x -C %s' % (ROOT, rev, dest + '.tmp'),
                       shell=True, check=True)
        os.rename(dest + '.tmp', dest)
    return dest, 'commit ' + rev
