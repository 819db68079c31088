"""Byte ranges of line files for the runners' splits (drivers/runtime/runners.py): cut at line
ends, or where a sorted file's key changes, and copied out by the kernel.

Hadoop's FileInputFormat cuts its splits the same way (SPLIT_SLOP); mrjob reads every
line in Python to cut them.
"""
import os

#: A file (or its rest) up to this many split sizes long is one split, as Hadoop's
#: FileInputFormat does (its SPLIT_SLOP): two reducer outputs a few bytes apart in size
#: were cut into a whole split plus a sliver, and the whole one copied (0.5 GB, 0.15 s
#: from the page cache and 2 s from disk, in the cpu1x benchmark's xml job).
SPLIT_SLOP = 1.1


def line_ranges(path, size, split_size, key_of=None):
    """``[(start, end), ...]`` covering *path* (of *size* bytes), each about *split_size*
    bytes and ending at a line end: the end of the line that holds byte ``start +
    split_size - 1``, or the end of the file when at most ``SPLIT_SLOP`` split sizes
    are left. With *key_of* (line -> key; the file
    sorted by it, as the shuffle's sort leaves it) a range ends where the key changes
    instead: at the start or the end of the key group holding that line, whichever is
    nearer (both found by binary search), so a key's lines stay in one range and two
    large keys (the fetch's bins) are never put in one range for want of a boundary."""
    split_size = max(1, split_size)
    ranges, start = [], 0
    with open(path, 'rb') as f:
        while start < size:
            target = start + split_size
            if size - start <= split_size * SPLIT_SLOP:
                ranges.append((start, size))
                break
            f.seek(target - 1)
            f.readline()                 # to the end of the line holding byte target - 1
            end = f.tell()
            if key_of is not None and end < size:
                line_start = _line_start(f, end - 1, start)
                f.seek(line_start)
                key = key_of(f.readline())
                first = _first_line(f, start, line_start, lambda k: k >= key, key_of)
                after = _first_line(f, end, size, lambda k: k > key, key_of)
                if first > start and (target - first <= after - target or after >= size):
                    end = first
                else:
                    end = after
            ranges.append((start, end))
            start = end
    return ranges


def _first_line(f, lo, hi, wanted, key_of):
    """The first line start in [lo, hi] whose key is *wanted* (a predicate that is
    false, then true, along the sorted file), or *hi*; *lo* is a line start."""
    while lo < hi:
        p = _line_start(f, (lo + hi) // 2, lo)
        f.seek(p)
        line = f.readline()
        if wanted(key_of(line)):
            hi = p
        else:
            lo = p + len(line)
    return hi


def _line_start(f, pos, floor):
    """Offset where the line holding byte *pos* starts: just past the last newline in
    bytes [floor, pos), else *floor*."""
    step = 4096
    while pos > floor:
        lo = max(floor, pos - step)
        f.seek(lo)
        chunk = f.read(pos - lo)
        nl = chunk.rfind(b'\n')
        if nl >= 0:
            return lo + nl + 1
        pos = lo
        step *= 2
    return floor


def copy_range(src_path, dest_path, start, end):
    """Bytes [start, end) of *src_path* into a new file *dest_path* (kernel copy)."""
    with open(src_path, 'rb') as src, open(dest_path, 'wb') as dest:
        offset, left = start, end - start
        while left > 0:
            try:
                n = os.copy_file_range(src.fileno(), dest.fileno(), left, offset)
            except OSError:       # a file system without it: a plain copy
                src.seek(offset)
                while left > 0:
                    chunk = src.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    dest.write(chunk)
                    left -= len(chunk)
                break
            if n == 0:
                break
            offset += n
            left -= n


def _reducer_key(line):
    return line.split(b'\t', 1)[0]


def _partition_key(line):
    """The first space-separated field of a reducer key: what KeyFieldBasedPartitioner
    partitions on with ``-k1,1`` (jobs.base.KEY_PARTITIONS; MRFetch's bin label)."""
    return _reducer_key(line).split(b' ', 1)[0]
