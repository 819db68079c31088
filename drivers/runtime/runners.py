"""mrjob's local and inline runners as mrcrawl's jobs run them (``-r local``, ``-r inline``).

The driver imports this module (drivers/runtime/launch.py hands a job its runner);
tasks never do.

- :class:`LocalRunner` (``-r local``):

  - **the shuffle's sort never falls back to memory.** mrjob's ``LocalMRJobRunner``
    sorts each reducer's input with the ``sort`` binary and, if that fails (disk full,
    a bad ``--sort-bin``), sorts the whole input in the driver's memory instead: on a
    full disk, a driver of several GB (bench/README.md). A crawler fails that step with
    the reason instead (:class:`SortFailed`: its output never lands, a rerun redoes it).
  - **splits are byte ranges, cut at line ends (and, for reducers, at key changes) and
    copied by the kernel** (``os.copy_file_range``), or the input file itself (a
    symbolic link) when a split is a whole file; the reducers' sorted input is split in
    place (ranges copied out from its end, the file cut short behind them). mrjob reads
    every input line in Python to cut splits, for the mappers and again for the
    reducers, while no task runs. One split per core instead of mrjob's two: each split
    is a task process, and each pays the interpreter's start and the imports.

  - **tasks are forked, not executed.** mrjob starts every task as a new Python
    process (``python fetch.py --step-num=0 --reducer ...``), which imports mrjob and
    the job's libraries again before it reads a line, and a crawl runs about a hundred
    tasks. Here each task is a child forked from one *fork server* (``multiprocessing``'s
    forkserver: a clean single-threaded process started once per driver, which has
    imported mrjob and every job module) and runs the job in-process the way the inline
    runner does, with its own stdin, stdout (buffered by 1 MiB, not 8 KiB), stderr,
    working directory and environment (:func:`run_task_in_child`). One child per task,
    as before, so nothing carries over from one task to the next; a child that dies
    (killed, out of memory) fails the step like a dead subprocess did
    (``_TaskFailedException``), and the other running tasks are stopped. The process title
    names the task (``mrcrawl-task fetch.py --step-num=0 --reducer ...``). Used whenever
    the job's class is importable and no task needs a setup script or a command step;
    otherwise mrjob's subprocesses run the tasks.

- :class:`InlineRunner` (``-r inline``): each uncompressed input file is one map task's
  input, linked where it is: inline tasks run one after another, so splits buy nothing.

**Couplings to internals** are kept here and in drivers/runtime/hadoop.py: these classes
override private methods of mrjob 0.7.4's runners (pinned in setup.cfg;
tests/test_jobs.py fails if one of them is no longer mrjob's), use mrjob.local's
``_TaskFailedException``, and stop CPython's fork server through its private ``_stop``
(guarded: a Python without it only skips the wait, see :func:`_stop_fork_server`).
"""
import atexit
import importlib
import multiprocessing
import multiprocessing.connection
import os
import pkgutil
import signal
import subprocess
import sys
import time
import traceback
from functools import partial
from multiprocessing import forkserver

from mrjob.cat import is_compressed
from mrjob.inline import InlineMRJobRunner
from mrjob.local import LocalMRJobRunner, _TaskFailedException
from mrjob.step import StepFailedException
from mrjob.util import save_current_environment, save_cwd, save_sys_path, save_sys_std

import jobs
from drivers.runtime import interrupts
from drivers.runtime.splits import (_partition_key, _reducer_key, copy_range,  # noqa: F401
                                    line_ranges)
from drivers.runtime.tmp_removal import RemovedLater
from jobs.base import KEY_PARTITIONS, whole_files
from jobs.lib import BUFFER_BYTES


def task_preload():
    """Modules the fork server imports once, before it forks any task: mrjob and every
    job module of the ``jobs`` package (and with them the libraries the tasks use)."""

    return ['mrjob.job'] + ['jobs.' + m.name for m in pkgutil.iter_modules(jobs.__path__)
                            if not m.ispkg and m.name != 'runners']


