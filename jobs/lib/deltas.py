"""What changed between two builds of a crawl's outputs, URL by URL: the rules that
jobs/delta.py (MRDelta) and jobs/merge_join.py (MRMergeJoin with --delta-dir) share.

A URL's delta is decided from four facts: its merged record in the new build (if it is
a page now), the signature of its merged record in the previous build (if it was one),
its current fetch (why it may be no page now) and the page it is folded into now (if
any). See :func:`outcome`.

Pure helper; nothing here imports mrjob.
"""
import hashlib

import orjson

from jobs.lib import counters as C, records as R

#: What an index sees of a merged record: the fields its XML document carries
#: (jobs/lib/xmlpage.py page_xml) but the fetch's time and place (fetch_time, layer,
#: depth, status, http_status). A page fetched again with the same content is no change;
#: its new WARC record, OPIC score or timings are none either.
DELTA_FIELDS = ('url', 'content_type', 'encoding', 'length', 'digest', 'simhash',
                'language', 'title', 'description', 'headings', 'text', 'main_text', 'links',
                'anchors', 'duplicates', 'near_duplicates', 'canonical_duplicates', 'site',
                'fields', 'fields_checksum', 'resources')

#: The lists of a merged record that name the URLs folded into it.
FOLDED_FIELDS = ('duplicates', 'near_duplicates', 'canonical_duplicates')

ADDED, CHANGED, UNCHANGED, DELETED = 'added', 'changed', 'unchanged', 'deleted'

#: The counter (group ``delta``) of each outcome; a deletion also counts
#: ``deleted_<reason>_total``.
COUNTERS = {ADDED: C.DELTA_ADDED, CHANGED: C.DELTA_CHANGED, UNCHANGED: C.DELTA_UNCHANGED,
            DELETED: C.DELTA_DELETED}


def signature(rec):
    """Digest of what an index sees of a merged record. A page fetched although its
    certificate failed (tls_verified false) differs from the same page verified; true
    and null (http) add nothing, so builds from before the field sign pages alike."""
    kept = {k: rec.get(k) for k in DELTA_FIELDS}
    if rec.get('tls_verified') is False:
        kept['tls_verified'] = False
    return hashlib.sha1(orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)).hexdigest()


def signature_record(rec, build, fetch=None, map_signature=None, at=None, named=None):
    """The ``signature`` record of a merged record: all a later build's delta needs of
    it (MRMergeJoin writes them to signatures/, a few dozen bytes a page). With a
    merged record store (the join's --merged-dir or an incremental build): also the
    fetch it was made from, its merge_map record's :func:`map_signature`, where it is
    stored (*at*: [file relative to the crawl folder, offset, length]) and the
    resources its page names (*named*), so that a later build joins it again without
    reading any page: :func:`unchanged_map`."""
    sig = {'kind': 'signature', 'url': rec['url'], 'signature': signature(rec),
           'build': build}
    if at is not None:
        sig.update(fetch=fetch, map=map_signature, at=list(at))
        if named:
            sig['named'] = named
    return sig


def stored_record(url, fetch, at, named=None):
    """A ``stored`` record (signatures/): where the page record of *url* that is no page
    of its own now (folded into another) is kept (*at*, as in a signature record), and
    of which fetch, so that a later build in which it leads reads it back
    (:func:`stored`) instead of every layer's pages."""
    rec = {'kind': 'stored', 'url': url, 'fetch': fetch, 'at': list(at)}
    if named:
        rec['named'] = named
    return rec


def as_stored(old):
    """The ``stored`` record of a page that was one (*old*, its signature or stored
    record) and is folded into another now: its record stays where it is."""
    return stored_record(old['url'], old.get('fetch'), old['at'], old.get('named'))


def map_signature(map_rec):
    """Digest of a merge_map record: what MRMerge attaches to a page (its folds,
    anchors, resources, SimHash, and which fetch it takes)."""
    kept = {k: v for k, v in map_rec.items() if k != 'kind'}
    return hashlib.sha1(orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20]


def stored(old, map_rec):
    """How an incremental build gets the merged record of *map_rec*'s page when its
    fetch is not among the cycle's pages, from *old*, the previous build's signature
    record (or None): REUSE (the same fetch and merge_map record: the stored record
    stands as it is), REREAD (the same fetch, other folds or anchors: the stored record
    read back, the map applied again) or None (no stored record of that fetch)."""
    if not old or not old.get('at') or old.get('fetch') != map_rec.get('fetch'):
        return None
    if old['kind'] == 'stored':
        return REREAD
    return REUSE if old.get('map') == map_signature(map_rec) else REREAD


REUSE, REREAD = 'reuse', 'reread'


def old_signature(rec):
    """The previous build's signature of a ``signature`` record (prev_signatures/) or
    of a ``merged`` record (prev_merged/, a build of an earlier version); None for a
    ``stored`` record (no page of its own)."""
    if rec['kind'] == 'stored':
        return None
    return rec['signature'] if rec['kind'] == 'signature' else signature(rec)


def folded_into(rec):
    """(URL, the page it is folded into) for each URL a merged or merge_map record
    names as folded into it."""
    for field in FOLDED_FIELDS:
        for dup in rec.get(field) or ():
            yield dup, rec['url']


def counter_names(what, rec):
    """The counters (group ``delta``) an :func:`outcome` adds one to."""
    if what is None:
        return ()
    if what == DELETED:
        return COUNTERS[what], C.per('deleted', rec['reason'])
    return (COUNTERS[what],)


def deletion_reason(page):
    """Why the current fetch of a URL that was a page is no page now (None: it is)."""
    status = page.get('status')
    if status == R.FETCH_HTTP_ERROR and page.get('http_status') in (404, 410):
        return 'gone'
    if status == R.FETCH_REDIRECTED or (status == R.FETCH_FETCHED and (
            page.get('final_url') or page['url']) != page['url']):
        return 'redirected'
    if status == R.FETCH_ROBOTS_DENIED:
        return 'robots_denied'
    if status == R.FETCH_FILTERED:
        return 'filtered'
    if status == R.FETCH_FETCHED and page.get('noindex'):
        return 'noindex'
    return None


def current(page):
    """What a delta keeps of a URL's current fetch: [deletion reason, HTTP status,
    fetch time]."""
    return [deletion_reason(page), page.get('http_status'), page.get('fetch_time')]


def outcome(url, new, new_signature, old_signature, cur, folded):
    """(ADDED | CHANGED | UNCHANGED | DELETED | None, the delta record or None) for
    *url*: *new* its merged record in this build (None: it is no page now), with
    *new_signature*; *old_signature* that of the previous build's (None: it was no
    page); *cur* its :func:`current` fetch (or None); *folded* the page it is folded
    into now (or None). A deletion's reason is its current fetch's, else ``duplicate``
    when it is folded into another page, else ``removed``."""
    if new is not None:
        if old_signature is None:
            return ADDED, new
        if old_signature != new_signature:
            return CHANGED, new
        return UNCHANGED, None
    if old_signature is None:
        return None, None
    reason = (cur[0] if cur and cur[0] else None) or ('duplicate' if folded else 'removed')
    return DELETED, {'kind': 'deletion', 'url': url, 'reason': reason,
                     'duplicate_of': folded,
                     'http_status': cur[1] if cur else None,
                     'fetch_time': cur[2] if cur else None}
