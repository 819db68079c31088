"""A crawl's pages as Solr documents, and their posting (``mrcrawl index``).

:func:`document` makes one Solr document of a ``merged`` record (merged/, or a delta's
records/), in the schema of conf/solr/mrcrawl: the page's URL is its ``id``; its site
fields (``[fields]`` of a site file) become typed dynamic fields, NAME plus a suffix for
its type (:data:`SUFFIX`: a float ``price`` is ``price_d``, a date ``released_dt``).

:class:`Poster` sends batches of added documents and of deleted ids to a core's
``/update`` handler: at most ``solr.max_batches_per_second`` batches a second per task,
retried with back-off on 429, 5xx and network errors (Retry-After honoured). A batch
that Solr refuses (a 400: a document it cannot take) is sent again one document at a
time, so that only the documents at fault are lost, each counted and named in the log.
"""
import json
import re
import time
import urllib.parse

import requests

from jobs.lib import counters as C, secretref

#: The dynamic field suffix of each site field type (jobs.lib.sites.FIELD_TYPES).
SUFFIX = {'text': '_t', 'int': '_l', 'float': '_d', 'date': '_dt', 'list': '_ss',
          'url': '_s'}

_NAME_RE = re.compile(r'[^A-Za-z0-9_]')
_DATE_RE = re.compile(r'^\d{4}-\d{2}-\d{2}$')


def site_types(conf):
    """``{(site, field): type}`` of the crawl's site files (``conf['sites']``)."""
    return {(spec['name'], name): field.get('type', 'text')
            for spec in conf.get('sites') or () for name, field in spec['fields'].items()}


def _value_type(value):
    """A field's type from its value, for a site no longer configured."""
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        return 'text'
    return 'list' if isinstance(value, list) else 'int' if isinstance(value, int) \
        else 'float'


def _site_fields(rec, types):
    out = {}
    for name, value in (rec.get('fields') or {}).items():
        if value is None or value == []:
            continue
        ftype = types.get((rec.get('site'), name)) or _value_type(value)
        if ftype == 'date':
            if not (isinstance(value, str) and _DATE_RE.match(value)):
                continue
            value += 'T00:00:00Z'
        out[_NAME_RE.sub('_', name) + SUFFIX[ftype]] = value
    return out


def document(rec, build, crawl, types, started=None):
    """The Solr document of merged record *rec*, indexed from *build* (the base's or a
    delta's name) of crawl *crawl* (its folder) that *started* then (its first cycle's
    time: a folder crawled anew is another crawl); *types*: :func:`site_types`."""
    main = rec.get('main_text') or rec.get('text') or ''
    doc = {'id': rec['url'], 'url': rec['url'], 'crawl': crawl, 'build': build,
           'crawl_started': started,
           'host': (urllib.parse.urlsplit(rec['url']).hostname or ''),
           'title': rec.get('title') or '', 'description': rec.get('description') or '',
           'text': main, 'lang': rec.get('language') or '',
           'headings': [h['text'] for h in rec.get('headings') or () if h.get('text')],
           'anchors': [a['text'] for a in rec.get('anchors') or () if a.get('text')],
           'content_type': rec.get('content_type') or '', 'status': rec.get('status') or '',
           'fetched_at': rec.get('fetch_time'), 'layer': rec.get('layer'),
           'digest': rec.get('digest'), 'canonical': rec.get('canonical'),
           'out_links': len(rec.get('links') or ()),
           'warc_file': rec.get('warc_filename'), 'warc_offset': rec.get('warc_record_offset'),
           'warc_length': rec.get('warc_record_length'), 'tls_verified': rec.get('tls_verified'),
           'site': rec.get('site')}
    if isinstance(rec.get('http_status'), int):
        doc['http_status'] = rec['http_status']
    doc.update(_site_fields(rec, types))
    return {k: v for k, v in doc.items() if v is not None and v != []}


class SolrRefused(Exception):
    """Solr kept failing a request past the retries: the task fails (and is retried)."""


