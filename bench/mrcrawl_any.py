"""The ``mrcrawl`` command of whichever version is on PYTHONPATH (bench/sources.py): the
console script of the installed one names drivers.cli.command, older trees have
drivers.command."""
try:
    from drivers.cli.command import command
except ImportError:
    from drivers.command import command

command()
