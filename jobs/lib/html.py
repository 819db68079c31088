"""HTML parsing for the parse job: links, title, text, robots directives.

Parsing is HTML5 tree construction by Lexbor (through selectolax), so malformed HTML
becomes the tree a browser would build. Links are resolved per the WHATWG URL standard
against ``<base href>`` (first one, itself resolved against the page URL) or the page.
"""
import re

from selectolax.lexbor import LexborHTMLParser

from jobs.lib import urls

_LINK_SELECTOR = ('a[href], area[href], frame[src], iframe[src], link[href], '
                  'meta[http-equiv], meta[name], meta[property], base[href]')
_HEADINGS = 'h1, h2, h3, h4, h5, h6'
#: Headings kept per page, and characters per heading.
MAX_HEADINGS = 200
MAX_HEADING_CHARS = 500
MAX_DESCRIPTION_CHARS = 2000
_REFRESH_URL_RE = re.compile(r'^\s*\d*(?:\.\d*)?\s*[;,]?\s*(?:url\s*=\s*)?(.*)$', re.I | re.S)
_NON_TEXT = ['script', 'style', 'noscript', 'template', 'svg', 'head']
_NON_TEXT_SELECTOR = ', '.join(_NON_TEXT[:-1])
_MISS = object()


def _clean(text):
    # str.split() splits on the whitespace \s matches, and is several times faster.
    return ' '.join(text.split()) if text else ''


def _refresh_target(content):
    m = _REFRESH_URL_RE.match(content or '')
    target = m.group(1).strip().strip('\'"') if m else ''
    return target or None


#: Elements nested deeper than this are flattened before parsing (browsers cap the
#: tree's depth the same way: Chrome at 512).
MAX_NESTING = 512
#: Pages with fewer tags than this are never scanned: they cannot nest deep enough
#: to cost more than about a second.
_NESTING_SCAN_TAGS = 20000
#: Tags that open an element which can nest: not void, no implied end tag, not <a>.
_NOT_NESTING = (r'(?:a|area|base|br|col|embed|hr|img|input|link|meta|source|track|wbr|'
                r'param|keygen|frame|p|li|dt|dd|option|optgroup|tr|td|th|rb|rt|rp|tbody|'
                r'thead|tfoot|colgroup|caption)')
_NESTING_TAG_RE = re.compile(r'<(/?)(?!%s[\s/>])[a-z]' % _NOT_NESTING, re.I)
#: The same on the page's UTF-8 bytes lower-cased (ASCII only, as HTML tag names are):
#: 2.5x faster than re.I on str, whose case folding also lets a few non-ASCII letters
#: (U+017F, U+212A) start a tag, which the HTML tokenizer never does.
_NESTING_TAG_BYTES_RE = re.compile(
    (r'<(/?)(?!%s[\t\n\f\r />])[a-z]' % _NOT_NESTING).encode('ascii'))


def limit_nesting(html, max_depth=MAX_NESTING, scan_tags=_NESTING_SCAN_TAGS):
    """*html* with the start tags that would nest deeper than *max_depth* removed.

    Lexbor's tree construction walks the stack of open elements for every block start
    tag (the HTML5 "p element in button scope" check), so 100 000 nested ``<div>``s
    take minutes; a 4 MiB page can hold 800 000. The depth here is counted on the raw
    tags (an upper bound for ordinary pages); pages that stay under it are unchanged,
    and so are pages with at most *scan_tags* ``<`` (they are not scanned).
    """
    if html.count('<') <= scan_tags:
        return html
    depth = deepest = 0
    for slash in _NESTING_TAG_BYTES_RE.findall(html.encode('utf-8', 'surrogatepass').lower()):
        if slash:
            depth = depth - 1 if depth else 0
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
    if deepest <= max_depth:
        return html
    out, pos, depth = [], 0, 0
    for m in _NESTING_TAG_RE.finditer(html):
        if m.start() < pos:
            continue
        if m.group(1):
            depth = depth - 1 if depth else 0
        elif depth < max_depth:
            depth += 1
        else:
            end = html.find('>', m.start())
            out.append(html[pos:m.start()])
            pos = len(html) if end == -1 else end + 1
    out.append(html[pos:])
    return ''.join(out)


def tree(html):
    """The page's HTML5 tree (Lexbor), to share between extraction and :func:`parse`."""
    return LexborHTMLParser(limit_nesting(html))


