"""The shared base of mrcrawl's jobs (cc-mrjob's mrcc.py idea).

It handles what every job does the same way: the resolved configuration file
(``--conf``), JSON-lines records in and out (orjson), malformed input counted instead
of crashing, and counters under the job's group. A job subclass sets ``COUNTER_GROUP``
and writes its mappers and reducers over dict records.
"""
import os
import subprocess
from functools import partial

import orjson
from mrjob.cat import is_compressed
from mrjob.inline import InlineMRJobRunner
from mrjob.job import MRJob
from mrjob.local import LocalMRJobRunner

from jobs.lib import config, counters as C


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


class RawLineProtocol:
    """Input lines as bytes; the base job decodes them so bad lines are counted."""

    @staticmethod
    def read(line):
        return None, line

    @staticmethod
    def write(key, value):
        return value


class CrawlJob(MRJob):
    """Base job: ``--conf`` file, JSON-lines records, counters in one group."""

    INPUT_PROTOCOL = RawLineProtocol
    INTERNAL_PROTOCOL = JSONKeyValueProtocol
    OUTPUT_PROTOCOL = JSONLinesValueProtocol
    COUNTER_GROUP = 'mrcrawl'

    def configure_args(self):
        super().configure_args()
        self.add_file_arg('--crawl-conf', help='Resolved configuration (JSON) the driver wrote.')
        self.add_passthru_arg('--layer', type=int, default=0,
                              help='Crawl layer this run belongs to. Default: %(default)s')

    @property
    def conf(self):
        if not hasattr(self, '_conf'):
            self._conf = config.load_resolved(self.options.crawl_conf) if self.options.crawl_conf \
                else config.load()
        return self._conf

    def _runner_class(self):
        """``-r local`` runs LocalRunner (below: no in-memory sort fallback), ``-r
        inline`` InlineRunner (below: input files read where they are)."""
        if self.options.runner == 'local':
            return LocalRunner
        if self.options.runner == 'inline':
            return InlineRunner
        return super()._runner_class()

    def count(self, name, amount=1):
        if amount:
            self.increment_counter(self.COUNTER_GROUP, name, amount)

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


# -- the local runner -----------------------------------------------------------------
# mrjob's local runner, with the shuffle's sort never falling back to memory.
#
# mrjob's ``LocalMRJobRunner`` sorts each reducer's input with the ``sort`` binary and, if
# that fails (disk full, a bad ``--sort-bin``), logs an error and sorts the whole input in
# the driver's memory instead. A soak crawl of 110k pages hit that: the merge's sort failed
# on a full disk and the driver grew to 4.2 GB. A crawler must fail that step with the
# reason instead: :class:`LocalRunner` raises :class:`SortFailed`, which the driver reports
# as the step's failure (its output never lands; the rerun redoes the step).

class SortFailed(RuntimeError):
    pass


def sort_with_sort_bin(input_paths, output_path, sort_bin, tmp_dir):
    """Sort *input_paths* into *output_path* with *sort_bin* (LC_ALL=C), or raise."""
    env = dict(os.environ, LC_ALL='C', TMP=tmp_dir, TMPDIR=tmp_dir)
    with open(output_path, 'wb') as output:
        if not input_paths:
            return
        try:
            proc = subprocess.run(list(sort_bin) + list(input_paths), stdout=output,
                                  stderr=subprocess.PIPE, env=env)
        except OSError as e:
            raise SortFailed('the shuffle sort could not start (%s): %s' % (sort_bin[0], e))
        if proc.returncode:
            raise SortFailed('the shuffle sort failed (exit %d): %s' % (
                proc.returncode, proc.stderr.decode('utf-8', 'replace').strip()[-300:]))


class LocalRunner(LocalMRJobRunner):
    """``-r local`` for mrcrawl's jobs: the sort binary or a clear failure."""

    def _sort_input_func(self):
        return partial(sort_with_sort_bin, sort_bin=self._sort_bin(),
                       tmp_dir=self._get_local_tmp_dir())


class InlineRunner(InlineMRJobRunner):
    """``-r inline`` for mrcrawl's jobs: each uncompressed input file is one map task's
    input where it is (a symbolic link), instead of being copied line by line into
    splits. The inline runner runs its tasks one after another, so splits buy nothing;
    the copies cost ~0.7 s of the polite benchmark's 57 s (py-spy)."""

    def _split_mapper_input(self, input_paths, step_num):
        input_paths = list(input_paths)
        if ((step_num == 0 and self._uses_input_manifest())
                or any(is_compressed(p) for p in input_paths)):
            return super()._split_mapper_input(input_paths, step_num)
        splits = []
        for path in input_paths:
            size = os.stat(path).st_size
            if not size:
                continue       # as mrjob: an empty file gives no split
            dest = self._task_input_path('mapper', step_num, len(splits))
            self.fs.mkdir(os.path.dirname(dest))
            os.symlink(os.path.abspath(path), dest)
            splits.append({'file': path, 'start': 0, 'length': size})
        return splits
