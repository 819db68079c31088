"""Counter names: the monitoring surface. Group = the job; names snake_case, reason last.

Status counters are built by :func:`status` so that every outcome has one name:
``fetch_fetched_total``, ``fetch_network_error_timeout_total``...
"""
import re

FETCH = 'fetch'
PARSE = 'parse'
OPTIMIZE = 'optimize'
GENERATE = 'generate'
SITE_LIMITS = 'site_limits'  #: per limited site: NAME.pages, NAME.hour, NAME.day, NAME.held
MERGE = 'merge'
XML = 'xml'

# shared
MALFORMED_RECORD = 'malformed_record_total'   #: input line that is not a valid record
UNEXPECTED_RECORD = 'unexpected_record_total'  #: valid JSON of the wrong kind

# fetch
URLS_IN = 'urls_in_total'
BYTES = 'bytes_total'
ROBOTS_FETCHED = 'robots_txt_fetched_total'
ROBOTS_ERROR = 'robots_txt_unavailable_total'
#: origins whose robots.txt an earlier layer of the cycle read (politeness.robots_cache_hours)
ROBOTS_REUSED = 'robots_txt_reused_total'
HOSTS = 'hosts_total'          #: politeness keys (host, IP or domain) fetched
INTERNAL_ERROR = 'internal_error_total'
RETRIES = 'retries_total'      #: requests repeated after a 5xx, 429 or network error
RETRY_AFTER_OVER_CAP = 'retry_after_over_cap_total'  #: Retry-After > fetch.max_retry_after
CONDITIONAL_REQUESTS = 'conditional_requests_total'  #: If-None-Match/If-Modified-Since sent
REDIRECT_CROSS_KEY = 'redirect_cross_key_total'      #: hop to another key, left for next layer
REDIRECT_DEDUPLICATED = 'redirect_deduplicated_total'  #: hop to a URL fetched anyway
REDIRECT_KNOWN_TARGET = 'redirect_known_target_total'  #: hop to a URL requested before
META_RECORDS = 'meta_records_total'  #: page metadata lines written to meta/ (--meta-dir)
KEYS_HIT_BY_TIME_BUDGET = 'keys_hit_by_time_budget_total'  #: keys cut by fetch.time_budget
KEYS_ABOVE_FAILURE_THRESHOLD = 'keys_above_failure_threshold_total'  #: keys cut by failures
ROBOTS_DENIED_MAX_CRAWL_DELAY = 'robots_denied_max_crawl_delay_total'  #: URLs skipped for it
CRAWL_DELAY_RAISED = 'crawl_delay_raised_keys_total'  #: keys whose robots.txt Crawl-delay
#: raised their delay above politeness.delay
RESOURCES_FETCHED = 'resources_fetched_total'      #: secondary resources read (digest, no body)
RESOURCES_TRUNCATED = 'resources_truncated_total'  #: of which cut at their max_bytes
# The media store (jobs.lib.media: media.store, media.previews), in the fetch group:
MEDIA_STORED = 'media_stored_total'      #: resources whose bytes were stored (new digests)
MEDIA_STORED_BYTES = 'media_stored_bytes_total'    #: bytes of those
MEDIA_ALREADY_STORED = 'media_already_stored_total'  #: digest stored before: not again
MEDIA_STORE_FAILED = 'media_store_failed_total'    #: stored nothing (the log says why)
PREVIEWS_MADE = 'previews_made_total'    #: previews made (image thumbnails, video stills)
PREVIEWS_REUSED = 'previews_reused_total'  #: the digest's preview existed already
PREVIEWS_NONE_FOR_TYPE = 'previews_none_for_type_total'  #: neither image nor video
PREVIEWS_UNAVAILABLE = 'previews_unavailable_total'  #: videos, no ffmpeg on the machine
#: answers over TLS whose certificate was not verified (fetch.verify_tls = false; the
#: page's tls_verified is false); also, per origin that failed, by why:
#: tls_unverified_origins_<reason>_total (tls_expired, tls_hostname, tls_self_signed...)
TLS_UNVERIFIED_ANSWERS = 'tls_unverified_answers_total'
#: fetched responses of a type the crawl neither parses nor keeps: headers read, body not
TYPE_NOT_PARSED = 'type_not_parsed_total'
#: in-fetch following (fetch.follow_hops): same-key links queued behind a key's list,
#: the followed URLs requested (one out/ record each), and those left unrequested when
#: the task's listed URLs were done (they stay links: the crawl database takes them)
FOLLOW_QUEUED = 'follow_queued_total'
FOLLOWED = 'followed_total'
FOLLOW_LEFT = 'follow_left_total'
PLANNED_URLS = 'planned_urls_total'  #: URLs of keys the fetch plan placed on a reducer
#: Gauges, not totals: a fetch task reports each as the change since its last report
#: (and back to 0 at its end), so that the sum over a job's running tasks is the value
#: now (drivers/reports/progress.py). Kept out of the step ledger (merge_steps).
LIVE = 'live'
KEYS_IN_FLIGHT = 'keys_in_flight'   #: politeness keys started and not done
# Deferred URLs are also counted by status and reason: fetch_deferred_time_budget_total,
# fetch_deferred_host_failures_total, fetch_deferred_robots_503_total...