def parse(html, base_url, max_text_chars=None, tree=None, headings=True, encoding=None):
    """Parse one page. Returns a dict:

    title (str|None), text (str), links (list of {url, text, rel, tag}, resolved,
    in document order; ``url`` may be any scheme: filtering is the caller's),
    canonical (str|None), noindex (bool), nofollow (bool: the page's meta robots),
    description (str|None: ``<meta name=description>``, else ``og:description``),
    headings (list of {level: 1..6, text}, in document order, at most MAX_HEADINGS).
    A *tree* from :func:`tree` is used instead of parsing *html* again; it is changed
    (non-text elements removed), so run other queries on it first. With
    ``headings=False`` the headings are not collected (an empty list). *encoding*: the
    document's, for the non-ASCII characters of its links' queries (URL standard).
    """
    if tree is None:
        tree = LexborHTMLParser(limit_nesting(html))
    # The document's base URL is its first <base href>, wherever it stands. The parser
    # puts every <base> before <body> into <head>, so looking there first is enough;
    # a <base> in the body is rare and is found by the link scan, which then reruns.
    head = tree.head
    base_node = (head if head is not None else tree).css_first('base[href]')
    base = base_url
    if base_node is not None:
        base = urls.resolve(base_url, base_node.attributes.get('href')) or base_url
    scan = _scan(tree, base, head is not None and base_node is None, encoding)
    if scan[-1] is not None:
        base = urls.resolve(base_url, scan[-1]) or base_url
        scan = _scan(tree, base, False, encoding)
    links, canonical, robots, description, og_description, _ = scan
    if canonical is not None:
        canonical = urls.resolve(base, canonical)
    title_node = tree.css_first('title')
    title = _clean(title_node.text()) if title_node is not None else None
    want_headings = headings
    headings = []
    for node in tree.css(_HEADINGS) if want_headings else ():
        text = _clean(node.text(deep=True, separator=' '))
        if text:
            headings.append({'level': int(node.tag[1]), 'text': text[:MAX_HEADING_CHARS]})
            if len(headings) >= MAX_HEADINGS:
                break
    root = tree.body
    if root is not None:
        # One pass over the body, not one per tag over the whole tree; in reverse
        # document order, so an element inside another (<script> in <svg>) goes first.
        for node in reversed(root.css(_NON_TEXT_SELECTOR)):
            node.decompose()
    else:     # no <body> (a frameset): the whole tree, head stripped
        tree.strip_tags(_NON_TEXT)
        root = tree.root
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
        'description': description or og_description or None,
        'headings': headings,
    }


def _scan(tree, base, watch_base, encoding=None):
    """One pass over the link-bearing elements: (links, canonical href, meta robots,
    description, og:description, href of a <base> found in the body when *watch_base*
    (the caller then scans again with it), else None."""
    resolve = urls.PageResolver(base, encoding)
    links = []        # one pass, in document order
    canonical = None
    robots = ''
    description = og_description = None
    known = resolve.cache.get     # a repeated href costs a dict look-up, not a call
    for node in tree.css(_LINK_SELECTOR):
        tag = node.tag
        attrs = node.attributes
        if tag == 'a':
            href = attrs.get('href')
            url = known(href, _MISS)
            if url is _MISS:
                url = resolve(href)
            if url is not None:
                rel = attrs.get('rel')
                text = node.text(deep=True, separator=' ')
                links.append({'url': url, 'text': ' '.join(text.split()) if text else '',
                              'rel': rel.lower() if rel else '', 'tag': tag})
        elif tag == 'area':
            url = resolve(attrs.get('href'))
            if url is not None:
                rel = attrs.get('rel')
                links.append({'url': url, 'text': _clean(attrs.get('alt')),
                              'rel': rel.lower() if rel else '', 'tag': tag})
        elif tag == 'frame' or tag == 'iframe':
            url = resolve(attrs.get('src'))
            if url is not None:
                links.append({'url': url, 'text': '', 'rel': '', 'tag': tag})
        elif tag == 'base':
            if watch_base:     # the document's first <base>, in the body: start again
                return [], None, '', None, None, attrs.get('href')
        elif tag == 'link':
            rel = (attrs.get('rel') or '').lower().split()
            if 'canonical' in rel and canonical is None:
                canonical = attrs.get('href')
        elif tag == 'meta':
            name = (attrs.get('name') or '').lower()
            equiv = (attrs.get('http-equiv') or '').lower()
            if name == 'robots':
                robots += ',' + (attrs.get('content') or '').lower()
            elif name == 'description' and description is None:
                description = _clean(attrs.get('content'))[:MAX_DESCRIPTION_CHARS]
            elif (attrs.get('property') or '').lower() == 'og:description' \
                    and og_description is None:
                og_description = _clean(attrs.get('content'))[:MAX_DESCRIPTION_CHARS]
            elif equiv == 'refresh':
                url = resolve(_refresh_target(attrs.get('content')))
                if url is not None:
                    links.append({'url': url, 'text': '', 'rel': '', 'tag': 'meta'})
    return links, canonical, robots, description, og_description, None


def extract_links(html, base_url):
    """Out-links of a page: items with ``url`` (absolute), ``text`` and ``rel``.

    The page is parsed as :func:`parse` does (title and text included), but headings,
    which only the XML needs, are not collected."""
    return parse(html, base_url, headings=False)['links']