def local_runner_args():
    """mrjob switches for ``-r local``.

    - ``--no-bootstrap-mrjob``: the local runner's tasks run this interpreter, which has
      mrjob installed; zipping mrjob for every job and importing it from the zip in every
      task is a large share of a CPU-bound crawl's time (bench/README.md).
    - ``--sort-bin`` with ``-S 64M``: the shuffle's sort (GNU sort, on the reducer key
      alone, stable, as mrjob's default) with a bounded buffer (unbounded, GNU sort's
      grows with the input: bench/crawldb_update.py). With ``--batch-size=256`` it merges
      up to 256 sorted runs of 64 MB (16 GB of input) in one pass where its default of
      16 took several.
    """
    return ['--no-bootstrap-mrjob', '--sort-bin',
            "sort -t '\t' -k 1,1 -s -S 64M --batch-size=256"] + TASK_ENV_ARGS


#: Task environment on every runner. setuptools replaces the stdlib's distutils (which
#: mrjob 0.7.4 imports) with its own copy unless told not to, and the copy is loaded at
#: every task's start-up.
TASK_ENV_ARGS = ['--cmdenv', 'SETUPTOOLS_USE_DISTUTILS=stdlib']


_context = None


def task_context():
    """The multiprocessing context whose fork server starts the tasks (one per driver
    process, started on first use)."""
    global _context
    if _context is None:
        ctx = multiprocessing.get_context('forkserver')
        ctx.set_forkserver_preload(task_preload())
        atexit.register(_stop_fork_server)
        # Started now with SIGINT blocked, as it and its tasks then stay: a terminal's
        # Ctrl-C reaches the whole process group, and killed the server with a traceback
        # as it imported the job modules. The driver ends its tasks (drivers/runtime/interrupts.py).
        from multiprocessing import forkserver
        with interrupts.sigint_blocked():
            forkserver.ensure_running()
        _context = ctx
    return _context


def _stop_fork_server(wait=10.0):
    """Stop the fork server and wait for it, so that the CPU time of the tasks it reaped
    counts in this process's children (``getrusage``, ``time``), as subprocesses' did.

    The server stops when every copy of its "alive" pipe is closed, and a child forked
    from this process (drivers.runtime.beside, a test's) holds one: those children are ended
    first, and the wait is bounded, so that an exit never hangs on the server."""
    server = getattr(forkserver, '_forkserver', None)
    pid = getattr(server, '_forkserver_pid', None)
    if pid is None:
        return
    for child in multiprocessing.active_children():
        if child.daemon:
            child.kill()
    try:
        os.close(server._forkserver_alive_fd)     # asks the server to stop
    except (OSError, TypeError):
        pass
    server._forkserver_alive_fd = server._forkserver_pid = None
    end = time.monotonic() + wait
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= end:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
    except (ChildProcessError, ProcessLookupError):
        pass


def run_task_in_child(module, class_name, title, args, driver_path, task_type, step_num,
                      task_num, num_steps, stdin, stdout, stderr, wd, env):
    """Run one task of job *class_name* (from *module*) in this process: mrjob's
    inline runner's way, in a child of the fork server (so it may change the process's
    state freely). *args* are the task's switches (``--step-num=N --mapper ...``);
    *driver_path* the driver's ``sys.path``, so that what the driver imports the task
    imports too."""
    try:
        # guarded: a task runs on without its title
        from setproctitle import setproctitle
        setproctitle(title)
    except ImportError:      # the title is for operators; the task runs without it
        pass
    with save_current_environment(), save_cwd(), save_sys_path(), save_sys_std():
        os.environ.update(env)
        os.chdir(wd)
        sys.path = [os.getcwd()] + [p for p in driver_path if p not in sys.path] + sys.path
        job_cls = getattr(importlib.import_module(module), class_name)
        stdin = open(stdin.fileno(), 'rb', buffering=BUFFER_BYTES, closefd=False)
        stdout = open(stdout.fileno(), 'wb', buffering=BUFFER_BYTES, closefd=False)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        try:
            job_cls(list(args)).execute()
        except SystemExit as e:
            if e.code not in (None, 0):
                raise _TaskFailedException(
                    reason='the task exited with status %r' % (e.code,),
                    step_num=step_num, num_steps=num_steps, task_type=task_type,
                    task_num=task_num)
        except Exception as e:
            stderr.write(traceback.format_exc().encode('utf-8', 'replace'))
            stderr.flush()
            raise _TaskFailedException(
                reason='%s: %s' % (type(e).__name__, e), step_num=step_num,
                num_steps=num_steps, task_type=task_type, task_num=task_num)
        finally:
            stdout.flush()       # its last MiB: a write error fails the task