# solr (jobs/solr_index.py: mrcrawl index)
SOLR = 'solr'
SOLR_ADDED = 'documents_added_total'      #: documents Solr took (added or replaced)
SOLR_DELETED = 'documents_deleted_total'  #: ids deleted (a delta's deletions)
SOLR_REFUSED = 'documents_refused_total'  #: documents Solr refused (400; each in the log)
SOLR_BATCHES = 'batches_posted_total'     #: requests Solr answered 200
# Requests sent again, by why: retries_http_503_total, retries_network_connectionerror_total...

# render (jobs.lib.render: pages of sites with render = true, in the fetch task)
RENDER = 'render'
PAGES_RENDERED = 'pages_rendered_total'    #: pages parsed from their rendered DOM
BROWSER_STARTS = 'browser_starts_total'    #: browsers started (1 a task, more after a crash)
BROWSER_PAGES = 'browser_pages_total'    #: browser pages opened: one a key while it is
#: fetched, whose pages load in it in turn; another after a failed load
BROWSER_UNAVAILABLE = 'browser_unavailable_total'  #: tasks that could not start one (no
#: Playwright, no browser at render.browser): one warning in the task's log each
SUBREQUESTS_FETCHED = 'subrequests_fetched_total'  #: browser requests fetched and answered
SUBREQUESTS_OTHER_KEY = 'subrequests_other_key_total'  #: of the browser's requests, those
#: to another politeness key than the page's (its own fetcher and delay)
SUBREQUESTS_CACHED = 'subrequests_cached_total'  #: answered from the task's cache, no request
SUBREQUESTS_REVALIDATED = 'subrequests_revalidated_total'  #: a 304: the stored body answered
SUBREQUESTS_REVALIDATED_DROPPED = 'subrequests_revalidated_dropped_total'  #: a 304 for a body dropped meanwhile: asked again
SUBREQUEST_BYTES = 'subrequest_bytes_total'  #: body bytes read for the browser
SUBREQUEST_ROBOTS_FETCHED = 'subrequest_robots_txt_fetched_total'  #: robots.txt of other keys
# Also, by reason: render_failed_<reason>_total (the page is parsed as fetched:
# unavailable = no Playwright or browser, timeout, crash, browser_error, cancelled) and
# subrequests_aborted_<reason>_total (robots, crawl_delay: robots.txt's is over
# politeness.max_crawl_delay, private_address, dns, scheme, method, navigation,
# between_pages, over_budget_requests, over_budget_bytes, over_budget_seconds, time_limit,
# time_budget, key_busy: another key a thread of the task is fetching, error_<network
# reason>).

