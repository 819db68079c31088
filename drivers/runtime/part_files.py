"""A crawl folder's part files read and written by the driver, and a job's side folders.

Every dataset folder of a crawl holds ``part-*`` files of one record a line; the driver
reads small ones whole (:func:`read_lines`) and writes the few it makes itself
(:func:`write_lines`) through the crawl's file system (local or WebHDFS).
"""
from drivers.folder import layout
from jobs.lib import BUFFER_BYTES


def part_names(c, folder):
    return sorted(n for n in c.fs.listdir(folder) if n.startswith('part-'))


def read_lines(c, folder):
    """The non-empty lines of *folder*'s part files, as bytes without line breaks."""
    lines = []
    for name in part_names(c, folder):
        lines += [line.rstrip(b'\n') for line in c.fs.iter_lines(c.fs.join(folder, name))
                  if line.strip()]
    return lines


def write_lines(c, folder, lines):
    """*lines* (bytes) into *folder*/part-00000, made afresh."""
    c.fs.rm(folder)
    c.fs.mkdirs(folder)
    with c.fs.open_write_binary(c.fs.join(folder, 'part-00000'), BUFFER_BYTES) as f:
        for line in lines:
            f.write(line + b'\n')


def side_args(c, kept, option, side):
    """MRCurrent's *option* naming its side folder *side*, when the last build's *kept*
    (prev_*) is there to follow; a side folder left by a run whose current/ never
    landed goes first."""
    if not c.fs.exists(kept):
        return []
    if not c.fs.exists(c.path(layout.CURRENT)):
        c.fs.rm(side)
    return c.task_path_args(option, side)


def install_side(c, side, final):
    """A job's side folder *side* (one no task wrote: empty) renamed to *final*, unless
    an interrupted run installed it already."""
    if c.fs.exists(final):
        return
    c.fs.mkdirs(side)
    c.fs.mkdirs(final.rsplit('/', 1)[0])
    c.fs.rename(side, final)
