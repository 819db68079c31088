"""``python -m drivers.cli``: the ``mrcrawl`` command without its console script."""
from drivers.cli.main import run

run()