# plan (MRPlanFetch)
PLAN = 'plan'
PLAN_KEYS = 'keys_total'             #: politeness keys seen
PLAN_KEYS_PLACED = 'keys_placed_total'  #: keys written to the plan (the big ones)

# parse
PAGES_PARSED = 'pages_parsed_total'
PARSE_ERROR = 'parse_error_total'
LINKS_FOUND = 'links_found_total'
LINKS_KEPT = 'links_kept_total'
PAGES_NOINDEX = 'pages_noindex_total'       #: meta robots / X-Robots-Tag noindex (kept out of xml/)
SITE_PAGES = 'site_pages_total'             #: pages of a configured site (conf/sites)
FIELDS_PAGES = 'fields_extracted_total'     #: pages whose site fields were extracted
FIELDS_REQUIRED_MISSING = 'fields_required_missing_total'  #: a required field came out empty
EXTRACT_ERROR = 'extract_error_total'       #: extraction failed on a page (fields left null)
RESOURCES_FOUND = 'resources_found_total'   #: secondary resources named by site rules
RESOURCES_OVER_CAP = 'resources_over_cap_total'  #: past parse.max_resources_per_page: dropped
RESOURCE_DOCS = 'resource_docs_total'       #: fetched resources passed on unparsed (metadata)
PAGES_ON_TOPIC = 'pages_on_topic_total'     #: relevance >= topic.min_score
PAGES_OFF_TOPIC = 'pages_off_topic_total'   #: relevance below topic.min_score
ROBOTS_LINKED = 'robots_txt_linked_total'   #: seed pages that linked their robots.txt (sitemaps)
SITEMAP_URLS = 'sitemap_urls_total'         #: URLs read from sitemaps and robots.txt Sitemap: lines
SITEMAP_ERROR = 'sitemap_error_total'       #: a sitemap that could not be read (over a cap, bad XML)
SITEMAP_LASTMOD_BAD = 'sitemap_lastmod_bad_total'  #: a sitemap <lastmod> that is no W3C datetime (ignored)
TEXT_PAGES = 'text_pages_total'             #: text/plain bodies kept as page text
OTHER_CONTENT = 'other_content_total'       #: kept bodies of a type no handler reads
MAIN_TEXT_PAGES = 'main_text_total'         #: pages with a main text
MAIN_TEXT_EMPTY = 'main_text_empty_total'   #: the extractor found no main content
MAIN_TEXT_ERROR = 'main_text_error_total'   #: the extractor failed (page kept, no main text)
MAIN_TEXT_TOO_BIG = 'main_text_too_big_total'  #: body over parse.main_text_max_bytes: skipped
LANGUAGE_UNKNOWN = 'language_unknown_total'  #: too little text to tell the language
# Rejected links are counted as link_rejected(reason): nofollow, scheme, duplicate (the
# same URL twice on one page), over_cap, page_nofollow (all links of a nofollow page),
# off_topic (all links of an off-topic page, topic.off_topic_links = "drop"), site_rule
# (a site's [links] rules), and the reasons of
# jobs.lib.filters (url_too_long, exclude, include, scope, extension, path_depth,
# repeated_segments).

# optimize
NEW_URLS = 'new_urls_total'
KNOWN_LINKS = 'links_to_known_urls_total'
NEW_RESOURCES = 'new_resources_total'   #: unfetched URLs marked as a page's resource
RESOURCES_ALREADY_KNOWN = 'resources_already_known_total'  #: named resource fetched before: not again
DB_RECORDS = 'db_records_total'
DB_UNSHUFFLED = 'db_unshuffled_total'  #: db records no page of a small layer names: written as read
#: unfetched URLs within --max-depth: what the next generate can select (none: no generate)
UNFETCHED_WITHIN_DEPTH = 'unfetched_within_depth_total'
FIELDS_CHANGED = 'fields_changed_total'      #: refetched site page whose fields checksum changed
FIELDS_UNCHANGED = 'fields_unchanged_total'  #: refetched site page, same fields checksum

