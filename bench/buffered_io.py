"""Lines through a file with Python's default buffer and with jobs.lib.BUFFER_BYTES.

    .venv/bin/python bench/buffered_io.py [--lines 84000] [--bytes 2700]

Writes, then reads, LINES lines of BYTES bytes (the cpu4x refresh's current/ holds
about 84,000 fetch records of ~2.7 KB that MRCurrent writes as read) in a temporary
folder, with each buffer size, three times each; prints the median seconds as JSON.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from jobs.lib import BUFFER_BYTES  # noqa: E402


def once(path, lines, line, buffering):
    start = time.perf_counter()
    with open(path, 'wb', buffering=buffering) as f:
        for _ in range(lines):
            f.write(line + b'\n')
    wrote = time.perf_counter() - start
    start = time.perf_counter()
    with open(path, 'rb', buffering=buffering) as f:
        n = sum(1 for _ in f)
    assert n == lines
    return wrote, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lines', type=int, default=84000)
    ap.add_argument('--bytes', type=int, default=2700)
    args = ap.parse_args()
    line = b'x' * args.bytes
    result = {'lines': args.lines, 'line_bytes': args.bytes}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'lines')
        for name, buffering in (('default', -1), ('buffer_bytes', BUFFER_BYTES)):
            runs = [once(path, args.lines, line, buffering) for _ in range(3)]
            result[name] = {'write_seconds': round(statistics.median(r[0] for r in runs), 3),
                            'read_seconds': round(statistics.median(r[1] for r in runs), 3)}
    print(json.dumps(result))


if __name__ == '__main__':
    main()
