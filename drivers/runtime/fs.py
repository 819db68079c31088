"""The driver's bookkeeping on the crawl's folders: local paths or hdfs:// URIs.

Jobs read and write these folders through mrjob; the driver checks, renames and writes
small files, and streams a few bigger ones (the Parquet index, drivers/later/index.py, and
the HTML report read them in bounded memory). Local folders use os/shutil; HDFS goes
through WebHDFS (the ``hdfs`` package), never a JVM per call.
"""
import contextlib
import os
import shutil
import uuid

from drivers.runtime.hdfs import WebHDFS
from jobs.lib import BUFFER_BYTES


class LocalFS:
    """Plain local folders."""

    def join(self, *parts):
        return os.path.join(*parts)

    def exists(self, path):
        return os.path.exists(path)

    def mkdirs(self, path):
        os.makedirs(path, exist_ok=True)

    def rm(self, path):
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)

    def rename(self, src, dst):
        os.rename(src, dst)

    def write_text(self, path, text):
        """Atomically replace *path* with *text*."""
        d = os.path.dirname(path) or '.'
        # A new file under a unique name, made by open() as every other file of the
        # crawl is (mode 0666 less the umask; mkstemp's would be 0600).
        tmp = os.path.join(d, '.tmp-' + uuid.uuid4().hex)
        with open(tmp, 'x', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, path)

    def read_text(self, path):
        with open(path, encoding='utf-8') as f:
            return f.read()

    def listdir(self, path):
        return sorted(os.listdir(path)) if os.path.isdir(path) else []

    def size(self, path):
        """Bytes under *path* (a file or a folder, recursively); 0 if it is missing."""
        if os.path.isfile(path):
            return os.path.getsize(path)
        return sum(os.path.getsize(os.path.join(d, f))
                   for d, _, files in os.walk(path) for f in files)

    def check_writable(self, path):
        """Raise OSError with a plain message if *path* cannot hold the crawl."""
        self.mkdirs(path)
        probe = os.path.join(path, '.mrcrawl-write-test')
        with open(probe, 'w') as f:
            f.write('ok')
        os.remove(probe)

    def local_path(self, path):
        return path

    def iter_lines(self, path):
        """The lines of *path* as bytes, streamed."""
        with open(path, 'rb', buffering=BUFFER_BYTES) as f:
            yield from f

    @contextlib.contextmanager
    def open_write_binary(self, path, buffering=-1):
        """A binary file that becomes *path* (a writer may close it early); *buffering*
        as :func:`open`'s (BUFFER_BYTES for a stream of lines)."""
        with open(path, 'wb', buffering=buffering) as f:
            yield f

    def open_read_binary(self, path):
        """A seekable binary file over *path* (Parquet readers seek to the footer)."""
        return open(path, 'rb')


def for_path(path):
    """The filesystem for *path*: HDFS for hdfs:// URIs, else local."""
    if path.startswith('hdfs://'):
        return WebHDFS.from_uri(path)
    return LocalFS()
