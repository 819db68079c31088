"""A task's finished files: committed whole where the job's readers find them, and read
back a byte range at a time.

A task writes each of its side files (jobs.lib.sidefile, the WARC files of jobs.lib.
warcfile) to a local temporary file and commits it once complete, under a name of its
own, so a retried attempt replaces its predecessor's file instead of adding one. Readers
(MRMergeJoin, `mrcrawl reparse`) take one record at a time by offset and length.

Pure helper; nothing here imports mrjob, and it imports no other module of jobs.lib.
"""
import os
import uuid
from urllib.parse import urlparse


def commit_local(tmp_path, folder, name):
    """Move the finished *tmp_path* to *folder*/*name*, replacing a previous attempt's."""
    os.makedirs(folder, exist_ok=True)
    os.replace(tmp_path, os.path.join(folder, name))


def commit_hdfs(tmp_path, folder, name, webhdfs_url, user):
    """Upload *tmp_path* to the HDFS *folder*/*name* through WebHDFS: to a temporary
    name, then delete + rename (WebHDFS rename does not replace), so a retried task
    attempt replaces its predecessor's file rather than adding one."""
    from hdfs import InsecureClient     # lazy: only a Hadoop crawl's tasks talk to HDFS
    path = urlparse(folder).path if folder.startswith('hdfs://') else folder
    client = InsecureClient(webhdfs_url, user=user or None)
    client.makedirs(path)
    final = '%s/%s' % (path.rstrip('/'), name)
    tmp = '%s/.tmp-%s-%s' % (path.rstrip('/'), name, uuid.uuid4().hex[:8])
    with open(tmp_path, 'rb') as f:
        client.write(tmp, data=f, overwrite=True)
    client.delete(final)
    client.rename(tmp, final)
    os.remove(tmp_path)


def read_range(root, name, offset, length, webhdfs_url=None, user=None):
    """*length* bytes at *offset* of the file *name* (relative to *root*, a local folder
    or an hdfs:// URI read through WebHDFS): one record of a side file or a WARC file,
    without reading the rest."""
    if root.startswith('hdfs://'):
        from hdfs import InsecureClient     # lazy: only a Hadoop crawl reads from HDFS
        client = InsecureClient(webhdfs_url, user=user or None)
        with client.read('%s/%s' % (urlparse(root).path.rstrip('/'), name), offset=offset,
                         length=length) as r:
            return r.read()
    with open(os.path.join(root, name), 'rb') as f:
        f.seek(offset)
        return f.read(length)
