"""The records that flow between mrcrawl's jobs: one JSON object per line, UTF-8.

Every record has ``kind``. Fields may be added, never renamed; readers ignore fields
they don't know. Times are UTC ISO-8601 strings (``2026-11-30T08:00:00Z``).

``url`` (in/NNN, written by the driver for layer 0 and by MRGenerate after it)
    url (str, normalised), depth (int, link hops from a seed). Optional: score (OPIC
    cash, carried to doc/ and out/), priority (float: generate.strategy's value, the
    higher first; each host's URLs are fetched in that order), and in a re-crawl etag,
    last_modified and prev ({digest, fields_checksum, status, last_fetch}: what the
    page was); for a secondary
    resource (a file a site rule names on a page) resource_of (str: the naming page's
    final URL), resource_name (str: the rule's name) and max_bytes (int: bytes read at
    most), all three carried to doc/ and out/.

    A URL the fetch followed (fetch.follow_hops, jobs.lib.follow) was in no in/: its
    url record, made in the fetch task, carries followed (int: hops from a listed URL)
    and score (its parent's OPIC share), both carried to doc/ and out/.

``doc`` (doc/NNN, MRFetch with fetch.parse = false): exactly one per URL of in/NNN
    url, depth, layer (int), status (FETCH_* below), reason (str|null: why, for every
    status but fetched), http_status (int|null), final_url (str: after redirects),
    redirects (list of str: the hops, in order), content_type (str|null, no params),
    fetch_time (str), elapsed (float seconds), length (int: body bytes kept),
    truncated (bool), digest (str|null: ``sha1:`` + base32 of the body bytes),
    encoding (str|null: WHATWG name the body was decoded with), body (str|null:
    decoded text for HTML/XHTML, null for other types), headers (dict of the response
    headers kept: etag, last-modified, x-robots-tag, retry-after, content-length,
    content-encoding), attempts (int: requests made for it, retries and redirect hops
    included; 0 when none was made), tls_verified (bool|null, on a record that got an
    answer: over https, whether its certificate was verified, false only with
    fetch.verify_tls = false; null over http), raw_body (str, only for a type listed in
    ``fetch.keep_types``, or a sitemap type with sitemaps.enabled: base64 of the body bytes, which ``body`` then leaves null).
    Only with ``warc.enabled`` (for MRWarc; MRParse drops them): http ({version:
    ``HTTP/1.1``, reason: the status line's reason phrase, headers: list of [name,
    value] as received, request: {method, path, headers: list of [name, value] sent}}:
    the final response's exchange, on records that got a response), warc_body (str:
    base64 of an HTML body's bytes as received, only when ``body`` does not re-encode to
    them with ``encoding``: replaced bytes, a BOM, a character cut by the size limit),
    warc_exchanges (list, only when the fetch of this URL received robots.txt or
    redirect responses: {kind: ``robots`` or ``redirect``, url, fetch_time,
    http_status, http (as above), body (str|null: base64 of the bytes read), truncated
    (bool)}, in the order received; archived before the doc's own records).
    rendered (bool, only on a page of a site with ``render = true`` that the browser
    rendered: ``body`` is then the rendered DOM, and ``warc_body`` (with warc.enabled)
    the bytes as received; jobs.lib.render).
    A ``url`` record may carry ``etag`` and ``last_modified`` (from a previous fetch):
    the fetch then sends If-None-Match / If-Modified-Since, and a 304 is not_modified.
    A resource (resource_of set) is read up to its max_bytes and never parsed: body null,
    no raw_body, whatever its type; length = bytes read, truncated = more followed,
    digest = of the bytes read, declared_length (int|null: the size the server
    declared, Content-Range total or Content-Length of an unencoded body). With
    media.store (jobs.lib.media): stored (str: ``media/AB/ABCDEF...``, the bytes read,
    relative to the crawl's folder), and with media.previews preview (str:
    ``media/AB/ABCDEF....preview.jpg``), width and height (int: an image's pixels), each
    absent when not made.

``page`` (out/NNN, MRParse, or MRFetch with fetch.parse = true): exactly one per doc
    record, i.e. per URL of in/NNN and per URL the fetch followed. Every doc field but body, http and warc_body (kept
    when warc.enabled and the fetch parses: the WARC writer reads them from out/), plus
    title (str|null), text (str), links (list of
    {url, text, rel}), canonical (str|null), noindex (bool), nofollow (bool);
    site (str|null: the conf/sites configuration the page's final URL matched),
    fields (dict|null: field name -> extracted value: str, int, float, ISO date str,
    list of str, or null when nothing was found; null for pages without extraction),
    fields_checksum (str|null: ``crc32:`` + 8 hex digits of the fields),
    refetch_interval (number|null: seconds, from the site configuration),
    relevance (float|null: topic score), on_topic (bool|null: relevance >=
    topic.min_score; null without a topic profile), link_depth_step (int: depth added
    to this page's links, 1 unless deprioritised as off topic). Optional:
    fields_missing (list of str: required fields that came out empty), extract_error
    (str), resources (list of {name, url, max_bytes}: secondary resources the site
    configuration names on the page, at most parse.max_resources_per_page; optimize
    turns them into crawldb records for the next layer), resource_of and resource_name
    (str: on the record of a fetched secondary resource, its parent page's URL after
    redirects and the resource's name; such records carry no text and are never merged
    pages), parse_error (str), sitemap (str: ``urlset``,
    ``sitemapindex``, ``text`` or ``robots`` when the document was read as a source of
    URLs; such records are noindex and their links add no depth). A link may carry
    lastmod (str: its sitemap entry's <lastmod> as a UTC time, jobs.lib.sitemaps.lastmod;
    one that is no W3C datetime is left out, counter sitemap_lastmod_bad_total). The record of a resource (resource_of set) is its
    doc's metadata only, never parsed, noindex. Indexable HTML pages also carry description
    (str|null: meta description, else og:description), headings (list of {level: 1..6,
    text}), main_text (str|null: the main content, boilerplate removed, one line per
    block, by the extractor parse.main_text_extractor names; null when parse.main_text
    is off or the body is too big), language (str|null: ISO 639 code, two letters
    where one exists, by fastText from main_text, else text),
    fingerprint ({simhash: str|null, words: int, shingle_words: int, hash: int}: the
    SimHash of main_text, else text, as MRMerge compares it, its word count and the
    shingle hash's version; absent when merge.near_duplicates is off); optional
    main_text_error (str).

``db`` (crawldb/NNN, MROptimize): one per known URL
    url, status (DB_* below), depth, first_seen, last_fetch (str|null), http_status,
    digest, reason, inlinks (int: links seen to it), layer (int|null: the layer that
    fetched it). Optional: topic_inlinks (int: links seen from on-topic pages),
    fields_checksum and refetch_interval (from its page), fields_changed (bool: the
    fields checksum differs from the previous fetch's), score (float: OPIC cash
    waiting), opic_history (float: OPIC cash it has handed on), retries (int: failed
    or deferred tries since its last success), fetch_interval (float seconds until it
    is due again), changed (bool|null: the last re-fetch found it changed),
    last_changed (str), etag and last_modified (validators for conditional requests),
    resource_of, resource_name, max_bytes (a secondary resource: see ``url``),
    sitemap_lastmod (str: the newest lastmod a sitemap's link to it gave; a cycle
    fetches the page again when it is after last_fetch: jobs/generate.py).

``pagerank`` (pagerank/NNN, MRPageRank): url, pagerank (float).

``robots`` (robots/NNN, MRFetch --robots-dir): one per origin whose robots.txt the
    layer's fetch read and whose answer may be reused (not a 5xx or unreachable one):
    url (its /robots.txt), origin, fetched_at (float: epoch seconds), allow_all (bool:
    a 4xx), reason (str|null), text (str|null: the robots.txt as parsed, at most
    500 KiB). Later layers of the cycle reuse it for politeness.robots_cache_hours.

``pace`` (robots/NNN, beside the robots records): one per politeness key the layer's
    fetch asked: url (one of the key's URLs in the layer: the first of its list, or
    the first the renderer asked for), key, ended_at (float: epoch seconds, when its
    last request ended, its own thread's or a rendered page's).
    A later layer's first request to the key waits politeness.delay from then.

``task`` (robots/NNN, beside them): one per fetch task: url (the first URL it wrote a
    record for, '' if none), task (int: its partition), node (host name), started_at
    (float: epoch seconds), seconds (float), urls (int: records of its list's URLs),
    followed (int: records of URLs it followed), fetched (int: of both, status fetched).
    report.html's pages a second per task.

``deletion`` (delta/CCC/records, MRMergeJoin or MRDelta): url, reason (gone, noindex, redirected,
    robots_denied, filtered, duplicate, removed), duplicate_of (str|null: the page it
    folds into now), http_status, fetch_time: a page of the last cycle that is no page
    now.

``merge_map`` (merge_map/, MRMerge): one per distinct page, what MRMergeJoin attaches
    url (the canonical URL, after redirects), fetch ([fetch_time, layer, URL fetched]:
    the fetch whose page fields the merged record takes, jobs.lib.merging.latest_key),
    and duplicates, near_duplicates, canonical_duplicates, simhash, resources as in
    ``merged``.

``anchors`` (anchors/, MRAnchors): the in-link anchors of one URL of a page's group:
    url (the group's canonical URL, which merge_map names), anchors (list of {from:
    linking page URL, text: anchor text}: the links to that URL, or to a URL that
    redirected to it, sorted). MRMergeJoin gathers a page's records into ``merged``'s
    anchors.

``signature`` (signatures/, MRMergeJoin): one per page of the crawl as it stands: url,
    signature (str: SHA-1 of what its XML document carries, jobs.lib.deltas.signature),
    build (the build that wrote its merged record), fetch (its merge_map record's),
    map (str: digest of that merge_map record, jobs.lib.deltas.map_signature), at
    ([file relative to the crawl folder, byte offset, length]: its merged record, in
    merged/ or delta/CCC/records/), named (list of {name, url}, when its page names
    resources): what the next build's delta compares, and what lets an incremental
    build join the page again without reading any page (MRMergeJoin --incremental).

``stored`` (signatures/, MRMergeJoin): a URL folded into another page: url, fetch, at
    (its latest page record, in store/BUILD/, or its merged record from when it led),
    named: what a later build in which it leads reads back.

``merged`` (merged/, MRMergeJoin from merge_map/, anchors/ and out/*): one per distinct
    page: the page fields of the canonical URL's latest fetch (without body or raw_body),
    plus duplicates (list of str: the other URLs
    folded into it: same digest, redirect sources, near duplicates, rel=canonical),
    near_duplicates and canonical_duplicates (list of str: the subsets of duplicates
    folded by SimHash and by rel=canonical, URLs folded with them included), simhash
    (str|null: 16 hex digits, the 64-bit SimHash of main_text or text; null for pages
    under merge.min_words words), anchors (list of {from: linking page URL, text: anchor
    text}: in-link anchor text of links to any of its URLs, a redirect's source counted
    as its final URL, de-duplicated, at most merge.max_anchors), resources (list of
    {name, url, status, content_type, length, truncated, digest, http_status, reason;
    and where the media store made them: stored, preview, width, height}, sorted by
    name then url: the fetched secondary resources this page or a page folded into it
    names (or is the resource_of of; a file several pages name is fetched once and
    listed on each), the latest fetch of each; then each resource the page's own
    ``resources`` names with no fetched record, status null, reason ``not_fetched``;
    in place of the page's {name, url, max_bytes} list).

``index_row`` (index_rows/, MRIndexRows; the driver turns them into OUT/index/ Parquet
    and removes the folder): one per page record of every layer
    url, host (host[:port]), registered_domain, status, reason, http_status,
    fetch_time, content_type, length, digest, depth, layer, title, language,
    final_url, elapsed, attempts (as in the page), duplicate_of (str|null: the merged
    page's canonical URL when this fetched URL was folded into it), warc_filename,
    warc_record_offset, warc_record_length (from warc_index/ for the same URL and layer;
    null when not archived).

``warc_index`` (warc_index/NNN; MRWarc): one per archived URL
    url, layer, warc_filename (str: relative to the crawl folder, ``warc/NAME.warc.gz``),
    warc_record_offset, warc_record_length (int: the gzip member of its response or
    revisit record), warc_type (``response`` or ``revisit``).

``host_layer`` (index_rows/ -> OUT/hosts/ Parquet, MRIndexRows): one per (layer, host)
    layer, host, urls (int), elapsed (float: summed fetch seconds), bytes (int: of
    fetched bodies), statuses (dict status -> URLs), reasons (dict reason -> URLs).
"""

