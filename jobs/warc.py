"""MRWarc: one layer's fetched pages as WARC/1.1 files (map only).

Reads the fetch step's output: ``doc`` records (doc/NNN), or ``page`` records that still
carry ``body``/``raw_body`` (a fetch that parses in the same job). For each record
jobs.lib.warcfile.plan archives, writes a request + response pair, or a request +
revisit (a 304, or the same payload digest as the previous fetch in a re-crawl); see
jobs/lib/warcfile.py for what is stored and how it differs from Heritrix's bytes from
the wire. Failed fetches (network errors, robots, filtered, deferred, cross-key
redirects) have no response to archive: no record, counted ``skipped_<status>_total``.

**Files.** A WARC file cannot be a streaming job's output (stdout is lines), so each
map task writes one file as a side effect, named after its input split::

    --warc-dir/PREFIX-<input file name>-<split start byte>.warc.gz

from ``mapreduce_map_input_file`` and ``mapreduce_map_input_start``, which Hadoop
Streaming and mrjob's inline and local runners set for every map task. The file is
written under a temporary name and renamed over the final one when the task ends, so a
retried attempt replaces its predecessor's file instead of adding one; record ids and
dates are derived from the records, so attempts write identical bytes. Speculative map
attempts are switched off for this job. A split with nothing to archive writes no file.
Each record is its own gzip member (warcio's ``gzip=True``), so any record can be read
by offset and length. With an ``hdfs://`` ``--warc-dir`` the file is written locally
in the task's working folder and uploaded through WebHDFS (``--webhdfs-url``,
``--hdfs-user``) when the task ends.

**Output** (warc_index/NNN): one ``warc_index`` line per archived URL: url, layer,
warc_filename (relative to the crawl folder: ``warc/NAME``), warc_record_offset and
warc_record_length (of its response or revisit record), warc_type. MRIndexRows joins
them into the Parquet index.

Run alone::

    python -m jobs.warc --crawl-conf crawl/conf.json --layer 0 --warc-dir crawl/warc \\
        --warc-prefix mrcrawl-L000 crawl/doc/000 -o /tmp/warc_index
"""
import os
import tempfile

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R, warcfile

SOFTWARE = 'mrcrawl/0.1 (warcio)'


class MRWarc(CrawlJob):
    COUNTER_GROUP = C.WARC
    # Two attempts of one split at once would race on the same file name.
    JOBCONF = {'mapreduce.map.speculative': 'false'}

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--warc-dir', help='Folder of the WARC files (local path or '
                              'hdfs:// URI), the crawl\'s warc/.')
        self.add_passthru_arg('--warc-prefix', default='mrcrawl',
                              help='File name prefix, e.g. mrcrawl-L000 (layer 0) or '
                              'mrcrawl-R001 (re-crawl round 1).')
        self.add_passthru_arg('--warc-name-base', default='warc',
                              help='warc_filename in the output = this + "/" + file name.')
        self.add_passthru_arg('--webhdfs-url', default='http://127.0.0.1:9870',
                              help='NameNode HTTP address, for an hdfs:// --warc-dir.')
        self.add_passthru_arg('--hdfs-user', default='', help='HDFS user for WebHDFS.')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_file, mapper=self.mapper_write,
                       mapper_final=self.mapper_final_commit)]

    def mapper_init_file(self):
        """Name this split's file; it is opened at the first record worth archiving."""
        env = os.environ
        input_file = env.get('mapreduce_map_input_file') or env.get('map_input_file')
        if not input_file or not self.options.warc_dir:
            raise RuntimeError('MRWarc needs --warc-dir and the map task\'s input split '
                               '(mapreduce_map_input_file is not set)')
        start = env.get('mapreduce_map_input_start') or env.get('map_input_start') or 0
        self.name = warcfile.file_name(self.options.warc_prefix, input_file, start)
        self.remote = self.options.warc_dir.startswith('hdfs://')
        self.user_agent = self.conf['politeness']['user_agent']
        self.warc = None
        self.tmp_path = None

    def _open(self):
        folder = self.options.warc_dir
        if self.remote:
            fd, self.tmp_path = tempfile.mkstemp(prefix='warc-', suffix='.warc.gz', dir='.')
            os.close(fd)
        else:
            os.makedirs(folder, exist_ok=True)
            self.tmp_path = os.path.join(folder, '.tmp-' + self.name)
        conf = self.conf
        info = {'software': SOFTWARE, 'format': 'WARC File Format 1.1',
                'conformsTo': 'https://iipc.github.io/warc-specifications/specifications/'
                              'warc-format/warc-1.1/',
                'isPartOf': self.options.warc_prefix,
                'robots': 'obey' if conf['politeness']['obey_robots'] else 'ignore',
                'http-header-user-agent': self.user_agent}
        self.warc = warcfile.WarcFile(self.tmp_path, self.name, self.options.warc_prefix,
                                      info)

    def mapper_write(self, _, line):
        """doc (or page with body) line -> WARC records; a warc_index line per URL."""
        for doc in self.records(line, 'doc', 'page'):
            kind = warcfile.plan(doc)
            if kind is None:
                self.count('skipped_%s_total' % (doc.get('status') or 'unknown'))
                continue
            if doc.get('kind') == 'page' and doc.get('status') == R.FETCH_FETCHED and \
                    doc.get('body') is None and doc.get('raw_body') is None and \
                    doc.get('warc_body') is None and doc.get('length'):
                # A parsed page whose body was dropped: nothing to archive but headers.
                self.count('skipped_no_body_total')
                continue
            if self.warc is None:
                self._open()
            done = self.warc.add(doc, self.user_agent, kind)
            for rtype, n in done['types'].items():
                self.count('records_%s_total' % rtype, n)
            if done['rebuilt']:
                self.count(C.WARC_HEADERS_REBUILT)
            if not done['verbatim']:
                self.count(C.WARC_PAYLOAD_NOT_VERBATIM)
            if done['truncated']:
                self.count('truncated_%s_total' % done['truncated'])
            self.count('%s_total' % done['kind'])
            yield None, {'kind': 'warc_index', 'url': doc['url'],
                         'layer': doc.get('layer', self.options.layer),
                         'warc_filename': '%s/%s' % (self.options.warc_name_base, self.name),
                         'warc_record_offset': done['offset'],
                         'warc_record_length': done['length'],
                         'warc_type': 'response' if done['kind'] == warcfile.RESPONSE
                         else 'revisit'}

    def mapper_final_commit(self):
        """Close the file and move it into place (replacing an earlier attempt's)."""
        if self.warc is None:
            return
        size = self.warc.close()
        if self.remote:
            warcfile.commit_hdfs(self.tmp_path, self.options.warc_dir, self.name,
                                 self.options.webhdfs_url, self.options.hdfs_user)
        else:
            warcfile.commit_local(self.tmp_path, self.options.warc_dir, self.name)
        self.count(C.WARC_FILES)
        self.count(C.WARC_BYTES, size)


if __name__ == '__main__':
    MRWarc.run()
