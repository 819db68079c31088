"""Run ``mrcrawl crawl`` with extra mrjob runner options, to measure a proposed change
before anyone makes it (the crawler's code is not touched).

    .venv/bin/python bench/mrcrawl_variant.py --runner-opt=--no-bootstrap-mrjob -- crawl --seeds ...

Every ``--runner-opt`` is appended to the options of every job the driver starts
(drivers.crawl.Crawl's runner_args); the rest of the command line is mrcrawl's own.
"""
import sys

import drivers.crawl
from drivers.cli import main as cli


def main(argv):
    extra, rest = [], list(argv)
    while rest and rest[0] != '--':
        extra.append(rest.pop(0).split('=', 1)[1])
    rest = rest[1:]
    init = drivers.crawl.Crawl.__init__

    def patched(self, *a, **kw):
        kw['runner_args'] = list(kw.get('runner_args', ())) + extra
        init(self, *a, **kw)

    drivers.crawl.Crawl.__init__ = patched
    return cli.main(rest)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
