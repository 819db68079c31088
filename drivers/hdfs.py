"""The driver's bookkeeping on HDFS through WebHDFS (the ``hdfs`` package).

Only the driver uses this, for small things: does a folder exist, rename a finished
step's output into place, write and read report/state files. Each call is one HTTP
request to the NameNode (and a redirect to a DataNode for file bodies), never a JVM.

The NameNode's HTTP address comes from ``MRCRAWL_WEBHDFS_URL`` (default
``http://127.0.0.1:9870``) and the user from ``HADOOP_USER_NAME`` (default: $USER).
"""
import getpass
import os
import posixpath
import uuid
from urllib.parse import urlparse

from hdfs import InsecureClient
from hdfs.util import HdfsError


class WebHDFS:
    def __init__(self, url, user, prefix):
        self.client = InsecureClient(url, user=user)
        self.prefix = prefix       # 'hdfs://host:port' as given, kept on paths we return

    @classmethod
    def from_uri(cls, uri):
        parsed = urlparse(uri)
        url = os.environ.get('MRCRAWL_WEBHDFS_URL', 'http://127.0.0.1:9870')
        user = os.environ.get('HADOOP_USER_NAME') or getpass.getuser()
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

    def read_text(self, path):
        try:
            with self.client.read(self._p(path)) as reader:
                return reader.read().decode('utf-8')
        except HdfsError as e:
            raise OSError(str(e))

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
