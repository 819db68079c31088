"""Where and how a job runs: mrcrawl's mrjob runners (runners.py, hadoop.py), their
input splits, Hadoop's location and shipping, HDFS and local folders (fs.py, hdfs.py),
forked children (beside.py), temporary folders, and interrupts."""