import base64
import hashlib
import re
from datetime import datetime, timezone


def sha1_form(sha):
    """A finished SHA-1 hash object as records write digests: ``sha1:`` + base32."""
    return 'sha1:' + base64.b32encode(sha.digest()).decode('ascii')


def digest(data):
    """The digest of *data* (bytes) as records and WARC-Payload-Digest write it."""
    return sha1_form(hashlib.sha1(data))


def now_iso():
    """The current UTC time as records write it: ``2026-11-30T08:00:00Z``."""
    return datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


# Fetch outcomes, in doc/ and out/ records.
FETCH_FETCHED = 'fetched'            #: 2xx response; body kept (HTML) or metadata only
FETCH_NOT_MODIFIED = 'not_modified'  #: 304 to a conditional request
FETCH_HTTP_ERROR = 'http_error'      #: final response 4xx/5xx (reason: ``http_404`` ...)
FETCH_NETWORK_ERROR = 'network_error'  #: no usable response (reason: timeout, dns ...)
FETCH_ROBOTS_DENIED = 'robots_denied'  #: robots.txt disallows it (or Crawl-delay too long)
FETCH_FILTERED = 'filtered'          #: refused before any request (bad URL, scheme, SSRF)
FETCH_DEFERRED = 'deferred'          #: not tried this layer; stays unfetched for the next
#: (reason robots_503..., time_budget, host_failures)
#: 3xx whose target was not fetched under this URL (final_url = the target). Reason
#: ``cross_key``: the target is another politeness key; the crawl database adds it for
#: the next layer (Nutch's "record redirects for the next round"). ``duplicate_target``:
#: the target is in this layer's in/ (it has its own record) or was already fetched.
#: ``known_target``: the crawl database says it was requested in an earlier layer.
FETCH_REDIRECTED = 'redirected'

