"""The shared base of mrcrawl's jobs (cc-mrjob's mrcc.py idea).

It handles what every job does the same way: the resolved configuration file
(``--conf``), JSON-lines records in and out (orjson), malformed input counted instead
of crashing, and counters under the job's group. A job subclass sets ``COUNTER_GROUP``
and writes its mappers and reducers over dict records.
"""
import os
import time

import orjson
from mrjob.job import MRJob

from jobs.lib import config, counters as C

#: The largest map split on Hadoop, which drivers/runtime/hadoop.py's input format reads.
SPLIT_MAX_BYTES = 'mapreduce.input.fileinputformat.split.maxsize'
#: A step's jobconf with this setting reads each input file whole, as one map task, on
#: every runner (Hadoop's FileInputFormat, drivers/runtime/runners.py and
#: drivers/runtime/hadoop.py): MRFetch's fetch step, whose files are its fetch lists.
SPLIT_MIN_BYTES = 'mapreduce.input.fileinputformat.split.minsize'
WHOLE_FILES = {SPLIT_MIN_BYTES: str(2 ** 63 - 1)}
#: A step's jobconf with this setting has one reduce task per distinct first field of
#: the key (``LABEL REST``) on every runner (Hadoop: KeyFieldBasedPartitioner ``-k1,1``
#: with a label whose hash is the wanted partition, jobs.lib.plan.label_for;
#: drivers/runtime/runners.py: its sorted input cut where the first field changes).
KEY_PARTITIONS = 'mapreduce.partition.keypartitioner.options'


def whole_files(jobconf):
    """Does a step with *jobconf* read each input file whole (WHOLE_FILES)?"""
    return str(jobconf.get(SPLIT_MIN_BYTES)) == WHOLE_FILES[SPLIT_MIN_BYTES]


class JSONLinesValueProtocol:
    """Value-only JSON lines (key ignored): the format of every record folder."""

    @staticmethod
    def read(line):
        return None, orjson.loads(line)

    @staticmethod
    def write(key, value):
        return orjson.dumps(value)


class JSONKeyValueProtocol:
    """``key<TAB>value``, both JSON: the shuffle between mappers and reducers."""

    @staticmethod
    def read(line):
        k, _, v = line.partition(b'\t')
        return orjson.loads(k), orjson.loads(v)

    @staticmethod
    def write(key, value):
        return orjson.dumps(key) + b'\t' + orjson.dumps(value)


class JSONKeyRawValueProtocol:
    """``key<TAB>value``, the key JSON, the value a JSON text passed as bytes: a shuffle
    of whole records that the mapper need not encode again (orjson escapes every tab
    and line break inside a JSON text)."""

    @staticmethod
    def read(line):
        k, _, v = line.partition(b'\t')
        return orjson.loads(k), v

    @staticmethod
    def write(key, value):
        return orjson.dumps(key) + b'\t' + value


class RawLineProtocol:
    """Input lines as bytes; the base job decodes them so bad lines are counted."""

    @staticmethod
    def read(line):
        return None, line

    @staticmethod
    def write(key, value):
        return value


#: Each job class's configured argument parser and its passthrough and file argument
#: names, made by its first instance in this process (CrawlJob.__init__).
_CONFIGURED = {}


