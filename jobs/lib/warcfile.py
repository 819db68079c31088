"""WARC/1.1 records from doc records, and the files they go into (warcio).

Pure helpers for jobs/warc.py (MRWarc); nothing here imports mrjob.

**What a doc record becomes** (:func:`plan`):

- ``fetched`` -> a ``response`` record (the final response of the URL's redirect chain,
  WARC-Target-URI = ``final_url``) and its ``request`` record (WARC-Concurrent-To the
  response). When the URL record carried ``prev`` (a re-crawl) and the body's digest
  equals ``prev.digest``, a ``revisit`` record (profile identical-payload-digest,
  WARC-Refers-To-Target-URI = the final URL, WARC-Refers-To-Date = ``prev.last_fetch``)
  replaces the response: HTTP headers only, no payload.
- ``not_modified`` (a 304 to a conditional request) -> ``revisit``, profile
  server-not-modified, with the 304's headers, plus its request.
- ``http_error`` -> ``response`` with the status line and headers; the fetcher does not
  read error bodies, so the payload is empty and the record says
  ``WARC-Truncated: unspecified``. The same for a 2xx of a type whose body the fetch
  did not keep (not HTML and not in ``fetch.keep_types``).
- everything else (network_error, robots_denied, filtered, deferred, redirected: no
  final response was received or kept) -> nothing; the job counts it as skipped.

Besides, as Heritrix does, every robots.txt response and every redirect (3xx) response
the fetch received is archived as a ``response`` record and its ``request`` record
(WARC-Concurrent-To the response), WARC-Target-URI the URL asked for: the doc record
whose fetch made the request carries them in ``warc_exchanges`` (with warc.enabled),
and they are written before its own records, also when the doc itself is skipped
(counters ``robots_txt_archived_total``, ``redirects_archived_total``). Their bodies
are the bytes read, within the same limits (robots.txt: 500 KiB, a redirect's:
``fetch.max_body_bytes``; ``WARC-Truncated: length`` past them); a robots.txt error's
body is not read (``WARC-Truncated: unspecified``). A doc's WARC position
(warc_record_offset) is that of its own final response or revisit, never of these.
Request headers that carry credentials (Authorization, Proxy-Authorization, Cookie)
are never written.

**The HTTP message is rebuilt, not the bytes from the wire.** The fetcher decompresses
(Content-Encoding) and de-chunks (Transfer-Encoding) bodies before anything is stored,
so the response record holds the decoded payload, the received headers without
Content-Encoding and Transfer-Encoding, and a Content-Length equal to the stored
payload. Heritrix instead writes the exact bytes received (still gzip-compressed and
chunked if the server sent them so), which is what WARC readers replay verbatim;
here replay tools see an uncompressed, identity-encoded response. The payload bytes are
the bytes the server's body decoded to: the fetcher keeps them as ``warc_body`` when the
stored text does not re-encode to them (lossy decoding), else they are the text
re-encoded with the doc's ``encoding``; WARC-Payload-Digest therefore equals the doc's
``digest``. A body cut at ``fetch.max_body_bytes`` is marked ``WARC-Truncated: length``.
The status line, the received headers and the request (method, path,
headers sent) come from the doc's ``http`` field, which the fetcher fills when
``warc.enabled`` is on; without it (a doc written with WARC off) they are rebuilt from
the doc's fields (reason phrase from the status code, the kept headers, the
configured User-Agent), and the job counts ``headers_rebuilt_total``.

Record ids are UUID5 of (file prefix, record type, URL, fetch time) and every date is
the fetch time, so a re-run of a task writes byte-identical files.
"""
import base64
import http.client
import io
import os
import tempfile
import uuid
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from jobs.lib import counters as C, encoding, httpio, records as R
from jobs.lib.taskfiles import commit_hdfs, commit_local, read_range

WARC_VERSION = 'WARC/1.1'
PROFILE_IDENTICAL = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest'
PROFILE_NOT_MODIFIED = 'http://netpreserve.org/warc/1.1/revisit/server-not-modified'
_DROPPED = ('content-encoding', 'transfer-encoding', 'content-length')
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, 'https://github.com/mrcrawl/mrcrawl/warc')

#: What :func:`plan` decides for a doc record.
RESPONSE = 'response'
REVISIT_IDENTICAL = 'revisit_identical'
REVISIT_NOT_MODIFIED = 'revisit_not_modified'


def plan(doc):
    """RESPONSE, REVISIT_IDENTICAL or REVISIT_NOT_MODIFIED for *doc*, or None (skip)."""
    status = doc.get('status')
    if status == R.FETCH_NOT_MODIFIED:
        return REVISIT_NOT_MODIFIED
    if status == R.FETCH_FETCHED:
        prev = doc.get('prev') or {}
        if doc.get('digest') and prev.get('digest') == doc['digest']:
            return REVISIT_IDENTICAL
        return RESPONSE
    if status == R.FETCH_HTTP_ERROR and doc.get('http_status'):
        return RESPONSE
    return None


