"""The runner a job of mrcrawl runs on, handed to it by the driver.

mrjob picks a job's runner from its ``--runner`` among its own classes
(``MRJob.make_runner``). mrcrawl's jobs run on mrcrawl's runners instead
(drivers/runtime/runners.py and hadoop.py), and jobs/ knows nothing of drivers/ (the
nodes get jobs/ alone: hadoop.jobs_zip), so the choice is made here, by the driver:

- ``-r local``: :class:`~drivers.runtime.runners.LocalRunner`, which forks its tasks
  from the job's class;
- ``-r inline``: :class:`~drivers.runtime.runners.InlineRunner`, or
  :class:`~drivers.runtime.hadoop.StagedInlineRunner` when an input or the output is on
  HDFS (a small job of a Hadoop crawl, run in the driver);
- ``-r hadoop``: :class:`~drivers.runtime.hadoop.HadoopRunner` (jobs/ and the
  dependencies shipped, HDFS calls over WebHDFS);
- any other runner: mrjob's own.

A job run as a script (``python -m jobs.fetch ...``) has no driver and runs on mrjob's
own runners, as any MRJob does.
"""
from drivers.runtime import hadoop
from drivers.runtime.hadoop import HadoopRunner, StagedInlineRunner
from drivers.runtime.runners import TASK_ENV_ARGS, InlineRunner, LocalRunner, local_runner_args


def runner_args(runner, conf):
    """The switches every job a driver runs on *runner* gets before the user's own:
    shipping and the Hadoop found for ``hadoop``, the fork server's for ``local``."""
    if runner == 'hadoop':
        return hadoop.runner_args(conf) + TASK_ENV_ARGS
    return local_runner_args() if runner == 'local' else []


def runner_class(job):
    """The runner class for *job*, from its ``--runner`` and where its files are."""
    runner = job.options.runner
    paths = list(job.options.args) + [job.options.output_dir or '']
    if runner == 'inline':
        return StagedInlineRunner if any(p.startswith('hdfs://') for p in paths) \
            else InlineRunner
    return {'local': LocalRunner, 'hadoop': HadoopRunner}.get(runner) \
        or job._runner_class()


def make_runner(job):
    """*job*'s runner, as ``job.make_runner()`` makes mrjob's. mrjob hands the job's
    class (``mrjob_cls``) to its inline runner only; LocalRunner forks its tasks from it
    too."""
    cls = runner_class(job)
    kwargs = job._runner_kwargs()
    if issubclass(cls, (LocalRunner, InlineRunner)):
        kwargs.setdefault('mrjob_cls', type(job))
    return cls(**kwargs)