class Poster:
    """Posts to *url* (a core's or a collection's, references expanded here) with the
    ``[solr]`` settings *conf*; *count* (name, n) counts what happened, *warn* (line) is
    told of each refused document."""

    def __init__(self, url, conf, count, warn):
        self.base = secretref.expand(url).rstrip('/')
        self.update_url = self.base + '/update'
        self.conf, self.count, self.warn = conf, count, warn
        self.session = requests.Session()
        self.session.trust_env = False       # the index, never a proxy of the user's
        self.gap = 1.0 / conf['max_batches_per_second']
        self.next_at = 0.0

    def add(self, docs):
        if docs and not self._post(docs, refusable=True):
            for doc in docs:                # find the documents at fault
                if self._post([doc], refusable=True):
                    self.count(C.SOLR_ADDED, 1)
        elif docs:
            self.count(C.SOLR_ADDED, len(docs))

    def delete(self, ids):
        if ids:
            self._post({'delete': ids}, refusable=False)
            self.count(C.SOLR_DELETED, len(ids))

    def _post(self, body, refusable):
        """Send *body*: True once Solr took it, False if it refused it (400) and
        *refusable*; SolrRefused past the retries."""
        data = json.dumps(body).encode('utf-8')
        for attempt in range(self.conf['max_retries'] + 1):
            time.sleep(max(0.0, self.next_at - time.monotonic()))
            self.next_at = time.monotonic() + self.gap
            wait, why = self.conf['retry_backoff'] * 2 ** attempt, None
            try:
                resp = self.session.post(self.update_url, data=data,
                                         timeout=self.conf['timeout'],
                                         headers={'Content-Type': 'application/json'})
            except requests.RequestException as e:
                why = 'network_' + type(e).__name__.lower()
            else:
                if resp.status_code == 200:
                    self.count(C.SOLR_BATCHES, 1)
                    return True
                if resp.status_code == 400 and refusable:
                    if isinstance(body, list) and len(body) == 1:
                        self.count(C.SOLR_REFUSED, 1)
                        self.warn('solr refused %s: %s' % (body[0]['id'], _error(resp)))
                    return False
                if resp.status_code != 429 and resp.status_code < 500:
                    raise SolrRefused('solr answered %d to %s: %s' % (
                        resp.status_code, safe_url(self.update_url), _error(resp)))
                why = 'http_%d' % resp.status_code
                wait = max(wait, _retry_after(resp))
            if attempt < self.conf['max_retries']:
                self.count(C.per('retries', why), 1)
                time.sleep(wait)
        raise SolrRefused('solr at %s failed %d times (%s)' % (
            safe_url(self.update_url), self.conf['max_retries'] + 1, why))

    def commit(self):
        self._post({'commit': {}}, refusable=False)

    def delete_query(self, query):
        self._post({'delete': {'query': query}}, refusable=False)

    def found(self, query):
        """How many documents *query* finds (a filter query over every document)."""
        resp = self.session.get(self.base + '/select', params={
            'q': '*:*', 'fq': query, 'rows': 0, 'wt': 'json'}, timeout=self.conf['timeout'])
        if resp.status_code != 200:
            raise SolrRefused('solr answered %d to a search at %s: %s' % (
                resp.status_code, safe_url(self.update_url), _error(resp)))
        return resp.json()['response']['numFound']


def quoted(value):
    """*value* as a Solr query term (a phrase)."""
    return '"%s"' % value.replace('\\', '\\\\').replace('"', '\\"')


def _retry_after(resp):
    try:
        return min(float(resp.headers.get('Retry-After', 0)), 300.0)
    except ValueError:
        return 0.0


def _error(resp):
    """Solr's error message, one line."""
    try:
        msg = resp.json()['error']['msg']
    except (ValueError, KeyError, TypeError):
        msg = resp.text[:200]
    return ' '.join(str(msg).split())[:300]


def safe_url(url):
    """*url* without its user and password."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ''
    if parts.port:
        host += ':%d' % parts.port
    return urllib.parse.urlunsplit(parts._replace(netloc=host))

