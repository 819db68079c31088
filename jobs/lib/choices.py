"""Settings that take one of a few values, and those values: the one table that
jobs.lib.config validates against and the modules acting on them (jobs.lib.filters,
maintext, topic, politeness; jobs/generate.py) read.

A leaf: it imports nothing, so the modules config checks (maintext, topic) can read
it without importing config.
"""

CHOICES = {
    'politeness.key': ('host', 'ip', 'domain'),
    'generate.strategy': ('bfs', 'backlinks', 'opic', 'pagerank', 'major_site'),
    'filter.scope': ('any', 'host', 'domain'),
    'topic.off_topic_links': ('follow', 'drop', 'deprioritise'),
    'parse.main_text_extractor': ('resiliparse', 'trafilatura'),
}