def _child_main(func, conn):
    """A task child: run *func*; send None, or the exception, back to the driver. To a
    driver no longer listening (interrupted: it ends its tasks), nothing, no traceback."""
    result = None
    try:
        func()
    except BaseException as e:
        result = e if isinstance(e, _TaskFailedException) \
            else RuntimeError('%s: %s' % (type(e).__name__, e))
    try:
        conn.send(result)
        conn.close()
    except OSError:        # BrokenPipeError
        os._exit(1)
    if result is not None:
        os._exit(1)


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


class _RangeSplits:
    """Map splits as byte ranges of the input files (whole files symlinked), for both
    runners; each says how big a split may be (:meth:`_mapper_split_size`), except for
    a step that reads its files whole (jobs.base.WHOLE_FILES)."""

    def _split_dest(self, task_type, step_num, task_num):
        dest = self._task_input_path(task_type, step_num, task_num)
        self.fs.mkdir(os.path.dirname(dest))
        return dest

    def _place_split(self, task_type, step_num, task_num, path, start, end, size):
        dest = self._split_dest(task_type, step_num, task_num)
        if start == 0 and end == size:
            os.symlink(os.path.abspath(path), dest)
        else:
            copy_range(path, dest, start, end)

    def _mapper_split_size(self, sizes, step_num):
        """Bytes per map split for files of *sizes*, or None for mrjob's own splits."""
        raise NotImplementedError

    def _split_mapper_input(self, input_paths, step_num):
        input_paths = list(input_paths)
        whole = whole_files(self._jobconf_for_step(step_num))
        if ((step_num == 0 and self._uses_input_manifest())
                or any(is_compressed(p) for p in input_paths)):
            return super()._split_mapper_input(input_paths, step_num)
        sizes = [os.stat(p).st_size for p in input_paths]
        split_size = max(sizes, default=0) if whole else \
            self._mapper_split_size(sizes, step_num)
        if split_size is None:
            return super()._split_mapper_input(input_paths, step_num)
        splits = []
        for path, size in zip(input_paths, sizes):
            if not size:
                continue            # an empty file: nothing to map
            for start, end in line_ranges(path, size, split_size):
                self._place_split('mapper', step_num, len(splits), path, start, end, size)
                splits.append({'file': path, 'start': start, 'length': end - start})
        return splits

    def _key_partitions(self, step_num):
        """Does this step ask for one reduce task per key's first field
        (jobs.base.KEY_PARTITIONS)?"""
        return KEY_PARTITIONS in self._jobconf_for_step(step_num)

    def _split_reducer_input(self, step_num):
        """Reduce splits cut at key changes: about one per reducer, or one per partition
        (a key's first field) for a step that asks for it (MRFetch's fetch lists)."""
        path = self._sorted_reducer_input_path(step_num)
        size = os.stat(path).st_size
        if not size:
            return super()._split_reducer_input(step_num)
        if self._key_partitions(step_num):
            split_size, key_of = 1, _partition_key
        else:
            split_size, key_of = size // max(1, self._num_reducers(step_num)), _reducer_key
        ranges = line_ranges(path, size, split_size, key_of=key_of)
        # The sorted file is the runner's own: the last range is copied out, the file
        # cut short, and so on; what is left becomes the first split. A shuffle of whole
        # pages then needs one range's worth of extra disk, not a second copy of it all.
        for task_num in range(len(ranges) - 1, 0, -1):
            start, end = ranges[task_num]
            self._place_split('reducer', step_num, task_num, path, start, end, size)
            os.truncate(path, start)
        os.replace(path, self._split_dest('reducer', step_num, 0))
        return len(ranges)


