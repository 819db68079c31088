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

SCHEMA_VERSION = '7'
_INVALID_XML_RE = re.compile(
    '[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def clean(text):
    """*text* with the characters XML 1.0 cannot hold removed."""
    if text is None:
        return ''
    return _INVALID_XML_RE.sub('', str(text))


_SubElement = etree.SubElement


def _bool(value):
    """'true', 'false' or None (the attribute left out) for a bool or None."""
    return None if value is None else 'true' if value else 'false'


def _sub(parent, tag, text=None, **attrs):
    """A child element: attributes whose value is None are left out, values that are
    not strings are converted, '' text stays an empty element (``<x/>``)."""
    return _el(parent, tag, _text(text), {k: v if isinstance(v, str) else str(v)
                                          for k, v in attrs.items() if v is not None})


def _el(parent, tag, text=None, attrib=None):
    """:func:`_sub` without the conversions: *attrib* holds strings only, *text* is a
    string or None. Most elements of a page are made here (links, anchors): one lxml
    call each, and the characters XML cannot hold removed only when lxml refuses one."""
    try:
        el = _SubElement(parent, tag, attrib) if attrib else _SubElement(parent, tag)
    except ValueError:      # a character XML cannot hold
        el = _SubElement(parent, tag, {k: clean(v) for k, v in attrib.items()})
    if text:
        try:
            el.text = text
        except ValueError:
            el.text = clean(text)
    return el


def _text(value):
    return value if isinstance(value, str) else '' if value is None else str(value)


def page_xml(page):
    """A ``merged`` record as one line of XML (str, no XML declaration)."""
    return page_xml_bytes(page).decode('utf-8')


def xml_key(url):
    """The key of an xml/ line: the URL as UTF-8 bytes with no TAB in it."""
    return clean(url).replace('\t', '%09').encode('utf-8')


def xml_key_value(page):
    """A ``merged`` record as a line of xml/: (URL, the page's XML), UTF-8 bytes with no
    line break in either, as MRHtmlToXml and MRMergeJoin's ``--xml-dir`` write them,
    TAB-separated."""
    return xml_key(page['url']), page_xml_bytes(page)


def doc_key_value(rec):
    """A ``merged`` or ``deletion`` record as a line of xml/ or delta/BUILD/xml: (URL,
    its XML document), as :func:`xml_key_value`."""
    if rec['kind'] == 'deletion':
        return xml_key(rec['url']), deletion_xml(rec).encode('utf-8')
    return xml_key_value(rec)


def page_xml_bytes(page):
    """A ``merged`` record as one line of XML: UTF-8 bytes, no XML declaration, no
    line break (those in text are character references). What MRHtmlToXml writes:
    serialising to bytes skips a decode and an encode of the page (~45 KB of text)."""
    root = etree.Element('page', version=SCHEMA_VERSION)
    _el(root, 'url', _text(page['url']))
    fetch = _sub(root, 'fetch', status=page.get('status'),
                 http_status=str(page.get('http_status') or ''),
                 time=page.get('fetch_time'), depth=str(page.get('depth', 0)),
                 layer=str(page.get('layer', 0)), parser=page.get('parser'),
                 tls_verified=_bool(page.get('tls_verified')))
    _el(fetch, 'content_type', _text(page.get('content_type')))
    _el(fetch, 'encoding', _text(page.get('encoding')))
    _el(fetch, 'length', str(page.get('length') or 0))
    _el(fetch, 'digest', _text(page.get('digest')))
    if page.get('simhash'):
        _el(fetch, 'simhash', _text(page['simhash']))
    if page.get('parse_error'):
        _el(fetch, 'parse_error', _text(page['parse_error']))
    _el(root, 'language', _text(page.get('language')))
    _el(root, 'title', _text(page.get('title')))
    _el(root, 'description', _text(page.get('description')))
    headings = _el(root, 'headings')
    for h in page.get('headings') or ():
        _el(headings, 'h', _text(h['text']), {'level': str(h['level'])})
    _el(root, 'text', _text(page.get('text')))
    _el(root, 'main_text', _text(page.get('main_text')))
    links = _el(root, 'links')
    for link in page.get('links') or ():
        rel = link.get('rel')
        _el(links, 'link', _text(link.get('text') or ''),
            {'href': _text(link['url']), 'rel': _text(rel)} if rel
            else {'href': _text(link['url'])})
    anchors = _el(root, 'anchors')
    for a in page.get('anchors') or ():
        _el(anchors, 'anchor', _text(a.get('text') or ''), {'from': _text(a['from'])})
    dups = _el(root, 'duplicates')
    near = set(page.get('near_duplicates') or ())
    canonical = set(page.get('canonical_duplicates') or ())
    for url in page.get('duplicates') or ():
        kind = 'near' if url in near else 'canonical' if url in canonical else None
        _sub(dups, 'url', url, kind=kind)
    if page.get('fields') is not None:
        _fields_xml(root, page)
    if page.get('resources'):
        _resources_xml(root, page['resources'])
    out = etree.tostring(root, encoding='UTF-8', xml_declaration=False)
    return out.replace(b'\r', b'&#13;').replace(b'\n', b'&#10;')


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
    """``<resources>``: one empty ``<resource>`` per secondary resource (merged
    records' ``resources``: name, url, status, content_type, length, digest,
    http_status, reason, truncated, and where the media store has its bytes and
    preview: stored, preview, width, height); never the bytes themselves."""
    el = _sub(root, 'resources')
    for r in resources:
        length = r.get('length')
        truncated = r.get('truncated')
        _sub(el, 'resource', name=r.get('name') or '', url=r['url'],
             status=r.get('status') or '', **{
                 'content-type': r.get('content_type'),
                 'length': str(length) if isinstance(length, int) and length >= 0 else None,
                 'digest': r.get('digest'),
                 'truncated': _bool(truncated),
                 'http-status': None if r.get('http_status') is None
                 else str(r['http_status']),
                 'reason': r.get('reason'), 'stored': r.get('stored'),
                 'preview': r.get('preview'), 'width': _pixels(r.get('width')),
                 'height': _pixels(r.get('height'))})


def _pixels(value):
    return str(value) if type(value) is int and value > 0 else None


def deletion_xml(rec):
    """A ``deletion`` record (jobs/delta.py: a page of the last cycle is no page now) as
    one line of XML."""
    root = etree.Element('deletion', version=SCHEMA_VERSION)
    if rec.get('reason'):
        root.set('reason', rec['reason'])
    _sub(root, 'url', rec['url'])
    if rec.get('duplicate_of'):
        _sub(root, 'duplicate_of', rec['duplicate_of'])
    _sub(root, 'fetch', http_status=str(rec.get('http_status') or ''),
         time=rec.get('fetch_time'))
    return etree.tostring(root, encoding='unicode')