FETCH_STATUSES = (FETCH_FETCHED, FETCH_NOT_MODIFIED, FETCH_HTTP_ERROR, FETCH_NETWORK_ERROR,
                  FETCH_ROBOTS_DENIED, FETCH_FILTERED, FETCH_DEFERRED, FETCH_REDIRECTED)

# Crawl database statuses.
DB_UNFETCHED = 'unfetched'    #: known, not fetched yet (new, deferred, or past the depth)
DB_FETCHED = 'fetched'        #: fetched (or reached as the target of a redirect)
DB_REDIRECTED = 'redirected'  #: fetched, and it redirected elsewhere
DB_GONE = 'gone'              #: 404 or 410
DB_FAILED = 'failed'          #: other HTTP or network error
DB_DENIED = 'denied'          #: robots.txt said no
DB_FILTERED = 'filtered'      #: refused by URL filters or security rules
#: Statuses of URLs the crawl has requested (MRFetch does not follow a redirect to one).
DB_REQUESTED = frozenset((DB_FETCHED, DB_REDIRECTED, DB_GONE, DB_FAILED))


def opic_cash(page):
    """The OPIC cash a fetched page spends and hands to its out-links in equal shares:
    its ``score`` (seeds, at depth 0, start with 1.0). MROptimize spends it; in-fetch
    following (jobs.lib.follow) hands the same shares on inside the fetch."""
    return page.get('score', 1.0 if page.get('depth', 0) == 0 else 0.0)


