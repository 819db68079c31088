"""The rules MRMerge (grouping) and MRMergeJoin (the join) must apply alike.

Both jobs read out/*; each must see the same pages and pick the same fetch of a URL, or
the join would attach a group's duplicates to another fetch than the one ranked.
"""
from jobs.lib import counters as C, records as R, urls

#: Fields of a resource's page record that its parent's merged record keeps.
RESOURCE_FIELDS = ('status', 'content_type', 'length', 'truncated', 'digest', 'http_status',
                   'reason')
#: ... and those it keeps when the media store made them (jobs.lib.media).
MEDIA_FIELDS = ('stored', 'preview', 'width', 'height')

#: Page fields a merged record never carries (a raw or decoded body, if out/ keeps one;
#: the page's fingerprint, which merged/ has as ``simhash``).
DROPPED_FIELDS = ('body', 'raw_body', 'fingerprint')

PAGE = 'page'
RESOURCE = 'resource'
NOT_FETCHED = 'not_fetched'
NOINDEX = 'noindex'


def classify(rec):
    """What merge makes of a ``page`` record: PAGE (a candidate merged page), RESOURCE
    (a secondary resource of the page ``resource_of`` names), NOT_FETCHED or NOINDEX."""
    if rec.get('resource_of'):
        return RESOURCE
    if rec.get('status') != R.FETCH_FETCHED or rec.get('digest') is None:
        return NOT_FETCHED
    if rec.get('noindex'):
        return NOINDEX
    return PAGE


def definitive(rec):
    """Does this fetch settle what its URL is now? A page (fetched: kept, or noindex,
    or moved: final_url), gone (404, 410), a redirect, robots.txt's no, a filter's no.
    A transient failure (5xx, network, robots.txt unreachable: deferred) or a 304 does
    not: the URL's earlier definitive fetch still stands, as Nutch keeps a page until
    its retries run out. Nor does a setting's no to a page of an earlier cycle that
    the run kept (``kept``: :func:`mark_kept`)."""
    status = rec.get('status')
    if status == R.FETCH_HTTP_ERROR:
        return rec.get('http_status') in (404, 410)
    if status == R.FETCH_FILTERED:
        return not rec.get('kept')
    return status in (R.FETCH_FETCHED, R.FETCH_REDIRECTED, R.FETCH_ROBOTS_DENIED)


#: Reasons of a ``filtered`` fetch that come from the crawl's settings, not from the
#: page: the address policy (security.allow_private_networks) and the link filters a
#: later cycle applies to known URLs (jobs/generate.py: ``filter_*``).
SETTING_REASONS = ('private_address',)


def mark_kept(doc, prune):
    """Mark *doc* ``kept`` if it is a URL a setting refuses now whose earlier page
    stands; whether it did. A setting is no evidence that a page is gone: unless the
    run prunes (recrawl.prune), a ``filtered`` fetch of a page of an earlier cycle (its
    ``prev`` status fetched or redirected) for a setting's reason keeps the page
    (:func:`definitive`; MROptimize keeps its crawl database record)."""
    reason = doc.get('reason') or ''
    if (not prune and doc.get('status') == R.FETCH_FILTERED
            and (reason in SETTING_REASONS or reason.startswith('filter_'))
            and (doc.get('prev') or {}).get('status') in (R.DB_FETCHED, R.DB_REDIRECTED)):
        doc['kept'] = True
    return bool(doc.get('kept'))


def current_key(rec):
    """Sort key of a URL's fetches across cycles: the last one is its current fetch
    (MRCurrent): the latest definitive fetch, else the latest of any kind."""
    return (definitive(rec), latest_key(rec))


def final_url(rec):
    return rec.get('final_url') or rec['url']


def latest_key(page):
    """Sort key of a URL's fetches: the last one is the fetch merge keeps (the latest;
    ties broken by layer, then by the URL fetched, so both jobs pick the same one)."""
    return (page.get('fetch_time') or '', page.get('layer') or 0, page['url'])


def canonical_order(page):
    """Sort key: the first page in this order is the canonical one of its group."""
    url = page['url']
    return (-(page.get('relevance') or 0), not url.startswith('https:'), len(url),
            page.get('fetch_time') or '', url)