def payload(doc):
    """``(bytes or None, verbatim)``: the body bytes as received, or None when the fetch
    did not keep the body. *verbatim* is False when they could only be rebuilt from
    lossy text (a doc fetched with WARC off): their digest then differs from the doc's."""
    for field in ('warc_body', 'raw_body'):
        if doc.get(field) is not None:
            return base64.b64decode(doc[field]), True
    body = doc.get('body')
    if body is None:
        return None, True
    data = encoding.encode(body, doc.get('encoding'))
    if data is None:
        data = body.encode('utf-8')
    return data, doc.get('digest') in (None, R.digest(data))


def response_headers(doc, length):
    """warcio StatusAndHeaders of *doc*'s final response; Content-Length = *length*
    (None: no Content-Length, for a server-not-modified revisit). Returns
    ``(headers, rebuilt)``: *rebuilt* when the doc had no ``http`` field."""
    exchange = doc.get('http')
    code = int(doc.get('http_status') or 200)
    if exchange:
        protocol, reason = exchange.get('version') or 'HTTP/1.1', exchange.get('reason', '')
        received = [(k, v) for k, v in exchange.get('headers') or ()]
    else:
        protocol, reason = 'HTTP/1.1', http.client.responses.get(code, '')
        received = []
        if doc.get('content_type'):
            ctype = doc['content_type']
            if doc.get('encoding'):
                ctype += '; charset=' + doc['encoding']
            received.append(('Content-Type', ctype))
        received += [(k, v) for k, v in sorted((doc.get('headers') or {}).items())]
    headers = [(k, v) for k, v in received if k.lower() not in _DROPPED]
    if length is not None:
        headers.append(('Content-Length', str(length)))
    statusline = ('%d %s' % (code, reason)).rstrip()
    return StatusAndHeaders(statusline, headers, protocol=protocol), not exchange


def request_headers(doc, user_agent):
    """warcio StatusAndHeaders of the request that got *doc*'s final response; the Host
    header is the final URL's (urllib3 adds it on the wire, requests does not list it)."""
    url = doc.get('final_url') or doc['url']
    parts = urlsplit(url)
    exchange = (doc.get('http') or {}).get('request')
    if exchange:
        method, path = exchange.get('method') or 'GET', exchange.get('path') or '/'
        sent = [(k, v) for k, v in exchange.get('headers') or () if k.lower() != 'host'
                and k.lower() not in httpio.SECRET_REQUEST_HEADERS]
    else:
        method = 'GET'
        path = (parts.path or '/') + ('?' + parts.query if parts.query else '')
        sent = [('User-Agent', user_agent)]
    return StatusAndHeaders('%s %s HTTP/1.1' % (method, path), [('Host', parts.netloc)] + sent,
                            is_http_request=True)


def record_id(prefix, kind, doc):
    key = '%s %s %s %s' % (prefix, kind, doc.get('final_url') or doc['url'],
                           doc.get('fetch_time'))
    return '<urn:uuid:%s>' % uuid.uuid5(_NAMESPACE, key)


