"""Later builds: how a cycle after the first remakes the merged outputs from the last
build plus its change instead of from every layer (MergeDriver calls them), and the
crawl's Parquet index (index.py) that they keep current."""
