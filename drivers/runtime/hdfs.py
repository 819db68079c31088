"""The driver's bookkeeping on HDFS through WebHDFS (the ``hdfs`` package).

Only the driver uses this: does a folder exist, rename a finished step's output into
place, write and read report/state files, and stream the Parquet index in and out
(drivers/later/index.py, drivers/reports/html.py). Each call is one HTTP request to the
NameNode (and a redirect to a DataNode for file bodies), never a JVM.

The NameNode's HTTP address comes from ``MRCRAWL_WEBHDFS_URL``, else from the Hadoop
configuration folder (``dfs.namenode.http-address``, else fs.defaultFS's host on port
9870: drivers/runtime/hadoop_locate.py), else ``http://127.0.0.1:9870``; the user from
``HADOOP_USER_NAME`` (default: $USER).
"""
import contextlib
import fnmatch
import getpass
import io
import os
import posixpath
import tempfile
import uuid
from urllib.parse import urlparse

from hdfs import InsecureClient
from hdfs.util import HdfsError
from mrjob.fs.base import Filesystem

from drivers.runtime import hadoop_locate


def webhdfs_address():
    """(NameNode HTTP URL, HDFS user) from the environment, as the driver uses them."""
    env = os.environ
    url = env.get('MRCRAWL_WEBHDFS_URL') or \
        hadoop_locate.webhdfs_url(env, hadoop_locate.conf_dir_of(env))
    return url, env.get('HADOOP_USER_NAME') or getpass.getuser()


class WebHDFS:
    def __init__(self, url, user, prefix):
        self.client = InsecureClient(url, user=user)
        self.prefix = prefix       # 'hdfs://host:port' as given, kept on paths we return

    @classmethod
    def from_uri(cls, uri):
        parsed = urlparse(uri)
        url, user = webhdfs_address()
        return cls(url, user, '%s://%s' % (parsed.scheme, parsed.netloc))

    def _p(self, path):
        """hdfs://host/x/y or /x/y -> /x/y"""
        if path.startswith('hdfs://'):
            path = urlparse(path).path
        return path or '/'

    def join(self, *parts):
        return posixpath.join(*parts)

    def exists(self, path):
        return self.client.status(self._p(path), strict=False) is not None

    def mkdirs(self, path):
        self.client.makedirs(self._p(path))

    def rm(self, path):
        self.client.delete(self._p(path), recursive=True)

    def rename(self, src, dst):
        self.client.rename(self._p(src), self._p(dst))

    def write_text(self, path, text):
        """Write to a temporary name, then rename over *path* (WebHDFS rename won't replace)."""
        p = self._p(path)
        tmp = posixpath.join(posixpath.dirname(p), '.tmp-' + uuid.uuid4().hex)
        self.client.write(tmp, data=text.encode('utf-8'), overwrite=True)
        self.client.delete(p)
        self.client.rename(tmp, p)

    def read_bytes(self, path):
        try:
            with self.client.read(self._p(path)) as reader:
                return reader.read()
        except HdfsError as e:
            raise OSError(str(e))

    def read_text(self, path):
        return self.read_bytes(path).decode('utf-8')

    def size(self, path):
        try:
            return self.client.content(self._p(path))['length']
        except HdfsError:
            return 0

    def listdir(self, path):
        try:
            return sorted(self.client.list(self._p(path)))
        except HdfsError:
            return []

    def check_writable(self, path):
        try:
            self.mkdirs(path)
            probe = posixpath.join(self._p(path), '.mrcrawl-write-test')
            self.client.write(probe, data=b'ok', overwrite=True)
            self.client.delete(probe)
        except HdfsError as e:
            raise OSError(str(e))
        except Exception as e:  # connection refused etc.: say where we tried
            raise OSError('WebHDFS at %s: %s' % (self.client.url, e))

    def local_path(self, path):
        return path

    def iter_lines(self, path):
        """The lines of *path* as bytes, streamed in 1 MiB chunks."""
        pending = b''
        try:
            with self.client.read(self._p(path), chunk_size=1 << 20) as chunks:
                for chunk in chunks:
                    lines = (pending + chunk).split(b'\n')
                    pending = lines.pop()
                    for line in lines:
                        yield line + b'\n'
        except HdfsError as e:
            raise OSError(str(e))
        if pending:
            yield pending

    @contextlib.contextmanager
    def open_write_binary(self, path, buffering=-1):
        """A local temporary file, uploaded to *path* when the block ends.

        A spooled upload rather than a stream into WebHDFS's chunked PUT: a Parquet
        writer closes its sink itself, and the upload is then one plain request.
        """
        fd, tmp = tempfile.mkstemp(prefix='mrcrawl-upload-')
        try:
            with os.fdopen(fd, 'wb', buffering=buffering) as f:
                yield f
            with open(tmp, 'rb') as f:
                self.client.write(self._p(path), data=f, overwrite=True)
        finally:
            os.remove(tmp)

    def open_read_binary(self, path):
        """A seekable file over *path*: each read is a ranged WebHDFS OPEN (offset,
        length), so a Parquet reader fetches only the footer and the columns it needs."""
        p = self._p(path)
        status = self.client.status(p, strict=False)
        if status is None:
            raise OSError('no such file on HDFS: %s' % p)
        return io.BufferedReader(RangeReader(self.client, p, status['length']),
                                 buffer_size=1 << 20)


