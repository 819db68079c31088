"""``python -m drivers.cli``: the ``mrcrawl`` command without its console script."""
from drivers.cli.main import run

if __name__ == '__main__':      # not when a walk over the packages imports it
    run()
