"""The records that flow between mrcrawl's jobs: one JSON object per line, UTF-8.

Every record has ``kind``. Fields may be added, never renamed; readers ignore fields
they don't know. Times are UTC ISO-8601 strings (``2026-11-30T08:00:00Z``).

``url`` (in/NNN, written by the driver for layer 0 and by MRGenerate after it)
    url (str, normalised), depth (int, link hops from a seed).

``doc`` (doc/NNN, MRFetch): exactly one per URL of in/NNN
    url, depth, layer (int), status (FETCH_* below), reason (str|null: why, for every
    status but fetched), http_status (int|null), final_url (str: after redirects),
    redirects (list of str: the hops, in order), content_type (str|null, no params),
    fetch_time (str), elapsed (float seconds), length (int: body bytes kept),
    truncated (bool), digest (str|null: ``sha1:`` + base32 of the body bytes),
    encoding (str|null: WHATWG name the body was decoded with), body (str|null:
    decoded text for HTML/XHTML, null for other types), headers (dict of the response
    headers kept: etag, last-modified, x-robots-tag, retry-after).

``page`` (out/NNN, MRParse): exactly one per doc record
    every doc field but body, plus title (str|null), text (str), links (list of
    {url, text, rel}), canonical (str|null), noindex (bool), nofollow (bool).

``db`` (crawldb/NNN, MROptimize): one per known URL
    url, status (DB_* below), depth, first_seen, last_fetch (str|null), http_status,
    digest, reason, inlinks (int: links seen to it), layer (int|null: the layer that
    fetched it).

``merged`` (merged/, MRMerge): one per distinct page
    the page fields of the canonical URL, plus duplicates (list of str: other URLs with
    the same content, redirect sources included).
"""

# Fetch outcomes, in doc/ and out/ records.
FETCH_FETCHED = 'fetched'            #: 2xx response; body kept (HTML) or metadata only
FETCH_NOT_MODIFIED = 'not_modified'  #: 304 to a conditional request
FETCH_HTTP_ERROR = 'http_error'      #: final response 4xx/5xx (reason: ``http_404`` ...)
FETCH_NETWORK_ERROR = 'network_error'  #: no usable response (reason: timeout, dns ...)
FETCH_ROBOTS_DENIED = 'robots_denied'  #: robots.txt disallows it (or Crawl-delay too long)
FETCH_FILTERED = 'filtered'          #: refused before any request (bad URL, scheme, SSRF)
FETCH_DEFERRED = 'deferred'          #: not tried this layer; stays unfetched for the next

FETCH_STATUSES = (FETCH_FETCHED, FETCH_NOT_MODIFIED, FETCH_HTTP_ERROR, FETCH_NETWORK_ERROR,
                  FETCH_ROBOTS_DENIED, FETCH_FILTERED, FETCH_DEFERRED)

# Crawl database statuses.
DB_UNFETCHED = 'unfetched'    #: known, not fetched yet (new, deferred, or past the depth)
DB_FETCHED = 'fetched'        #: fetched (or reached as the target of a redirect)
DB_REDIRECTED = 'redirected'  #: fetched, and it redirected elsewhere
DB_GONE = 'gone'              #: 404 or 410
DB_FAILED = 'failed'          #: other HTTP or network error
DB_DENIED = 'denied'          #: robots.txt said no
DB_FILTERED = 'filtered'      #: refused by URL filters or security rules


def db_status_for(fetch_status, http_status=None, redirected=False):
    """Map a fetch outcome to the crawl database status."""
    if fetch_status in (FETCH_FETCHED, FETCH_NOT_MODIFIED):
        return DB_REDIRECTED if redirected else DB_FETCHED
    if fetch_status == FETCH_HTTP_ERROR:
        return DB_GONE if http_status in (404, 410) else DB_FAILED
    if fetch_status == FETCH_ROBOTS_DENIED:
        return DB_DENIED
    if fetch_status == FETCH_FILTERED:
        return DB_FILTERED
    if fetch_status == FETCH_DEFERRED:
        return DB_UNFETCHED
    return DB_FAILED
