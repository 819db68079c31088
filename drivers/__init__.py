"""mrcrawl's drivers: the crawl loop and the command line. They run jobs; they define none."""
