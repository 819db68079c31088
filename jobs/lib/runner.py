"""mrjob's local runner, with the shuffle's sort never falling back to memory.

mrjob's ``LocalMRJobRunner`` sorts each reducer's input with the ``sort`` binary and, if
that fails (disk full, a bad ``--sort-bin``), logs an error and sorts the whole input in
the driver's memory instead. A soak crawl of 110k pages hit that: the merge's sort failed
on a full disk and the driver grew to 4.2 GB. A crawler must fail that step with the
reason instead: :class:`LocalRunner` raises :class:`SortFailed`, which the driver reports
as the step's failure (its output never lands; the rerun redoes the step).
"""
import os
import subprocess
from functools import partial

from mrjob.local import LocalMRJobRunner


class SortFailed(RuntimeError):
    pass


def sort_with_sort_bin(input_paths, output_path, sort_bin, tmp_dir, sort_values=False):
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