def db_status_for(fetch_status, http_status=None, redirected=False):
    """Map a fetch outcome to the crawl database status."""
    if fetch_status in (FETCH_FETCHED, FETCH_NOT_MODIFIED):
        return DB_REDIRECTED if redirected else DB_FETCHED
    if fetch_status == FETCH_REDIRECTED:
        return DB_REDIRECTED
    if fetch_status == FETCH_HTTP_ERROR:
        return DB_GONE if http_status in (404, 410) else DB_FAILED
    if fetch_status == FETCH_ROBOTS_DENIED:
        return DB_DENIED
    if fetch_status == FETCH_FILTERED:
        return DB_FILTERED
    if fetch_status == FETCH_DEFERRED:
        return DB_UNFETCHED
    return DB_FAILED


#: How orjson writes the start of a page record, of an anchors record (MRAnchors), of
#: a crawl database record and of a build's signatures/ records (jobs.lib.deltas): what
#: the functions below read without parsing a line.
PAGE_START = b'{"kind":"page","url":"'
ANCHORS_START = b'{"kind":"anchors","member":"'
DB_START = b'{"kind":"db","url":"'
SIGNATURE_START = b'{"kind":"signature","url":"'
STORED_START = b'{"kind":"stored","url":"'
_STATUS_AFTER_URL = b'","status":"'
_URL_AFTER_MEMBER = b'","url":"'
_FINAL_URL = b'"final_url":'


