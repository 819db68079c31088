"""Running one step of a crawl: on which runner (:meth:`StepRunner.runner_for`: inline
in the driver when its input is small, else the crawl's runner), with which arguments,
and its output installed only once it succeeded, its counters saved in the step ledger
(OUT/steps/<step>.json, by the crawl's Report) beside it.

:class:`StepRunner` is a base of drivers.crawl.Crawl, whose attributes it uses: ``fs``,
``conf``, ``out``, ``runner`` and its arguments (``runner_args`` for the crawl's runner,
``user_args`` for the user's own), ``report``, ``_conf_file``, :meth:`path`,
:meth:`on_step`, told of each step that starts (the crawl's status.json), and
:meth:`watch`, around each job while it runs (a fetch's progress line).
"""
import contextlib
import json
import os
import time
import uuid

from drivers.folder import layout
from drivers.runtime import hadoop
from drivers.runtime.launch import make_runner
from jobs.lib import counters as C


class CrawlError(Exception):
    """A failure the user can act on: printed as one line, exit status 2 (drivers.cli).
    Defined here, at the bottom of the drivers, so that every room can raise it."""


class StepFailed(CrawlError):
    """A step's job failed: one line (the step, why, and the job's command line)."""


class StepRunner:
    def run_step(self, name, job_cls, inputs, final, extra_args=(), runner=None,
                 passed=None):
        """Run *job_cls* over *inputs* into *final* unless it is already there (on
        *runner*, else the one :meth:`runner_for` picks), with the files of *passed* (its
        map tasks' --pass-dir: lines they wrote unshuffled; emptied before and after)."""
        if self.fs.exists(final):
            return self.report.load_step(name)
        self.on_step(name)
        tmp = self.path(layout.tmp(name))
        for folder in filter(None, (tmp, passed)):     # an interrupted run's files
            self.fs.rm(folder)
        runner_name = runner or self.runner_for(job_cls, inputs, extra_args)
        args = self.job_args(runner_name, tmp, extra_args, inputs)
        start = time.monotonic()
        try:
            if hadoop.cut_for(job_cls, runner_name) and len(job_cls(args=args).steps()) > 1:
                counters, runner_name = hadoop.run_cut(self, job_cls, tmp, extra_args, inputs)
            else:
                counters = self.run_job(job_cls, args)
        except Exception as e:
            # One line, whatever mrjob's message holds: the step, why, and how to rerun it.
            raise StepFailed('step %s failed: %s: %s (job %s %s)' % (
                name, type(e).__name__, ' '.join(str(e).split()), job_cls.__name__,
                ' '.join(args)))
        merged = C.merge_steps(counters)
        step = {'counters': merged, 'seconds': round(time.monotonic() - start, 3),
                'runner': runner_name}
        self.report.save_step(name, step)
        if not self.fs.exists(tmp):
            self.fs.mkdirs(tmp)   # an empty result is still a result
        for part in (self.fs.listdir(passed) if passed else ()):
            if part.startswith('part-'):      # committed (a dead task's is .tmp-part-)
                self.fs.rename(self.fs.join(passed, part), self.fs.join(tmp, part))
        for folder in filter(None, (passed, final)):
            self.fs.rm(folder)
        self.fs.mkdirs(final.rsplit('/', 1)[0])
        self.fs.rename(tmp, final)
        self.fs.write_text(self.path(layout.STATE), json.dumps(
            {'last_completed_step': name, 'output': final}))
        return step

    def job_args(self, runner_name, out, extra_args, inputs):
        runner_args = self.runner_args if runner_name == self.runner else self.user_args
        if runner_name == 'inline' and '--num-cores' not in runner_args:
            # Inline tasks run one after another: a split for 2 cores only adds tasks.
            runner_args = ['--num-cores', '1'] + runner_args
        # --cleanup-on-failure ALL: mrjob keeps a failed job's temporary folder (a
        # crawl's can hold gigabytes); the step's one-line error says why it failed.
        return ['-r', runner_name, '--crawl-conf', self._conf_file, '--output-dir',
                self.fs.local_path(out) if self.runner != 'hadoop' else out,
                '--cleanup-on-failure', 'ALL'] + runner_args + self.reduce_args(
                    runner_name, inputs) + list(extra_args) + list(inputs)

    def reduce_args(self, runner_name, inputs):
        """``--reducers`` for a YARN job too big for uber mode: its steps whose reducers
        see every page use that many (CrawlJob.wide_reduce). hadoop.reducers if set,
        else one per hadoop.reduce_bytes of the job's input, at most the cluster's
        vcores (as Hive and Pig size their reducers by bytes)."""
        h = self.conf['hadoop']
        if runner_name != 'hadoop' or \
                self.input_bytes(inputs, h['uber_max_bytes']) <= h['uber_max_bytes']:
            return []
        if h['reducers']:
            return ['--reducers', str(h['reducers'])]
        most = self.yarn_vcores() or os.cpu_count() or 1
        size = self.input_bytes(inputs, most * h['reduce_bytes'])
        return ['--reducers', str(max(1, min(most, -(-size // h['reduce_bytes']))))]

    def yarn_vcores(self):
        """The YARN cluster's vcores, asked of the ResourceManager once a run (None if
        it does not say): the wide steps' reducers and the fetch lists are sized by it."""
        if '_vcores' not in self.__dict__:
            self._vcores = hadoop.cluster_vcores()
        return self._vcores

    def input_bytes(self, inputs, limit):
        """The inputs' total size, counted only until it passes *limit*."""
        total = 0
        for path in inputs:
            total += self.fs.size(path)
            if total > limit:
                break
        return total

    def run_job(self, job_cls, args):
        """Run one job: its counters. A job on YARN is tagged (mapreduce.job.tags) so
        that :meth:`watch` can find it while it runs."""
        tag = None
        if args[args.index('-r') + 1] == 'hadoop':
            tag = 'mrcrawl-%s' % uuid.uuid4().hex[:16]
            args = list(args) + ['--jobconf', 'mapreduce.job.tags=' + tag]
        with make_runner(job_cls(args=args)) as runner, self.watch(runner, tag):
            runner.run()
            return runner.counters()

    def watch(self, runner, tag):
        """A context around a job that *runner* runs (*tag*: its YARN tag, or None):
        here, none. Crawl watches a fetch (its progress line)."""
        return contextlib.nullcontext()

    #: Jobs runner_for never runs inline: fetch tasks run side by side (but fetch_inline).
    NEVER_INLINE = ('MRFetch',)

    def runner_for(self, job_cls, inputs, extra_args=()):
        """The runner for one step: ``inline`` for a small job of a local-runner crawl
        (at most runner.uber_max_bytes of input per step of the job: what inline saves
        is each step's start of task processes and sort, while the local runner's tasks
        share the work between cores) or of a Hadoop crawl (hadoop.local_max_bytes: the
        job then reads and writes HDFS from the driver, drivers/runtime/hadoop.py), else the
        crawl's runner. *extra_args*: the job's own, which can change its steps."""
        limit = {'local': self.conf['runner']['uber_max_bytes'],
                 'hadoop': self.conf['hadoop']['local_max_bytes']}.get(self.runner, 0)
        if limit <= 0 or job_cls.__name__ in self.NEVER_INLINE:
            return self.runner
        if self.runner == 'local':
            job = job_cls(args=list(extra_args))
            job._conf = self.conf        # CrawlJob.conf: the resolved settings, as a task's
            limit *= len(job.steps())
        return self.runner if self.input_bytes(inputs, limit) > limit else 'inline'
