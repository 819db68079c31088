"""Counter names: the monitoring surface. Group = the job; names snake_case, reason last.

Status counters are built by :func:`status` so that every outcome has one name:
``fetch_fetched_total``, ``fetch_network_error_timeout_total``...
"""
FETCH = 'fetch'
PARSE = 'parse'
OPTIMIZE = 'optimize'
GENERATE = 'generate'
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
HOSTS = 'hosts_total'
INTERNAL_ERROR = 'internal_error_total'

# parse
PAGES_PARSED = 'pages_parsed_total'
PARSE_ERROR = 'parse_error_total'
LINKS_FOUND = 'links_found_total'
LINKS_KEPT = 'links_kept_total'

# optimize
NEW_URLS = 'new_urls_total'
KNOWN_LINKS = 'links_to_known_urls_total'
DB_RECORDS = 'db_records_total'

# generate
GENERATED = 'generated_total'
BEYOND_DEPTH = 'beyond_depth_total'

# merge
MERGED_PAGES = 'merged_pages_total'
EXACT_DUPLICATES = 'exact_duplicates_total'
NOT_A_PAGE = 'skipped_not_fetched_total'

# xml
XML_DOCS = 'xml_documents_total'


def status(job, status_name, reason=None):
    """``status('fetch', 'network_error', 'timeout')`` -> ``fetch_network_error_timeout_total``."""
    parts = [job, status_name] + ([reason] if reason else [])
    return '_'.join(parts) + '_total'


def link_rejected(reason):
    """Name for a link dropped by parsing/filters, e.g. ``link_rejected_scheme_total``."""
    return 'link_rejected_%s_total' % reason
