"""The ``mrcrawl`` command of whichever version is on PYTHONPATH (bench/sources.py): the
console script of the installed one names drivers.cli.command, older trees have
drivers.command.

The command runs under the main guard: the local runner's fork server imports the main
module again (as __mp_main__) in its children, which would start a second crawl."""
try:
    from drivers.cli.command import command
except ImportError:
    from drivers.command import command

if __name__ == '__main__':
    command()