class LocalRunner(RemovedLater, _RangeSplits, LocalMRJobRunner):
    """``-r local`` for mrcrawl's jobs: the sort binary or a clear failure; splits cut by
    byte ranges, one per core; tasks forked from a fork server (module docstring)."""

    def __init__(self, mrjob_cls=None, **kwargs):
        super().__init__(**kwargs)
        self._mrjob_cls = mrjob_cls
        self._forks = None

    def _fork_tasks(self):
        """Can this job's tasks run in forked children (see the module docstring)?
        Decided once per job."""
        if self._forks is None:
            cls = self._mrjob_cls
            steps = [self._get_step(n) for n in range(self._num_steps())]
            self._forks = (
                cls is not None and cls.__module__ not in ('__main__', '__mp_main__')
                # (mrjob's own bootstrap is moot: the fork server has it)
                and not self._opts['setup'] and not self._opts['py_files']
                and all(step[mrc].get('type') == 'script' for step in steps
                        for mrc in ('mapper', 'combiner', 'reducer') if step.get(mrc)))
        return self._forks

    def _invoke_task_func(self, task_type, step_num, task_num):
        if not self._fork_tasks():
            return super()._invoke_task_func(task_type, step_num, task_num)
        args = self._args_for_task(step_num, task_type)
        script = os.path.basename(self._script_path or self._mrjob_cls.__module__)
        title = 'mrcrawl-task %s %s' % (script, ' '.join(args))
        driver_path = tuple(os.path.abspath(p) for p in sys.path)
        return partial(run_task_in_child, self._mrjob_cls.__module__,
                       self._mrjob_cls.__name__, title, tuple(args), driver_path,
                       task_type, step_num, task_num, self._num_steps())

    def _run_multiple(self, funcs, num_processes=None):
        """Run the no-args *funcs* (each one task) in children of the fork server, at
        most ``num_cores`` at a time; the first failure stops the others and is raised."""
        if not self._fork_tasks():
            return super()._run_multiple(funcs, num_processes)
        ctx = task_context()
        pending = list(funcs)
        limit = max(1, self._num_cores())
        running = {}     # sentinel -> (process, receiving end)
        error = None
        try:
            while pending or running:
                while pending and error is None and len(running) < limit:
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_child_main, args=(pending.pop(0), send),
                                       daemon=True)
                    # An interrupt mid-request would leave the fork server a request
                    # cut short, which it dies of with a traceback: it waits until the
                    # task is started and known (drivers/runtime/interrupts.py).
                    with interrupts.deferred():
                        proc.start()
                        send.close()
                        running[proc.sentinel] = (proc, recv)
                if not running:
                    break
                for sentinel in multiprocessing.connection.wait(list(running)):
                    proc, recv = running.pop(sentinel)
                    result = None
                    try:
                        if recv.poll():
                            result = recv.recv()
                    except (EOFError, OSError):
                        result = None
                    recv.close()
                    proc.join()
                    if result is None and proc.exitcode != 0:
                        how = ('killed by signal %d' % -proc.exitcode if proc.exitcode < 0
                               else 'exit status %d' % proc.exitcode)
                        result = StepFailedException(
                            reason='a task process died (%s)' % how)
                    if result is not None and error is None:
                        error = result
                if error is not None:
                    pending.clear()
                    for proc, _ in running.values():
                        proc.terminate()
        except BaseException:      # Ctrl-C in the driver: its tasks end with it
            for proc, _ in running.values():
                proc.terminate()
            raise
        finally:
            for proc, recv in running.values():
                proc.join()
                recv.close()
        if error is not None:
            raise error

    def _sort_input_func(self):
        return partial(sort_with_sort_bin, sort_bin=self._sort_bin(),
                       tmp_dir=self._get_local_tmp_dir())

    def _mapper_split_size(self, sizes, step_num):
        if not any(sizes):
            return None
        return sum(sizes) // max(1, self._num_mappers(step_num))

class InlineRunner(RemovedLater, _RangeSplits, InlineMRJobRunner):
    """``-r inline`` for mrcrawl's jobs: each uncompressed input file is one map task's
    input where it is (module docstring)."""

    def _mapper_split_size(self, sizes, step_num):
        return max(sizes, default=0)       # every file whole

    def _split_reducer_input(self, step_num):
        if self._key_partitions(step_num):
            return super()._split_reducer_input(step_num)
        return InlineMRJobRunner._split_reducer_input(self, step_num)