PAGES_CHANGED = 'pages_changed_total'      #: re-fetched page whose content/fields changed
PAGES_UNCHANGED = 'pages_unchanged_total'  #: re-fetched page that did not change (or 304)

# generate
GENERATED = 'generated_total'
GENERATED_RESOURCES = 'generated_resources_total'  #: of which resources (outside the caps)
GENERATED_HOSTS = 'generated_hosts_total'  #: distinct hosts of the generated URLs
BEYOND_DEPTH = 'beyond_depth_total'
OVER_TOP_N = 'over_top_n_total'            #: candidates past generate.top_n: stay unfetched
RECRAWL_DUE = 'recrawl_due_total'          #: fetched URLs whose interval has passed
RECRAWL_NOT_DUE = 'recrawl_not_due_total'  #: fetched URLs not due yet
#: fetched pages due before their interval passed: a sitemap lastmod after their last fetch
DUE_SITEMAP_LASTMOD = 'due_sitemap_lastmod_total'
INJECTED_NEW = 'injected_new_total'        #: a cycle's seeds the database did not know
INJECTED_KNOWN = 'injected_known_total'    #: a cycle's seeds it knew already
NOW_EXCLUDED = 'now_excluded_total'        #: known URLs the changed link filters reject
#: pages of earlier cycles a setting now refuses, kept (recrawl.prune off): in the fetch
#: as refused_kept_REASON_total (C.per), in optimize as this total
REFUSED_KEPT = 'refused_kept_total'
PAGES_FOR_NEXT_CYCLE = 'pages_for_next_cycle_total'  #: unfetched pages a resources-only layer leaves
OVER_HOST_CAP = 'over_host_cap_total'   #: left unfetched in crawldb by filter.max_urls_per_host
SITE_MAX_PAGES = 'site_max_pages_total'    #: held back by a site's max_pages (jobs.lib.sitelimits)
SITE_QUOTA_HOUR = 'site_quota_hour_total'  #: held back by a site's quota_per_hour
SITE_QUOTA_DAY = 'site_quota_day_total'    #: held back by a site's quota_per_day
#: What generate holds back for a later layer (the URLs stay unfetched in crawldb).
HELD_BACK = (OVER_HOST_CAP, OVER_TOP_N, SITE_MAX_PAGES, SITE_QUOTA_HOUR, SITE_QUOTA_DAY)

# merge
MERGED_PAGES = 'merged_pages_total'
EXACT_DUPLICATES = 'exact_duplicates_total'
NOT_A_PAGE = 'skipped_not_fetched_total'
NEAR_DUPLICATES = 'near_duplicates_total'         #: pages folded into a near-duplicate (SimHash)
CANONICAL_DUPLICATES = 'canonical_duplicates_total'  #: pages folded by their rel=canonical
CANONICAL_NOT_FETCHED = 'canonical_target_not_fetched_total'  #: rel=canonical to no merged page
CANONICAL_UNRESOLVED = 'canonical_claim_unresolved_total'  #: claimer itself folded by digest
NEAR_SKIPPED_SHORT = 'near_skipped_short_total'   #: fewer than merge.min_words words: not banded
NEAR_HASHED_IN_MERGE = 'near_hashed_in_merge_total'  #: page records without a usable
#: ``fingerprint`` (written before it, or with another merge.shingle_words): hashed by MRMerge
NEAR_TEXT_IN_OUT = 'near_text_in_out_total'  #: such a record read from meta/, whose text
#: is in out/ only: the driver merges from out/ instead (MergeDriver.merge_group)
NEAR_CANDIDATES = 'near_candidate_pairs_total'    #: pairs that met in a band bucket
NEAR_REJECTED = 'near_candidates_rejected_total'  #: candidates farther than max_hamming_distance
NEAR_BUCKET_OVERFLOW = 'near_bucket_overflow_total'  #: pages past merge.max_bucket_pages in a bucket
NEAR_UNFOLDED = 'near_chain_unfolded_total'       #: has a better near duplicate, none of which
#: is a group's canonical page (a chain a~b~c): kept as its own page
MERGE_AFFECTED = 'merge_affected_urls_total'  #: a later build's affected set: URLs merged
#: again (jobs.lib.affected); the other merge counters are then the whole crawl's
MERGE_AFFECTED_GROUPS = 'merge_affected_groups_total'  #: merge_map records made for them
ANCHORS_JOINED = 'anchors_joined_total'           #: in-link anchors attached to merged pages
ANCHORS_OVER_CAP = 'anchors_over_cap_total'       #: in-link anchors past merge.max_anchors
ANCHOR_TARGETS_NOT_PAGES = 'anchor_targets_not_pages_total'  #: anchors to URLs with no page
ANCHORS_AFFECTED = 'anchors_affected_urls_total'  #: a later build's anchors: member URLs
#: whose records were made again (drivers/later/affected_anchors.py); the step's other
#: counters then count the links to them, and inlinks_total every page's links
ANCHORS_KEPT = 'anchors_kept_total'               #: anchors/ records kept from the last build
RESOURCES_ATTACHED = 'resources_attached_total'   #: fetched secondary resources listed on
#: their parent's merged page (one per name and URL; a folded parent's go to its leader)
RESOURCES_SHARED = 'resources_shared_total'   #: extra pages a fetched resource is listed
#: on besides its first namer (one file that several pages name is fetched once)
RESOURCES_PARENT_NOT_A_PAGE = 'resources_parent_not_a_page_total'  #: resource records whose
#: resource_of is no merged page's URL after redirects (not fetched, noindex): not listed