def _string_at(line, start):
    """The JSON string of *line* whose text starts at *start*, or None when it holds
    an escape (or ends nowhere): the caller parses the line then."""
    return _string_end(line, start)[0]


def _string_end(line, start):
    """(:func:`_string_at`, the offset of its closing quote)."""
    end = line.find(b'"', start)
    raw = line[start:end] if end >= 0 else b'\\'
    if b'\\' in raw:
        return None, end
    try:
        return raw.decode('utf-8'), end
    except UnicodeDecodeError:
        return None, end


def db_url_status(line):
    """(url, status) of a crawl database record's *line*, read from its bytes (every
    db record starts with its kind, url and status); None when it must be parsed."""
    if not line.startswith(DB_START):
        return None
    url, end = _string_end(line, len(DB_START))
    if url is None or not line.startswith(_STATUS_AFTER_URL, end):
        return None
    status = _string_at(line, end + len(_STATUS_AFTER_URL))
    return None if status is None else (url, status)


#: A page record's start as the fetcher writes it: its url (group 1), depth and layer
#: (group 2). A 304's page record: its status after them, and its ``prev``: the crawl
#: database's record of the URL's last fetch, a page with a digest.
_PAGE_HEAD = re.escape(PAGE_START) + rb'([^"\\]*)","depth":\d+,"layer":(\d+),'
_NOT_MODIFIED = re.compile(_PAGE_HEAD + rb'"status":"' + FETCH_NOT_MODIFIED.encode() + rb'",')
_PREV_FETCHED = re.compile(rb',"attempts":\d+,"prev":\{"digest":"[^"\\]*",'
                           rb'"fields_checksum":(?:null|"[^"\\]*"),'
                           rb'"status":"' + DB_FETCHED.encode() + rb'",')


def not_modified_over_page(line):
    """Is *line* the page record of a 304 answered to a URL whose last fetch the crawl
    database holds as a page (prev status fetched, with a digest)? Read from its bytes;
    False when unsure. The conditional request was made with that page's validators,
    so the crawl holds that page's fetch, which a 304 never replaces
    (jobs.lib.merging.definitive)."""
    return _NOT_MODIFIED.match(line) is not None and _PREV_FETCHED.search(line) is not None


def page_url(line):
    """The url of a page record's *line*, read from its bytes; None when it must be
    parsed to know (another kind or layout, an escape in the URL)."""
    return _string_at(line, len(PAGE_START)) if line.startswith(PAGE_START) else None


_URL_LAYER = re.compile(_PAGE_HEAD)


def page_url_layer(line):
    """(url, layer) of a page record's *line*, read from its bytes; None when it must
    be parsed to know (another kind or layout, an escape in the URL)."""
    found = _URL_LAYER.match(line)
    if found is None:
        return None
    try:
        return found.group(1).decode('utf-8'), int(found.group(2))
    except UnicodeDecodeError:
        return None


def line_keys(line):
    """The URLs a join keys the record of *line* by, read from its bytes: {url,
    final_url} of a page, {url} of an anchors record and of a signature or stored
    record; None when the line must be parsed to know (another kind, another layout, an
    escape in a URL). A job that needs a few URLs of a large input skips the other
    lines unparsed."""
    if line.startswith(ANCHORS_START):
        at = line.find(_URL_AFTER_MEMBER, len(ANCHORS_START))
        url = _string_at(line, at + len(_URL_AFTER_MEMBER)) if at > 0 else None
        return None if url is None else {url}
    for start in (SIGNATURE_START, STORED_START):
        if line.startswith(start):
            url = _string_at(line, len(start))
            return None if url is None else {url}
    if not line.startswith(PAGE_START) or line.count(_FINAL_URL) != 1:
        return None
    url = _string_at(line, len(PAGE_START))
    at = line.find(_FINAL_URL) + len(_FINAL_URL)
    final = _string_at(line, at + 1) if line[at:at + 1] == b'"' else url
    if url is None or final is None:
        return None
    return {url, final or url}
