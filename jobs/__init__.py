"""mrcrawl's MapReduce jobs: one MRJob per module, pure helpers in jobs.lib."""