# merge_join (MRMergeJoin: merge_map/ + out/* -> merged/)
MERGE_JOIN = 'merge_join'
JOIN_MERGED = 'merged_written_total'              #: merged records written (one per leader)
JOIN_FETCHES_DROPPED = 'fetches_not_kept_total'   #: page records whose text ends at the join:
#: a URL folded into another page, or a leader URL's earlier fetches
JOIN_NOT_CANDIDATES = 'not_merge_candidates_total'  #: page records MRMerge does not rank (not
#: fetched, noindex, secondary resources; counted by reason in group merge)
JOIN_MAP_WITHOUT_PAGE = 'map_without_page_total'  #: a merge_map record with no page in out/*
#: (out/ changed between the two jobs): no merged record for it
JOIN_FETCH_NOT_FOUND = 'map_fetch_not_found_total'  #: the fetch a merge_map record names is
#: not among its URL's pages in out/* (meta/ and out/ disagree): its latest fetch is used
# An incremental build's join (--incremental): pages whose fetch is in no new layer
JOIN_REUSED = 'stored_reused_total'    #: the same fetch and merge_map record: the stored
#: merged record stands, unread
JOIN_AFFECTED = 'join_affected_urls_total'  #: a delta build's join of the URLs its
#: change affects only (MRMergeJoin --only); stored_reused_total then also counts the
#: pages of the others, whose signatures the driver keeps, and the merge group's
#: anchors_joined_total and anchors_over_cap_total count the joined pages' anchors
JOIN_SIGNATURES_KEPT = 'signatures_kept_total'  #: their signatures, kept
JOIN_REREAD = 'stored_reread_total'    #: the same fetch, other folds or anchors: the stored
#: merged record read back by its place
JOIN_PAGES_KEPT = 'folded_pages_kept_total'  #: page records of URLs folded into another
#: page kept in the page store (store/BUILD), for a later build where they lead
JOIN_NOT_STORED = 'leader_not_stored_total'  #: no stored record of the fetch it leads with: the
#: build is made in full instead
RESOURCES_NOT_FETCHED = 'resources_not_fetched_total'  #: resources a leader's page names with
#: no fetched record (listed with status null, reason not_fetched)