class WarcFile:
    """One WARC file (gzip per record, so any record can be read by offset and length).

    Written to a local file (*path*) as records come; :meth:`close` returns its size.
    """

    def __init__(self, path, name, prefix, info):
        self.path, self.name, self.prefix = path, name, prefix
        self.f = open(path, 'wb')
        self.writer = WARCWriter(self.f, gzip=True, warc_version=WARC_VERSION)
        self.info = info
        self.started = False

    def _write(self, record):
        start = self.f.tell()
        self.writer.write_record(record)
        return start, self.f.tell() - start

    def _warcinfo(self, date):
        fields = ''.join('%s: %s\r\n' % kv for kv in self.info.items() if kv[1])
        data = fields.encode('utf-8')
        headers = {'WARC-Record-ID': record_id(self.prefix, 'warcinfo',
                                               {'url': self.name, 'fetch_time': date}),
                   'WARC-Date': date, 'WARC-Filename': self.name}
        rec = self.writer.create_warc_record('', 'warcinfo', payload=io.BytesIO(data),
                                             length=len(data), warc_headers_dict=headers)
        return self._write(rec)

    def add(self, doc, user_agent, kind):
        """Write *doc*'s records as *kind* (what :func:`plan` decided for it; None: only
        the robots.txt and redirect responses it carries, ``warc_exchanges``). Returns a
        dict: kind, offset and length of the response/revisit record, records written by
        type, exchanges archived by kind, rebuilt, verbatim, truncated (by value)."""
        out = {'kind': kind, 'types': {}, 'verbatim': True, 'truncated': None,
               'exchanges': {}, 'exchanges_truncated': {}}
        date = doc.get('fetch_time') or R.now_iso()
        if not self.started:
            self.started = True
            self._warcinfo(date)
            out['types']['warcinfo'] = 1
        for i, exchange in enumerate(doc.get('warc_exchanges') or ()):
            self._add_exchange(doc, i, exchange, user_agent, out)
        if kind is None:
            return out
        uri = doc.get('final_url') or doc['url']
        rid = record_id(self.prefix, kind, doc)
        warc_headers = {'WARC-Record-ID': rid, 'WARC-Date': date}
        if kind != RESPONSE:
            identical = kind == REVISIT_IDENTICAL
            http_headers, rebuilt = response_headers(
                doc, (doc.get('length') or 0) if identical else None)
            warc_headers.update({
                'WARC-Profile': PROFILE_IDENTICAL if identical else PROFILE_NOT_MODIFIED,
                'WARC-Refers-To-Target-URI': uri})
            if identical:
                warc_headers['WARC-Payload-Digest'] = doc['digest']
            last = (doc.get('prev') or {}).get('last_fetch')
            if last:
                warc_headers['WARC-Refers-To-Date'] = last
            rec = self.writer.create_warc_record(uri, 'revisit', http_headers=http_headers,
                                                 warc_headers_dict=warc_headers)
        else:
            data, out['verbatim'] = payload(doc)
            if data is None:
                out['truncated'] = 'unspecified'     # the fetch never read this body
                data = b''
            elif doc.get('truncated'):
                out['truncated'] = 'length'
            if out['truncated']:
                warc_headers['WARC-Truncated'] = out['truncated']
            http_headers, rebuilt = response_headers(doc, len(data))
            rec = self.writer.create_warc_record(uri, 'response', payload=io.BytesIO(data),
                                                 length=len(data), http_headers=http_headers,
                                                 warc_headers_dict=warc_headers)
        offset, length = self._write(rec)
        rtype = 'revisit' if kind != RESPONSE else 'response'
        out['types'][rtype] = out['types'].get(rtype, 0) + 1
        req_headers = request_headers(doc, user_agent)
        req = self.writer.create_warc_record(uri, 'request', http_headers=req_headers,
                                             warc_headers_dict={
                                                 'WARC-Record-ID': record_id(
                                                     self.prefix, 'request', doc),
                                                 'WARC-Date': date,
                                                 'WARC-Concurrent-To': rid})
        self._write(req)
        out['types']['request'] = out['types'].get('request', 0) + 1
        out.update(offset=offset, length=length, rebuilt=rebuilt)
        return out

    def _add_exchange(self, doc, i, exchange, user_agent, out):
        """The *i*-th robots.txt or redirect response *doc* carries, and its request."""
        uri = exchange['url']
        date = exchange.get('fetch_time') or doc.get('fetch_time') or R.now_iso()
        # As a doc of its own, for the header helpers; ids also name the doc and i.
        ex = {'url': uri, 'final_url': uri, 'http_status': exchange.get('http_status'),
              'http': exchange.get('http'), 'fetch_time': date,
              'raw_body': exchange.get('body')}
        key = {'url': '%s %s %d' % (uri, doc['url'], i), 'fetch_time': date}
        data, _ = payload(ex)
        kind = exchange.get('kind', 'exchange')
        rid = record_id(self.prefix, kind, key)
        warc_headers = {'WARC-Record-ID': rid, 'WARC-Date': date}
        truncated = 'unspecified' if data is None else \
            'length' if exchange.get('truncated') else None
        if truncated:
            warc_headers['WARC-Truncated'] = truncated
            out['exchanges_truncated'][truncated] = \
                out['exchanges_truncated'].get(truncated, 0) + 1
        data = data or b''
        http_headers, _ = response_headers(ex, len(data))
        self._write(self.writer.create_warc_record(
            uri, 'response', payload=io.BytesIO(data), length=len(data),
            http_headers=http_headers, warc_headers_dict=warc_headers))
        self._write(self.writer.create_warc_record(
            uri, 'request', http_headers=request_headers(ex, user_agent),
            warc_headers_dict={'WARC-Record-ID': record_id(self.prefix, 'request', key),
                               'WARC-Date': date, 'WARC-Concurrent-To': rid}))
        for rtype in ('response', 'request'):
            out['types'][rtype] = out['types'].get(rtype, 0) + 1
        out['exchanges'][kind] = out['exchanges'].get(kind, 0) + 1

    def close(self):
        self.f.close()
        return os.path.getsize(self.path)


