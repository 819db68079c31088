"""The ``mrcrawl`` console script (setup.cfg): the interrupt handlers first
(drivers/interrupts.py), then the command itself (drivers/cli.py).

A module of its own, above both: drivers/runners.py uses drivers.interrupts, which so
imports nothing of the crawler, and drivers.cli imports the crawler.
"""
import sys

from drivers import interrupts


def command():
    """Install the handlers before importing the crawler (drivers/cli.py and what it
    imports take a tenth of a second), so that an interrupt in the first moments is
    handled as one later on; then :func:`drivers.cli.run`."""
    try:
        interrupts.install()
        from drivers import cli
    except KeyboardInterrupt:
        sys.exit(interrupts.interrupted())
    cli.run()