# in-link anchors (MRMerge's first step, Nutch's invertlinks: jobs.lib.merging.inlinks)
INLINKS = 'inlinks_total'                         #: links with anchor text inverted
INLINKS_INTERNAL_SKIPPED = 'inlinks_internal_skipped_total'  #: same host, merge.internal_anchors off
INLINKS_EMPTY_SKIPPED = 'inlinks_empty_text_skipped_total'   #: links without anchor text
INLINKS_REDIRECTED = 'inlinks_redirected_total'   #: anchors moved to a redirect's target
ANCHOR_TARGETS = 'anchor_targets_total'           #: URLs with at least one anchor

# index (MRIndexRows: the rows of OUT/index/ and OUT/hosts/)
INDEX = 'index'
INDEX_ROWS = 'index_rows_total'                   #: one per page record of every layer
INDEX_HOST_LAYERS = 'index_host_layers_total'     #: (layer, host) totals written
INDEX_DUPLICATE_ROWS = 'index_duplicate_rows_total'  #: fetched rows with a duplicate_of
INDEX_DUPLICATE_NOT_A_ROW = 'index_duplicate_not_a_row_total'  #: merge_map/ names a duplicate
#: URL with no fetched page record (left out of the index)
INDEX_WARC_ROWS = 'index_warc_rows_total'  #: rows given a WARC file/offset/length
INDEX_WARC_NOT_A_ROW = 'index_warc_not_a_row_total'  #: warc_index/ names a URL and layer
#: with no page record (left out of the index)
INDEX_DUPLICATE_CONFLICT = 'index_duplicate_conflict_total'  #: URL folded into 2+ pages:
#: the smallest canonical URL is kept
INDEX_ROWS_MADE = 'index_rows_made_total'  #: a later build's rows made anew
#: (drivers/later/affected_index.py: the URLs whose current fetch changed)
INDEX_ROWS_KEPT = 'index_rows_kept_total'  #: a later build's rows kept from the last index

# warc (MRWarc: WARC/1.1 files, jobs/warc.py)
WARC = 'warc'
WARC_FILES = 'files_total'                       #: WARC files written (one per map split)
WARC_BYTES = 'bytes_total'                       #: bytes of those files (gzip)
WARC_HEADERS_REBUILT = 'headers_rebuilt_total'   #: doc had no ``http`` field (fetched with
#: WARC off): status line, headers and request rebuilt from the doc's fields
WARC_PAYLOAD_NOT_VERBATIM = 'payload_not_verbatim_total'  #: body rebuilt from lossy text:
#: its digest differs from the doc's (fetched with WARC off)
# Also, by name: records_<type>_total (warcinfo, request, response, revisit);
# response_total, revisit_identical_total, revisit_not_modified_total (what each archived
# URL became); truncated_length_total, truncated_unspecified_total (WARC-Truncated);
# skipped_<status>_total (no response to archive: network_error, robots_denied, ...;
# skipped_no_body_total: a page record without its body).

WARC_SKIPPED_NO_BODY = 'skipped_no_body_total'  #: a page record without its body (MRWarc)
#: robots.txt and redirect (3xx) responses archived with their requests (jobs.lib.warcfile)
WARC_ROBOTS_ARCHIVED = 'robots_txt_archived_total'
WARC_REDIRECTS_ARCHIVED = 'redirects_archived_total'

# xml
XML_DOCS = 'xml_documents_total'
XML_DELETIONS = 'xml_deletions_total'   #: deletion documents (re-crawl: page gone)

# merge: pages left out
SKIPPED_NOINDEX = 'skipped_noindex_total'    #: noindex pages (meta robots, X-Robots-Tag)

# inject (the driver: the seeds of a crawl or of a cycle)
INJECT = 'inject'
SEEDS = 'seeds_total'                 #: valid seed URLs
SEEDS_BAD = 'seeds_bad_total'         #: seed lines that are not a fetchable URL
SEED_HOSTS = 'seed_hosts_total'       #: distinct hosts of the seeds

