"""What a crawl tells its user: per-step counters, the per-layer summary and report.json
(summary.py), and report.html (html.py, with its charts and tables)."""
