"""mrcrawl's drivers: they run jobs and define none.

- here: the crawl loop (crawl.py, seeds.py) and the design's five drivers
  (*_driver.py);
- folder/: the crawl folder, its settings and its cycles;
- later/: later builds, made from the last build plus the change;
- runtime/: where and how a job runs (runners, Hadoop, file systems, children);
- reports/: counters, the per-layer summary, report.json and report.html;
- cli/: the ``mrcrawl`` command;
- fixtures/: websites on loopback for the tests and the demo.
"""
