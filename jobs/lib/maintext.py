"""Main text (boilerplate removed) and language of a page, for parse and the XML.

Main text: trafilatura (its own extraction, fast mode: no jusText/readability fallbacks), given
the page's HTML as a string: it parses and extracts, it never fetches anything (no URL
is opened; ``url`` only labels the document). It runs in the parse task because only
doc/ holds bodies (out/ and merged/ do not), so the cost is paid once per fetched page;
measured on the python3-doc manual it is ~200 ms for a 140 KB page, ~25x the HTML parse
itself, which is why ``parse.main_text`` can turn it off and ``parse.main_text_max_bytes``
bounds the input.

Language: py3langid (langid.py's model, bundled in the wheel; nothing is downloaded),
ISO 639-1 codes. The model is loaded once per task, on first use (~0.8 s).
"""
import logging

#: Characters of text the language detector reads (enough for a stable answer): on 298
#: pages of the python3-doc manual, the first 2,000 characters of the main text gave
#: the 5,000-character answer on 297 (1,000: 295), at 1.2 ms a page instead of 2.7 ms
#: (py3langid counts n-grams in a Python loop, so its cost grows with the sample).
LANGUAGE_SAMPLE_CHARS = 2000
#: Shorter texts get no language: a few words are too little evidence.
MIN_LANGUAGE_CHARS = 40

_identifier = None


def main_text(html, url=None):
    """Text of the page's main content (paragraphs joined by newlines), or ''."""
    import trafilatura
    # trafilatura logs every page it finds too short; the counters say that instead.
    logging.getLogger('trafilatura').setLevel(logging.ERROR)
    # fast=True: trafilatura's own extraction without the jusText/readability fallbacks,
    # ~30% less CPU (180 -> 130 ms on 220 KB documentation pages, measured here).
    out = trafilatura.extract(html, url=url, include_comments=False, include_tables=True,
                              deduplicate=False, with_metadata=False, output_format='txt',
                              fast=True)
    return out or ''


def language(text):
    """ISO 639-1 code of *text*'s language (py3langid), or None for too little text."""
    global _identifier
    if not text or len(text) < MIN_LANGUAGE_CHARS:
        return None
    if _identifier is None:
        import py3langid
        _identifier = py3langid.classify     # loads the bundled model on its first call
    lang, _ = _identifier(text[:LANGUAGE_SAMPLE_CHARS])
    return lang