class CrawlJob(MRJob):
    """Base job: ``--conf`` file, JSON-lines records, counters in one group."""

    INPUT_PROTOCOL = RawLineProtocol
    INTERNAL_PROTOCOL = JSONKeyValueProtocol
    OUTPUT_PROTOCOL = JSONLinesValueProtocol
    COUNTER_GROUP = 'mrcrawl'
    #: Which steps of a multi-step job a Hadoop crawl runs on YARN even when their input
    #: is small: the ``first`` (the others in the driver if small) or the ``last`` (the
    #: ones before it in the driver if small). drivers/runtime/hadoop.py run_cut.
    YARN_STEPS = 'first'

    def configure_args(self):
        super().configure_args()
        self.add_file_arg('--crawl-conf', help='Resolved configuration (JSON) the driver wrote.')
        self.add_passthru_arg('--layer', type=int, default=0,
                              help='Crawl layer this run belongs to. Default: %(default)s')
        self.add_passthru_arg('--step-range', default='',
                              help='Run only steps FIRST:END of this job (a Python slice, '
                              'e.g. 0:1 or 1:); where the range cuts the job, input or '
                              'output are the shuffle\'s key<TAB>value lines. A Hadoop '
                              'crawl cuts a job whose first step hands on little '
                              '(drivers/runtime/hadoop.py run_cut). Default: every step.')
        self.add_passthru_arg('--reducers', type=int, default=0,
                              help='Hadoop: reduce tasks of the steps whose reducers see '
                              'every page or URL (the driver sizes them for a job too '
                              'big for uber mode: StepRunner.reduce_args). Default: 0 '
                              '(Hadoop\'s).')

    def wide_reduce(self):
        """The jobconf of a step whose reducers see every page or URL of the crawl:
        --reducers reduce tasks, not Hadoop's default of one. (A map-only step must not
        get it: Hadoop would add an identity reduce.)"""
        return {'mapreduce.job.reduces': self.options.reducers} if self.options.reducers \
            else {}

    def add_webhdfs_args(self, what):
        """--webhdfs-url and --hdfs-user: how a task reads or writes *what* (a folder of
        the crawl's) when it is an hdfs:// URI (the driver passes them: Crawl.task_path_args)."""
        self.add_passthru_arg('--webhdfs-url', default='http://127.0.0.1:9870',
                              help='NameNode HTTP address, for an hdfs:// %s.' % what)
        self.add_passthru_arg('--hdfs-user', default='', help='HDFS user for WebHDFS.')

    def side_sink(self, folder, prefix='part-'):
        """This task's side file in *folder* (jobs.lib.sidefile.LineSink): one per task,
        named by *prefix* and its partition (a map task's prefix apart from the reduce
        tasks'), committed by the task at its end."""
        # lazy: sidefile brings warcfile and requests (40 ms of every task's start), which
        # only the jobs that write side files need
        from jobs.lib import sidefile
        part = int(os.environ.get('mapreduce_task_partition') or 0)
        return sidefile.LineSink(folder, '%s%05d' % (prefix, part), self.options.webhdfs_url,
                                 self.options.hdfs_user)

    # -- a range of the steps (--step-range) ------------------------------------------
    # mrjob reads a job's steps through exactly these two methods (mrjob/job.py).

    def _step_range(self):
        first, colon, end = self.options.step_range.partition(':')
        try:
            first, end = int(first or 0), int(end) if end else len(self.steps())
        except ValueError:
            first = end = -1
        if not colon or not 0 <= first < end <= len(self.steps()):
            raise ValueError('--step-range %r: want FIRST:END with 0 <= FIRST < END <= %d' % (
                self.options.step_range, len(self.steps())))
        return first, end

    def _ranged_steps(self):
        steps = self.steps()
        if not self.options.step_range:
            return steps
        first, end = self._step_range()
        return steps[first:end]

    def _get_step(self, step_num, expected_type):
        steps = self._ranged_steps()
        if not 0 <= step_num < len(steps):
            raise ValueError('Out-of-range step: %d' % step_num)
        if not isinstance(steps[step_num], expected_type):
            raise TypeError('Step %d is not a %s' % (step_num, expected_type.__name__))
        return steps[step_num]

    def _steps_desc(self):
        return [step.description(n) for n, step in enumerate(self._ranged_steps())]

    def input_protocol(self):
        if self.options.step_range and self._step_range()[0] > 0:
            return self.internal_protocol()     # the steps before wrote the shuffle's lines
        return super().input_protocol()

    def output_protocol(self):
        if self.options.step_range and self._step_range()[1] < len(self.steps()):
            return self.internal_protocol()     # for the steps after
        return super().output_protocol()

    @property
    def conf(self):
        if not hasattr(self, '_conf'):
            self._conf = config.load_resolved(self.options.crawl_conf) if self.options.crawl_conf \
                else config.load()
        return self._conf

    def jobconf(self):
        """Per-job Hadoop settings that a stock cluster would otherwise choose (the
        command line's --jobconf still wins):

        - a name that says which job and layer it is;
        - speculative execution off: a speculative fetch task fetches its hosts a
          second time (twice the load on them, and politeness broken), a speculative
          WARC mapper writes its files twice; the other jobs are short, and a duplicate
          attempt only takes a container another job could use;
        - uber mode for jobs whose input is at most hadoop.uber_max_bytes: Hadoop then
          runs them inside the ApplicationMaster when they also have at most one
          reducer, saving a container start per task;
        - map splits of at most hadoop.split_max_bytes (drivers/runtime/hadoop.py combines the
          input files into them).
        """
        mine = {'mapreduce.map.speculative': 'false',
                'mapreduce.reduce.speculative': 'false',
                # what the ResourceManager's UI and the history show for it
                'mapreduce.job.name': 'mrcrawl %s layer %d' % (type(self).__name__,
                                                               self.options.layer)}
        if self.options.runner == 'hadoop' and self.options.crawl_conf:
            limit = self.conf['hadoop']['uber_max_bytes']
            mine['mapreduce.job.ubertask.enable'] = 'true' if limit > 0 else 'false'
            if limit > 0:
                mine['mapreduce.job.ubertask.maxbytes'] = str(limit)
            split = self.conf['hadoop']['split_max_bytes']
            if split > 0:
                mine[SPLIT_MAX_BYTES] = str(split)
        mine.update(super().jobconf())
        return mine

    #: Seconds between two reports of a task's summed counters (Hadoop streaming counts
    #: a counter line as progress; its task timeout is minutes).
    COUNTER_REPORT_SECONDS = 10.0

    def __init__(self, *args, **kwargs):
        # mrjob builds each instance's argument parser afresh: some 200 options (every
        # runner's), ~4 ms, and the inline runner makes an instance per task, a
        # hundred-odd in a small crawl, most of them on its critical path. Parsing
        # changes no parser, so one per job class and process serves every instance.
        configured = _CONFIGURED.get(type(self))
        if configured is not None:
            self.configure_args = lambda: self._reuse_parser(*configured)
        super().__init__(*args, **kwargs)
        if configured is None:
            _CONFIGURED[type(self)] = (self.arg_parser, frozenset(self._passthru_arg_dests),
                                       frozenset(self._file_arg_dests))
        else:
            del self.configure_args
        self._tallies = {}      # (group, counter) -> amount not yet reported
        self._tallies_due = time.monotonic() + self.COUNTER_REPORT_SECONDS

    def _reuse_parser(self, parser, passthru, files):
        """configure_args for an instance after the first: the class's parser."""
        self.arg_parser = parser
        self._passthru_arg_dests.update(passthru)
        self._file_arg_dests.update(files)

    def count(self, name, amount=1, group=None):
        """Add *amount* to counter *name* of *group* (default: the job's group). Summed
        in the task's memory and reported at the end of the task and every
        ``COUNTER_REPORT_SECONDS``: mrjob writes one stderr line per increment, which
        the runner then parses, and a job counting per link spent ~15 % of its mapper's
        time on those lines."""
        if not amount:
            return
        key = (group or self.COUNTER_GROUP, name)
        self._tallies[key] = self._tallies.get(key, 0) + amount
        if time.monotonic() >= self._tallies_due:
            self.report_counts()

    def report_counts(self):
        """Write the summed counters (mrjob's counter lines) and start again."""
        for (group, name), amount in sorted(self._tallies.items()):
            self.increment_counter(group, name, amount)
        self._tallies.clear()
        self._tallies_due = time.monotonic() + self.COUNTER_REPORT_SECONDS

    def _wrap_protocols(self, step_num, step_type):
        """mrjob's, with each output line written in one call (mrjob writes the record,
        then the newline: two buffered writes a line, which a job emitting many lines
        feels)."""
        read_lines, _ = super()._wrap_protocols(step_num, step_type)
        write = self.pick_protocols(step_num, step_type)[1]
        out = self.stdout

        def write_line(key, value):
            out.write(write(key, value) + b'\n')
        return read_lines, write_line

    def run_mapper(self, step_num=0):
        try:
            super().run_mapper(step_num)
        finally:
            self.report_counts()

    def run_combiner(self, step_num=0):
        try:
            super().run_combiner(step_num)
        finally:
            self.report_counts()

    def run_reducer(self, step_num=0):
        try:
            super().run_reducer(step_num)
        finally:
            self.report_counts()

    def records(self, line, *kinds):
        """Decode one input line; yields the record if its kind is one of *kinds*."""
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.count(C.MALFORMED_RECORD)
            return
        if not isinstance(rec, dict) or 'url' not in rec:
            self.count(C.MALFORMED_RECORD)
            return
        if kinds and rec.get('kind') not in kinds:
            self.count(C.UNEXPECTED_RECORD)
            return
        yield rec
