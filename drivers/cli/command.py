"""The ``mrcrawl`` console script (setup.cfg): the interrupt handlers first
(drivers/runtime/interrupts.py), then the command itself (drivers/cli/main.py).

A module of its own, above both: drivers/runtime/runners.py uses drivers.runtime.interrupts,
which so imports nothing of the crawler, and drivers.cli.main imports the crawler.
"""
import sys

from drivers.runtime import interrupts


def command():
    """Install the handlers before importing the crawler (drivers/cli/main.py and what it
    imports take a tenth of a second), so that an interrupt in the first moments is
    handled as one later on; then :func:`drivers.cli.main.run`."""
    try:
        interrupts.install()
        # after install(): see the docstring
        from drivers.cli import main as cli
    except KeyboardInterrupt:
        sys.exit(interrupts.interrupted())
    cli.run()