# current (MRCurrent: each URL's current fetch, from a crawl's second cycle on)
CURRENT = 'current'
CURRENT_PAGES = 'current_total'       #: URLs with a current fetch
CURRENT_READ = 'current_read_total'   #: fetches read: the last build's current/ and new layers'
CURRENT_NEW = 'current_new_total'     #: URLs whose current fetch is newer than the last build
CURRENT_UNSHUFFLED = 'current_unshuffled_total'  #: current fetches written as read (--keys)
SUPERSEDED = 'superseded_total'       #: fetches a later definitive fetch replaced

# delta (MRDelta: what changed since the last build)
DELTA = 'delta'
DELTA_ADDED = 'added_total'
DELTA_CHANGED = 'changed_total'
DELTA_UNCHANGED = 'unchanged_total'
DELTA_DELETED = 'deleted_total'       #: also deleted_<reason>_total: per('deleted', reason)

# reparse (MRReparse: pages parsed again from their WARC records)
REPARSE = 'reparse'
REPARSED = 'reparsed_total'
NOT_STORED = 'not_stored_total'       #: pages with no stored body (WARC off when fetched)

# pagerank (MRPageRank)
PAGERANK = 'pagerank'
PAGERANK_NODES = 'nodes_total'



def merge_steps(step_counters):
    """mrjob's per-step counters (``runner.counters()``) summed into one ``{group: {name: n}}``."""
    merged = {}
    for step in step_counters:
        for group, names in step.items():
            if group == LIVE:
                continue
            into = merged.setdefault(group, {})
            for name, n in names.items():
                into[name] = into.get(name, 0) + n
    return merged


def status_totals(group, job, statuses):
    """``{status: n}``: each of *statuses* summed over its reasons, from *group* (one
    group's ``{name: n}``) of *job*'s status counters (:func:`status`)."""
    prefixes = {s: status(job, s)[:-len('_total')] for s in statuses}
    totals = dict.fromkeys(statuses, 0)
    for name, n in group.items():
        for s, prefix in prefixes.items():
            if name.startswith(prefix):
                totals[s] += n
    return totals


def status(job, status_name, reason=None):
    """``status('fetch', 'network_error', 'timeout')`` -> ``fetch_network_error_timeout_total``."""
    parts = [job, status_name] + ([reason] if reason else [])
    return '_'.join(parts) + '_total'


def link_rejected(reason):
    """Name for a link dropped by parsing/filters, e.g. ``link_rejected_scheme_total``."""
    return per('link_rejected', reason)


def sitemap_parsed(kind):
    """URL sources read: ``sitemap_urlset_total``, ``sitemap_sitemapindex_total``,
    ``sitemap_text_total``, ``sitemap_robots_total``."""
    return per('sitemap', kind)


def content_parsed(parser):
    """Documents a content parser read (jobs.lib.content): ``content_pdf_total``."""
    return per('content', parser)


def content_error(parser, why):
    """Documents it could not read, by why: ``content_pdf_error_timeout_total``,
    ``content_pdf_error_pdf_password_error_total``..."""
    return per('content_%s_error' % parser, why)


def tls_unverified_origins(reason):
    """Origins fetched without verification, by why their certificate failed:
    ``tls_unverified_origins_tls_expired_total``..."""
    return per('tls_unverified_origins', reason)


def credentials_withheld(why):
    """Requests a site's [request] credentials, headers and cookies were left off, by
    why: ``credentials_withheld_http_total`` (plain http without over_http),
    ``credentials_withheld_unverified_total`` (a certificate that failed verification)."""
    return per('credentials_withheld', why)


def previews_failed(why):
    """Previews not made, by why: ``previews_failed_timeout_total``,
    ``previews_failed_too_many_pixels_total``, ``previews_failed_ffmpeg_total``..."""
    return per('previews_failed', re.sub(r'(?<=[a-z])(?=[A-Z])', '_', why).lower())


def per(prefix, what):
    """A counter named after a value: ``per('deleted', 'gone')`` -> ``deleted_gone_total``."""
    return '%s_%s_total' % (prefix, what)

