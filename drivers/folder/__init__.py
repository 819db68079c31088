"""The crawl folder (OUT): whether a folder is a crawl and the settings it was made
with (settings.py), its cycles and its run lock (cycles.py)."""