class Sink:
    """One task's WARC file: opened at the first record worth archiving, written under a
    temporary name (in the task's working folder for an ``hdfs://`` *folder*), moved
    into place by :meth:`commit` (a retried attempt's file replaces its predecessor's).
    *count(name, n)* receives the counters."""

    def __init__(self, folder, name, prefix, info, count, webhdfs_url=None, user=None,
                 name_base='warc'):
        self.folder, self.name, self.prefix, self.info = folder, name, prefix, info
        self.count = count
        self.webhdfs_url, self.user = webhdfs_url, user
        self.remote = folder.startswith('hdfs://')
        self.filename = '%s/%s' % (name_base, name)
        self.warc = self.tmp_path = None

    def add(self, doc, user_agent):
        """Archive *doc* if :func:`plan` says so: its pointer ``{warc_filename,
        warc_record_offset, warc_record_length, warc_type}``, else None (counted
        ``skipped_<status>_total``)."""
        kind = plan(doc)
        if kind is None:
            self.count(C.per('skipped', doc.get('status') or 'unknown'), 1)
            if not doc.get('warc_exchanges'):
                return None
        if self.warc is None:
            if self.remote:
                fd, self.tmp_path = tempfile.mkstemp(prefix='warc-', suffix='.warc.gz',
                                                     dir='.')
                os.close(fd)
            else:
                os.makedirs(self.folder, exist_ok=True)
                self.tmp_path = os.path.join(self.folder, '.tmp-' + self.name)
            self.warc = WarcFile(self.tmp_path, self.name, self.prefix, self.info)
        done = self.warc.add(doc, user_agent, kind)
        for rtype, n in done['types'].items():
            self.count(C.per('records', rtype), n)
        for what, n in done['exchanges'].items():
            self.count({'robots': C.WARC_ROBOTS_ARCHIVED,
                        'redirect': C.WARC_REDIRECTS_ARCHIVED}[what], n)
        for value, n in done['exchanges_truncated'].items():
            self.count(C.per('truncated', value), n)
        if kind is None:
            return None
        if done['rebuilt']:
            self.count(C.WARC_HEADERS_REBUILT, 1)
        if not done['verbatim']:
            self.count(C.WARC_PAYLOAD_NOT_VERBATIM, 1)
        if done['truncated']:
            self.count(C.per('truncated', done['truncated']), 1)
        self.count(done['kind'] + '_total', 1)
        return {'warc_filename': self.filename, 'warc_record_offset': done['offset'],
                'warc_record_length': done['length'],
                'warc_type': 'response' if done['kind'] == RESPONSE else 'revisit'}

    def commit(self):
        """Close the file and move it into place; nothing if no record was written."""
        if self.warc is None:
            return
        size = self.warc.close()
        if self.remote:
            commit_hdfs(self.tmp_path, self.folder, self.name, self.webhdfs_url, self.user)
        else:
            commit_local(self.tmp_path, self.folder, self.name)
        self.count(C.WARC_FILES, 1)
        self.count(C.WARC_BYTES, size)
        self.warc = None


SOFTWARE = 'mrcrawl/0.1 (warcio)'


def read_payload(root, pointer, webhdfs_url=None, user=None):
    """The HTTP payload of the record *pointer* names ({warc_filename, warc_record_offset,
    warc_record_length}; the file name relative to the crawl folder *root*, a local path
    or an hdfs:// URI read through WebHDFS) and its Content-Type header: (bytes, str or
    None), or None if it is not a response."""
    chunk = read_range(root, pointer['warc_filename'], pointer['warc_record_offset'],
                       pointer['warc_record_length'], webhdfs_url, user)
    for rec in ArchiveIterator(io.BytesIO(chunk)):
        if rec.rec_type != 'response':
            return None
        ctype = rec.http_headers.get_header('Content-Type') if rec.http_headers else None
        return rec.content_stream().read(), ctype
    return None


def warcinfo(prefix, user_agent, obey_robots):
    """The warcinfo fields of a crawl's WARC files."""
    return {'software': SOFTWARE, 'format': 'WARC File Format 1.1',
            'conformsTo': 'https://iipc.github.io/warc-specifications/specifications/'
                          'warc-format/warc-1.1/',
            'isPartOf': prefix, 'robots': 'obey' if obey_robots else 'ignore',
            'http-header-user-agent': user_agent}


def file_name(prefix, input_file, start):
    """``PREFIX-part-00000-0.warc.gz`` for the map split of *input_file* at byte *start*."""
    base = input_file.rstrip('/').rsplit('/', 1)[-1]
    for ext in ('.gz', '.bz2', '.json'):
        if base.endswith(ext):
            base = base[:-len(ext)]
    return '%s-%s-%s.warc.gz' % (prefix, base, int(start or 0))
