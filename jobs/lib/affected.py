"""The merge's affected set: which pages a refresh must merge again (MergeDriver).

A page's merge decision (jobs/merge.py) depends only on the pages it is tied to: the
fetches with its final URL, the page its rel=canonical names, pages with its digest,
its verified near duplicates (Hamming distance <= merge.max_hamming_distance) and the
pages sharing a secondary resource with it. So the merge of the whole crawl is the
union of independent merges of its *components* under these ties. When some URLs
change their current fetch, the groups that can change are those of the components
that hold an old or a new version of a changed URL, and nothing else: the affected set
is the closure of the changed URLs under the ties of both versions, merged again on
its own and spliced into the last build's merge_map/ (drivers/later/affected.py).

Each page MRMerge reads is kept as one *key row* per build (merge_keys/, JSON lines):
``{url, keys, simhash, rec}``: the keys it is tied by (``u:`` its final URL and its
rel=canonical target, ``d:`` its digest, ``r:`` the resources it names or is, ``b:``
its SimHash bands), its SimHash (hex, or null when it is not compared) and ``rec``,
the page record cut to what MRMerge reads of it (PAGE_FIELDS, RESOURCE_FIELDS).
Pages MRMerge leaves out (not fetched, noindex) have no row.

A band key only proposes a tie: it holds when the two SimHashes verify. A band
bucket of more than merge.max_bucket_pages pages is cut by arrival in MRMerge, so a
merge of part of the crawl could compare other pages there: the closure
(drivers/later/affected.py) reports it and the driver merges in full.

Pure helper; nothing here imports mrjob.
"""
from jobs.lib import merging as M, simhash

#: Page record fields MRMerge reads of a page (jobs.lib.merging.classify, final_url,
#: latest_key, canonical_order; MRMerge.mapper_by_final_url) ...
PAGE_FIELDS = ('kind', 'url', 'final_url', 'status', 'digest', 'noindex', 'fetch_time',
               'layer', 'relevance', 'fingerprint', 'canonical', 'resources')
#: ... and of a secondary resource (jobs.lib.merging.resource_entry).
RESOURCE_FIELDS = PAGE_FIELDS + ('resource_of', 'resource_name') + M.RESOURCE_FIELDS + \
    M.MEDIA_FIELDS

#: merge.* settings the keys depend on: rows made with others are not comparable.
KEY_SETTINGS = ('near_duplicates', 'max_hamming_distance', 'shingle_words', 'min_words')


def key_settings(merge):
    return {name: merge[name] for name in KEY_SETTINGS}


#: What :func:`compared_simhash` did besides reading the page's fingerprint.
HASHED, TEXT_ELSEWHERE = 'hashed', 'text_elsewhere'


def compared_simhash(page, merge):
    """(the hex SimHash MRMerge compares *page* by, or None; HASHED when it was made
    here from the page's text, which then sets page['fingerprint'], TEXT_ELSEWHERE when
    the record has no usable fingerprint and no text (a meta/ record: the text is in
    out/), else None). *merge*: the merge.* settings. The page's own ``fingerprint``
    (PageParser) counts when made with merge.shingle_words and this hash version."""
    if not merge['near_duplicates']:
        return None, None
    fp, event = page.get('fingerprint'), None
    if not simhash.current(fp, merge['shingle_words']):
        if 'text' not in page and 'main_text' not in page:
            return None, TEXT_ELSEWHERE
        fp = page['fingerprint'] = simhash.fingerprint(
            page.get('main_text') or page.get('text') or '', merge['shingle_words'])
        event = HASHED
    if fp['words'] < max(1, merge['min_words']):
        return None, event
    return fp['simhash'], event


def row(rec, fp_hex, k):
    """The key row of a page record MRMerge reads (a PAGE or a RESOURCE), whose SimHash
    as MRMerge compares it is *fp_hex* (MRMerge.fingerprint; None: not compared), cut
    into k + 1 bands (*k*: merge.max_hamming_distance)."""
    resource = M.classify(rec) == M.RESOURCE
    cut = {f: rec[f] for f in (RESOURCE_FIELDS if resource else PAGE_FIELDS)
           if rec.get(f) is not None}
    if resource:
        keys = ['r:' + rec['url'], 'u:' + rec['resource_of']]
        fp_hex = None
    else:
        final = M.final_url(rec)
        keys = ['u:' + final, 'd:' + rec['digest']]
        if rec.get('canonical') and rec['canonical'] != final:
            keys.append('u:' + rec['canonical'])
        keys += ['r:' + r['url'] for r in rec.get('resources') or () if r.get('url')]
        if fp_hex is not None:
            keys += ['b:%d:%d' % bb for bb in simhash.bands(simhash.from_hex(fp_hex), k)]
    return {'url': rec['url'], 'keys': keys, 'simhash': fp_hex,
            'rec': cut}


def exact_duplicates(recs):
    """Pages MRMerge folds by digest among *recs* (cut page records of whole
    components): one summary per final URL (its latest fetch), less one per digest."""
    latest = {}
    for rec in recs:
        if M.classify(rec) != M.PAGE:
            continue
        final = M.final_url(rec)
        if final not in latest or M.latest_key(rec) > M.latest_key(latest[final]):
            latest[final] = rec
    return len(latest) - len({rec['digest'] for rec in latest.values()})
