"""Handing a crawl's pages to other systems: a search index (Solr)."""