class RangeReader(io.RawIOBase):
    """A read-only, seekable raw file over ranged reads of an ``hdfs`` client."""

    def __init__(self, client, path, size):
        self.client, self.path, self.size, self.pos = client, path, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buf):
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        try:
            with self.client.read(self.path, offset=self.pos, length=n) as r:
                data = r.read()
        except HdfsError as e:
            raise OSError(str(e))
        buf[:len(data)] = data
        self.pos += len(data)
        return len(data)


class MrjobWebHDFS(Filesystem):
    """mrjob's Filesystem interface (``ls``, ``exists``, ``mkdir``, ``put``, ``rm``, ...)
    for ``hdfs://`` URIs over WebHDFS, for the hadoop runner (drivers/runtime/hadoop.py).

    mrjob's own HadoopFilesystem starts a ``hadoop fs`` JVM for each call (a second or
    more each); a job's uploads, input checks and clean-up made several. Globs in
    ``ls``/``exists``/``du`` are matched with fnmatch below their first wildcard-free
    folder, as ``hadoop fs`` does for the patterns mrjob uses."""

    def __init__(self):
        self._fs = None

    @property
    def fs(self):
        if self._fs is None:
            url, user = webhdfs_address()
            self._fs = WebHDFS(url, user, 'hdfs://')
        return self._fs

    @staticmethod
    def can_handle_path(path):
        return path.startswith('hdfs://')

    @staticmethod
    def _split(uri):
        """'hdfs://host:port/a/b' -> ('hdfs://host:port', '/a/b'). Not urlparse: a glob's
        '?' would be taken for a query."""
        scheme, _, rest = uri.partition('://')
        netloc, slash, path = rest.partition('/')
        return '%s://%s' % (scheme, netloc), slash + path or '/'

    def _statuses(self, uri):
        """(uri, FileStatus) of every file and folder that *uri* (maybe a glob) names."""
        prefix, path = self._split(uri)
        if not any(c in path for c in '*?['):
            st = self.fs.client.status(path, strict=False)
            return [(prefix + path, st)] if st is not None else []
        parts = path.split('/')
        fixed = next(i for i, p in enumerate(parts) if any(c in p for c in '*?['))
        base = '/'.join(parts[:fixed]) or '/'
        depth = len(parts) - fixed
        found = []
        try:
            for root, dirs, files in self.fs.client.walk(base, depth=depth, status=True):
                for name, st in dirs + files:
                    full = posixpath.join(root[0], name)
                    if fnmatch.fnmatchcase(full, path):
                        found.append((prefix + full, st))
        except HdfsError:
            return []
        return found

    def ls(self, path_glob):
        for uri, st in self._statuses(path_glob):
            if st['type'] == 'FILE':
                yield uri
                continue
            prefix, path = self._split(uri)
            for root, _, files in self.fs.client.walk(path):
                for name in files:
                    yield prefix + posixpath.join(root, name)

    def exists(self, path_glob):
        return bool(self._statuses(path_glob))

    def du(self, path_glob):
        total = 0
        for uri, st in self._statuses(path_glob):
            total += st['length'] if st['type'] == 'FILE' else \
                self.fs.client.content(self._split(uri)[1])['length']
        return total

    def _cat_file(self, path):
        with self.fs.client.read(self._split(path)[1], chunk_size=1 << 20) as chunks:
            for chunk in chunks:
                yield chunk

    def mkdir(self, path):
        self.fs.client.makedirs(self._split(path)[1])

    def put(self, src, path):
        self.fs.client.upload(self._split(path)[1], src, overwrite=False)

    def get(self, path, dest):
        """Download the file *path* to the local file *dest* (not in mrjob's interface)."""
        self.fs.client.download(self._split(path)[1], dest)

    def rename(self, src, dst):
        self.fs.client.rename(self._split(src)[1], self._split(dst)[1])

    def rm(self, path_glob):
        for uri, _ in self._statuses(path_glob):
            self.fs.client.delete(self._split(uri)[1], recursive=True)

    def touchz(self, path):
        p = self._split(path)[1]
        st = self.fs.client.status(p, strict=False)
        if st is not None and st['length']:
            raise OSError('non-empty file %r already exists' % (path,))
        self.fs.client.write(p, data=b'', overwrite=True)

    def join(self, path, *paths):
        prefix, p = self._split(path)
        return prefix + posixpath.join(p, *paths)
