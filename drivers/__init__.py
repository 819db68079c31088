"""mrcrawl's drivers: the design's five drivers (*_driver.py), the crawl loop that calls
them, the command line, reports, and how jobs are run. They run jobs; they define none."""
