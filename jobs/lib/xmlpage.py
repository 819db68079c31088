"""The one-line XML document per page that xml/ holds (schema: conf/page.xsd).

Built with lxml, so markup and ``]]>`` in text are escaped; characters XML 1.0 forbids
(controls, lone surrogates, U+FFFE/U+FFFF) are removed, and line breaks in text become
character references so that each document stays on one line. lxml refuses every such
character when a value is set (a ValueError, checked in C as it converts the value);
only then is the value cleaned by the regular expression, which cost a third of the
xml job's CPU when every value went through it.
"""
import re

from lxml import etree

SCHEMA_VERSION = '3'
_INVALID_XML_RE = re.compile(
    '[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def clean(text):
    """*text* with the characters XML 1.0 cannot hold removed."""
    if text is None:
        return ''
    return _INVALID_XML_RE.sub('', str(text))


def _sub(parent, tag, text=None, **attrs):
    el = etree.SubElement(parent, tag)
    for k, v in attrs.items():
        if v is not None:
            v = v if isinstance(v, str) else str(v)
            try:
                el.set(k, v)
            except ValueError:      # a character XML cannot hold
                el.set(k, clean(v))
    if text is not None and text != '':     # '' stays an empty element, <x/>
        text = text if isinstance(text, str) else str(text)
        try:
            el.text = text
        except ValueError:
            el.text = clean(text)
    return el


def page_xml(page):
    """A ``merged`` record as one line of XML (str, no XML declaration)."""
    root = etree.Element('page', version=SCHEMA_VERSION)
    _sub(root, 'url', page['url'])
    fetch = _sub(root, 'fetch', status=page.get('status'),
                 http_status=str(page.get('http_status') or ''),
                 time=page.get('fetch_time'), depth=str(page.get('depth', 0)),
                 layer=str(page.get('layer', 0)))
    _sub(fetch, 'content_type', page.get('content_type') or '')
    _sub(fetch, 'encoding', page.get('encoding') or '')
    _sub(fetch, 'length', str(page.get('length') or 0))
    _sub(fetch, 'digest', page.get('digest') or '')
    if page.get('simhash'):
        _sub(fetch, 'simhash', page['simhash'])
    _sub(root, 'language', page.get('language') or '')
    _sub(root, 'title', page.get('title') or '')
    _sub(root, 'description', page.get('description') or '')
    headings = _sub(root, 'headings')
    for h in page.get('headings') or ():
        _sub(headings, 'h', h['text'], level=str(h['level']))
    _sub(root, 'text', page.get('text') or '')
    _sub(root, 'main_text', page.get('main_text') or '')
    links = _sub(root, 'links')
    for link in page.get('links') or ():
        _sub(links, 'link', link.get('text') or '', href=link['url'],
             rel=link.get('rel') or None)
    anchors = _sub(root, 'anchors')
    for a in page.get('anchors') or ():
        _sub(anchors, 'anchor', a.get('text') or '', **{'from': a['from']})
    dups = _sub(root, 'duplicates')
    near = set(page.get('near_duplicates') or ())
    canonical = set(page.get('canonical_duplicates') or ())
    for url in page.get('duplicates') or ():
        kind = 'near' if url in near else 'canonical' if url in canonical else None
        _sub(dups, 'url', url, kind=kind)
    if page.get('fields') is not None:
        _fields_xml(root, page)
    if page.get('resources'):
        _resources_xml(root, page['resources'])
    out = etree.tostring(root, encoding='unicode')
    return out.replace('\r', '&#13;').replace('\n', '&#10;')


def _field_type(value):
    if isinstance(value, bool):
        return 'text'
    if isinstance(value, int):
        return 'int'
    if isinstance(value, float):
        return 'float'
    if isinstance(value, list):
        return 'list'
    return 'text'


def _fields_xml(root, page):
    """``<fields site= checksum=>``: a site page's extracted fields (conf/sites)."""
    fields = _sub(root, 'fields', site=page.get('site'), checksum=page.get('fields_checksum'))
    for name, value in page['fields'].items():
        if value is None:
            _sub(fields, 'field', name=name, null='true')
        elif isinstance(value, list):
            el = _sub(fields, 'field', name=name, type='list')
            for item in value:
                _sub(el, 'item', item)
        else:
            _sub(fields, 'field', value, name=name, type=_field_type(value))


def _resources_xml(root, resources):
    """``<resources>``: one empty ``<resource>`` per secondary resource, metadata only
    (merged records' ``resources``: name, url, status, content_type, length, digest,
    http_status, reason, truncated); never the resource's bytes."""
    el = _sub(root, 'resources')
    for r in resources:
        length = r.get('length')
        truncated = r.get('truncated')
        _sub(el, 'resource', name=r.get('name') or '', url=r['url'],
             status=r.get('status') or '', **{
                 'content-type': r.get('content_type'),
                 'length': str(length) if isinstance(length, int) and length >= 0 else None,
                 'digest': r.get('digest'),
                 'truncated': None if truncated is None else 'true' if truncated else 'false',
                 'http-status': None if r.get('http_status') is None
                 else str(r['http_status']),
                 'reason': r.get('reason')})


def deletion_xml(rec):
    """A ``deletion`` record (a re-crawl found the page gone) as one line of XML."""
    root = etree.Element('deletion', version=SCHEMA_VERSION)
    _sub(root, 'url', rec['url'])
    _sub(root, 'fetch', http_status=str(rec.get('http_status') or ''),
         time=rec.get('fetch_time'))
    return etree.tostring(root, encoding='unicode')
