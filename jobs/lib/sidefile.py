"""A task's side output: records a task writes beside its job's output, as one file
per task, without a job or a shuffle of their own (Hadoop streaming has one
output per job). The fetch writes its pages' metadata this way (meta/NNN, see
jobs/fetch.py); the WARC files (jobs/lib/warcfile.py) and the media store are
its other sinks, committed the same way (jobs/lib/taskfiles.py).

Pure helper; nothing here imports mrjob.
"""
import os
import tempfile

import orjson

from jobs.lib import BUFFER_BYTES, media, merging, records, warcfile
from jobs.lib.taskfiles import commit_hdfs, commit_local

#: Page record fields a ``meta`` record leaves out: the text, most of a record's bytes,
#: which the crawl database update never reads (Nutch splits a segment's parse_text from
#: its parse_data the same way).
TEXT_FIELDS = frozenset(('text', 'main_text', 'headings', 'description'))


def meta(page):
    """The ``meta`` line of a page record: the record without TEXT_FIELDS."""
    return {k: v for k, v in page.items() if k not in TEXT_FIELDS}


class LineSink:
    """JSON lines into *folder*/*name* (a local path, or an hdfs:// folder written
    through WebHDFS): written under a temporary name, moved into place by
    :meth:`commit`, so a retried task attempt's file replaces its predecessor's and a
    failed attempt leaves no partial file under the final name."""

    def __init__(self, folder, name, webhdfs_url=None, user=None):
        self.folder, self.name = folder, name
        self.webhdfs_url, self.user = webhdfs_url, user
        self.remote = folder.startswith('hdfs://')
        if self.remote:
            fd, self.tmp_path = tempfile.mkstemp(prefix='side-', suffix='.jsonl', dir='.')
            os.close(fd)
        else:
            os.makedirs(folder, exist_ok=True)
            self.tmp_path = os.path.join(folder, '.tmp-' + name)
        self.file = open(self.tmp_path, 'wb', buffering=BUFFER_BYTES)
        self.lines = 0
        self.size = 0

    def add(self, rec):
        return self.add_line(orjson.dumps(rec))

    def add_line(self, line):
        """One line of bytes, without its line break: (its offset in the file, its
        length with the line break), which jobs.lib.taskfiles.read_range reads it back by."""
        at = self.size
        self.file.write(line + b'\n')
        self.lines += 1
        self.size += len(line) + 1
        return at, len(line) + 1

    def commit(self):
        """Close the file and move it into place: (lines, bytes)."""
        self.file.close()
        size = os.path.getsize(self.tmp_path)
        if self.remote:
            commit_hdfs(self.tmp_path, self.folder, self.name, self.webhdfs_url, self.user)
        else:
            commit_local(self.tmp_path, self.folder, self.name)
        return self.lines, size


class MetaSink:
    """A fetch task's ``meta`` records (meta/NNN: :func:`meta` of each page) and, with
    *changes* (a folder: changes/NNN), the URLs whose current fetch they may change,
    which a later build's MRCurrent shuffles (drivers/later/affected_current.py): in
    ``part-fNNNNN`` each URL whose fetch settles what it is (jobs.lib.merging
    .definitive), in ``held-fNNNNN`` each other one and each URL fetched by following
    (jobs.lib.follow: its list named it under another politeness key, or an earlier
    layer fetched it), as JSON strings. A 304 over a page is in neither: it never
    replaces the page it names (records.not_modified_over_page)."""

    def __init__(self, folder, changes, name, webhdfs_url=None, user=None):
        self.meta = LineSink(folder, name, webhdfs_url, user)
        self.changes = changes and [
            LineSink(changes, name, webhdfs_url, user),
            LineSink(changes, 'held-' + name.split('-', 1)[1], webhdfs_url, user)]

    def add(self, page):
        line = orjson.dumps(meta(page))
        self.meta.add_line(line)
        if self.changes and not records.not_modified_over_page(line):
            held = bool(page.get('followed')) or not merging.definitive(page)
            self.changes[held].add(page['url'])

    def commit(self):
        """Commit the files: meta's (lines, bytes)."""
        for sink in self.changes or ():
            sink.commit()
        return self.meta.commit()


class TaskFiles:
    """The files one fetch task writes beside its output, each when the driver passed
    its folder (*options*, MRFetch's), else None: ``warc`` (--warc-dir: the raw bodies,
    jobs.lib.warcfile), ``meta`` (--meta-dir, with fetch.parse: a :class:`MetaSink`,
    with --changes-dir its changes too),
    ``robots`` (--robots-dir: robots, pace and task records) and ``media``
    (--media-dir, with media.store: resources' bytes, jobs.lib.media). *count_warc*:
    ``count(name, n)`` for the WARC writer."""

    def __init__(self, options, conf, part, count_warc):
        o, name = options, 'part-f%05d' % part
        self.robots = self.meta = self.warc = self.media = None
        if o.robots_dir:
            self.robots = LineSink(o.robots_dir, name, o.webhdfs_url, o.hdfs_user)
        if o.meta_dir and conf['fetch']['parse']:
            self.meta = MetaSink(o.meta_dir, o.changes_dir, name, o.webhdfs_url, o.hdfs_user)
        if o.warc_dir:
            self.warc = warcfile.Sink(
                o.warc_dir, '%s-f%05d.warc.gz' % (o.warc_prefix, part), o.warc_prefix,
                warcfile.warcinfo(o.warc_prefix, conf['politeness']['user_agent'],
                                  conf['politeness']['obey_robots']),
                count_warc, o.webhdfs_url, o.hdfs_user)
        if o.media_dir and conf['media']['store']:
            self.media = media.Media(conf, o.media_dir, o.webhdfs_url, o.hdfs_user)
