"""The ``mrcrawl`` command: its entry point (command.py), its arguments and subcommands
(main.py), and the subcommands that only look into a crawl (db.py, extract.py)."""