def resource_entry(rec):
    """A resource's page record -> the entry its parent's merged record lists."""
    entry = {'name': rec.get('resource_name'), 'url': rec['url']}
    for field in RESOURCE_FIELDS:
        entry[field] = rec.get(field)
    entry.update((f, rec[f]) for f in MEDIA_FIELDS if rec.get(f) is not None)
    entry['fetch_time'] = rec.get('fetch_time')
    return entry


def keep_resources(resources):
    """One entry per (name, url), the latest fetch's, sorted; fetch_time dropped."""
    latest = {}
    for r in resources:
        key = (r.get('name') or '', r['url'])
        if key not in latest or (r.get('fetch_time') or '') >= (
                latest[key].get('fetch_time') or ''):
            latest[key] = r
    return [{k: v for k, v in latest[key].items() if k != 'fetch_time'}
            for key in sorted(latest)]


#: Anchors kept per link target before the merge's own cap (merge.max_anchors): a bound
#: on the memory of the reduce group of a URL that every page links to.
MAX_ANCHORS_PER_TARGET = 1000


def inlinks(page, internal, count, targets=None):
    """Nutch's invertlinks for one page record: (the URL it was fetched as, and the URL
    it ended at), and [(link target, anchor text), ...] per link with anchor text, so
    that anchors to /old reach the page served at /new and the source is named once.
    Links without anchor text are skipped, and links to the same host when *internal*
    (merge.internal_anchors) is off (Nutch's linkdb.ignore.internal.host); a sitemap's
    or robots.txt's list of URLs has no anchors. *count* (name, n) counts what is
    skipped and kept, once per page. *targets*: only the links to these URLs are
    looked at (and counted); default every link."""
    source = page.get('final_url') or page['url']
    if page.get('noindex') and page.get('sitemap'):
        return source, []
    host = urls.host(source) if not internal else None
    out, empty, internal_skipped = [], 0, 0
    for link in page.get('links') or ():
        if targets is not None and link['url'] not in targets:
            continue
        text = link.get('text')
        text = ' '.join(text.split()) if text else ''
        if not text:
            empty += 1
        elif host is not None and urls.host(link['url']) == host:
            internal_skipped += 1
        else:
            out.append((link['url'], text))
    count(C.INLINKS_EMPTY_SKIPPED, empty)
    count(C.INLINKS_INTERNAL_SKIPPED, internal_skipped)
    count(C.INLINKS, len(out))
    return source, out


def gather_anchors(target, values, count):
    """The reduce side of :func:`inlinks` for one URL: (the URL they belong to, after
    its redirect, [{from, text}, ...] sorted) or None without anchors. *values* holds
    the redirect notices of *target* ({redirect: final url}) and its inlinks, as lists
    ({inlinks: [[from, text], ...]}: a mapper's, combined)."""
    anchors, final = set(), None
    for v in values:
        if 'redirect' in v:
            final = v['redirect']
            continue
        for a in v['inlinks']:
            if len(anchors) >= MAX_ANCHORS_PER_TARGET:
                break
            anchors.add((a[0], a[1]))
    if not anchors:
        return None
    if final is not None and final != target:
        count(C.INLINKS_REDIRECTED, len(anchors))
        target = final
    count(C.ANCHOR_TARGETS, 1)
    return target, [{'from': f, 'text': t} for f, t in sorted(anchors)]


def distinct_anchors(parts):
    """The union of *parts* (lists of {from, text}, each sorted and distinct), sorted
    and distinct: one part as it is."""
    if len(parts) == 1:
        return parts[0]
    return [{'from': f, 'text': t} for f, t in sorted(
        {(a['from'], a['text']) for part in parts for a in part})]


def keep_anchors(url, duplicates, parts, cap, count):
    """A merged page's in-link anchors from the ``anchors`` records of its group's URLs
    (*parts*, lists of {from, text}, each sorted and distinct: MRAnchors): de-duplicated,
    from other URLs than the group's own (*url* and its *duplicates*), sorted, at most
    *cap* (merge.max_anchors)."""
    own = {url} | set(duplicates or ())
    kept = [a for a in distinct_anchors(parts) if a['from'] not in own]
    count(C.ANCHORS_OVER_CAP, max(0, len(kept) - cap))
    kept = kept[:cap]
    count(C.ANCHORS_JOINED, len(kept))
    return kept
