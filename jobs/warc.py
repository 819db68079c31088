"""MRWarc: one layer's fetched pages as WARC/1.1 files (map only).

Reads the fetch step's output: ``doc`` records (doc/NNN), or ``page`` records that still
carry ``body``/``raw_body`` (a fetch that parses in the same job). For each record
jobs.lib.warcfile.plan archives, writes a request + response pair, or a request +
revisit (a 304, or the same payload digest as the previous fetch in a re-crawl), after
the robots.txt and redirect responses (with their requests) its fetch received; see
jobs/lib/warcfile.py for what is stored and how it differs from Heritrix's bytes from
the wire. Failed fetches (network errors, robots, filtered, deferred, cross-key
redirects) have no response to archive: no record of their own (the robots.txt and
redirect answers they carry still are), counted ``skipped_<status>_total``.

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

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R, warcfile


class MRWarc(CrawlJob):
    COUNTER_GROUP = C.WARC
    # Two attempts of one split at once would race on the same file name.
    JOBCONF = {'mapreduce.map.speculative': 'false'}
    # One split per file and block, so that each is named after its input file (not
    # the CombineTextInputFormat drivers/runtime/hadoop.py gives the other jobs).
    HADOOP_INPUT_FORMAT = 'org.apache.hadoop.mapred.TextInputFormat'

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--warc-dir', help='Folder of the WARC files (local path or '
                              'hdfs:// URI), the crawl\'s warc/.')
        self.add_passthru_arg('--warc-prefix', default='mrcrawl',
                              help='File name prefix, e.g. mrcrawl-L000 (layer 0).')
        self.add_passthru_arg('--warc-name-base', default='warc',
                              help='warc_filename in the output = this + "/" + file name.')
        self.add_webhdfs_args('--warc-dir')

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
        o = self.options
        self.user_agent = self.conf['politeness']['user_agent']
        self.sink = warcfile.Sink(
            o.warc_dir, warcfile.file_name(o.warc_prefix, input_file, start), o.warc_prefix,
            warcfile.warcinfo(o.warc_prefix, self.user_agent,
                              self.conf['politeness']['obey_robots']),
            self.count, o.webhdfs_url, o.hdfs_user, o.warc_name_base)

    def mapper_write(self, _, line):
        """doc (or page with body) line -> WARC records; a warc_index line per URL."""
        for doc in self.records(line, 'doc', 'page'):
            if doc.get('kind') == 'page' and doc.get('status') == R.FETCH_FETCHED and \
                    doc.get('body') is None and doc.get('raw_body') is None and \
                    doc.get('warc_body') is None and doc.get('length') and \
                    warcfile.plan(doc) == warcfile.RESPONSE:
                # A parsed page whose body was dropped: nothing to archive but headers.
                self.count(C.WARC_SKIPPED_NO_BODY)
                continue
            pointer = self.sink.add(doc, self.user_agent)
            if pointer is not None:
                yield None, dict(pointer, kind='warc_index', url=doc['url'],
                                 layer=doc.get('layer', self.options.layer))

    def mapper_final_commit(self):
        """Close the file and move it into place (replacing an earlier attempt's)."""
        self.sink.commit()


if __name__ == '__main__':
    MRWarc.run()
