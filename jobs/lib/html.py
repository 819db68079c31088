"""HTML parsing for the parse job: links, title, text, robots directives.

Parsing is HTML5 tree construction by Lexbor (through selectolax), so malformed HTML
becomes the tree a browser would build. Links are resolved per the WHATWG URL standard
against ``<base href>`` (first one, itself resolved against the page URL) or the page.
"""
import re

from selectolax.lexbor import LexborHTMLParser

from jobs.lib import urls

_LINK_SELECTOR = ('a[href], area[href], frame[src], iframe[src], link[href], '
                  'meta[http-equiv], meta[name], base[href]')
_REFRESH_URL_RE = re.compile(r'^\s*\d*(?:\.\d*)?\s*[;,]?\s*(?:url\s*=\s*)?(.*)$', re.I | re.S)
_SPACE_RE = re.compile(r'\s+')
_NON_TEXT = ['script', 'style', 'noscript', 'template', 'svg', 'head']


def _clean(text):
    return _SPACE_RE.sub(' ', text or '').strip()


def _refresh_target(content):
    m = _REFRESH_URL_RE.match(content or '')
    target = m.group(1).strip().strip('\'"') if m else ''
    return target or None


def parse(html, base_url, max_text_chars=None):
    """Parse one page. Returns a dict:

    title (str|None), text (str), links (list of {url, text, rel, tag}, resolved,
    in document order; ``url`` may be any scheme: filtering is the caller's),
    canonical (str|None), noindex (bool), nofollow (bool: the page's meta robots).
    """
    tree = LexborHTMLParser(html)
    base = base_url
    raw = []          # (tag, href, text, rel)
    canonical = None
    robots = ''
    for node in tree.css(_LINK_SELECTOR):
        tag = node.tag
        attrs = node.attributes
        if tag == 'base':
            if base is base_url:
                base = urls.resolve(base_url, attrs.get('href')) or base_url
        elif tag == 'a' or tag == 'area':
            raw.append((tag, attrs.get('href'), node.text(deep=True, separator=' ')
                        if tag == 'a' else attrs.get('alt'), attrs.get('rel')))
        elif tag == 'frame' or tag == 'iframe':
            raw.append((tag, attrs.get('src'), None, None))
        elif tag == 'link':
            rel = (attrs.get('rel') or '').lower().split()
            if 'canonical' in rel and canonical is None:
                canonical = attrs.get('href')
        elif tag == 'meta':
            name = (attrs.get('name') or '').lower()
            equiv = (attrs.get('http-equiv') or '').lower()
            if name == 'robots':
                robots += ',' + (attrs.get('content') or '').lower()
            elif equiv == 'refresh':
                target = _refresh_target(attrs.get('content'))
                if target:
                    raw.append(('meta', target, None, None))
    links = []
    for tag, href, text, rel in raw:
        url = urls.resolve(base, href)
        if url is not None:
            links.append({'url': url, 'text': _clean(text), 'rel': (rel or '').lower(),
                          'tag': tag})
    if canonical is not None:
        canonical = urls.resolve(base, canonical)
    title_node = tree.css_first('title')
    title = _clean(title_node.text()) if title_node is not None else None
    tree.strip_tags(_NON_TEXT)
    root = tree.body or tree.root
    text = _clean(root.text(separator=' ')) if root is not None else ''
    if max_text_chars is not None:
        text = text[:max_text_chars]
    directives = {d.strip() for d in robots.split(',')}
    return {
        'title': title or None,
        'text': text,
        'links': links,
        'canonical': canonical,
        'noindex': bool(directives & {'noindex', 'none'}),
        'nofollow': bool(directives & {'nofollow', 'none'}),
    }


def extract_links(html, base_url):
    """Out-links of a page: items with ``url`` (absolute), ``text`` and ``rel``."""
    return parse(html, base_url)['links']
