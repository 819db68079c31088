"""Every name under a crawl folder (OUT), and only here: the rest of drivers/ joins
these to OUT (``crawl.path(layout.MERGE_MAP)``) and never spells a name itself
(tests/test_layout.py). README.md and docs/data-flow.md say what each one holds.

This module imports nothing and sits below every room of drivers/ (tests/test_imports.py).
"""

#: The layout this mrcrawl reads and writes. The marker file records it (``layout N``;
#: a marker without the line is layout 1); a folder of another layout is refused
#: (drivers/folder/settings.py), never read as this one.
VERSION = 1

# -- files at the top ------------------------------------------------------------------
MARKER = '.mrcrawl'          # marks a crawl folder (drivers/folder/settings.py)
DEMO_MARKER = '.mrcrawl-demo'   # marks a folder `mrcrawl demo` made
STATE = 'state.json'         # the last step that completed (drivers/runtime/steps.py)
REPARSE = 'reparse.json'     # the build of a reparse under way
SETTINGS = 'conf.json'       # the last run's resolved settings
LOCK = 'lock.json'           # held while a run works on the folder
STOP = 'STOP'                # a user's request to stop after the layer
REPORT = 'report.json'
REPORT_HTML = 'report.html'
OUTPUTS = 'outputs.json'     # the build the outputs describe: base and deltas
STATUS = 'status.json'       # where a run is, while it runs (drivers/reports/status.py)
SOLR = 'solr.json'           # the builds each Solr holds (drivers/export/solr.py)
#: Files a user or a run may leave in a folder that is not (yet) a crawl's.
CONTROL_FILES = frozenset((STOP, LOCK))

# -- one folder per layer: NAME/LLL ---------------------------------------------------
IN = 'in'                    # url records a layer fetches
PAGES = 'out'                # page records (out/LLL)
META = 'meta'                # page records without their text
DOC = 'doc'                  # doc records (fetch.parse = false)
PLAN = 'plan'                # the fetch plan of a layer's big keys
PLAN_SUMS = 'plan_sums'      # what generate summed for the plan
CRAWLDB = 'crawldb'          # the crawl database after each layer
CHANGES = 'changes'          # the URLs whose current fetch a layer may change
ROBOTS = 'robots'            # robots.txt answers and paces a layer read
WARC_INDEX = 'warc_index'    # where each archived URL is (fetch.parse = false)
REPARSED = 'reparsed'        # pages parsed again (mrcrawl reparse)
PAGERANK = 'pagerank'        # generate.strategy = pagerank's scores
SEEDS = 'seeds'              # seeds of each cycle (SEEDS/CCC) and injected.json
INJECTED = 'injected.json'   # in SEEDS/: the seeds injected so far

# -- the crawl's datasets ---------------------------------------------------------------
MERGE_MAP = 'merge_map'
MERGE_KEYS = 'merge_keys'
ANCHORS = 'anchors'
MERGED = 'merged'
XML = 'xml'
DELTA = 'delta'
DELTA_XML, DELTA_RECORDS = 'xml', 'records'   # in DELTA/BUILD/: documents, records
CURRENT = 'current'          # one fetch per URL: the latest (MRCurrent)
SIGNATURES = 'signatures'
STORE = 'store'              # folded pages of a build (STORE/BUILD)
INDEX = 'index'              # Parquet, index/layer=LLL
HOSTS = 'hosts'              # Parquet, hosts/layer=LLL
INDEX_ROWS = 'index_rows'
WARC = 'warc'
MEDIA = 'media'
STEPS = 'steps'              # each step's counters and seconds (STEPS/NAME.json)
CYCLES = 'cycles'            # each cycle (CYCLES/CCC.json)
#: A folder of an older mrcrawl's re-crawl rounds, whose database this one cannot read.
OLD_RECRAWL = 'recrawl'


def old(name):
    """The last build's version of dataset *name*, kept while a later build reads it."""
    return 'prev_' + name


def store(build):
    """Where *build* keeps the pages folded into others (STORE/BUILD)."""
    return STORE + '/' + build


def delta_part(build, part):
    """Part *part* (DELTA_XML, DELTA_RECORDS) of the delta of *build*."""
    return '/'.join((DELTA, build, part))


OLD_MERGE_MAP, OLD_MERGE_KEYS, OLD_ANCHORS = old(MERGE_MAP), old(MERGE_KEYS), old(ANCHORS)
OLD_CURRENT, OLD_INDEX, OLD_HOSTS = old(CURRENT), old(INDEX), old(HOSTS)
OLD_SIGNATURES, OLD_MERGED = old(SIGNATURES), old(MERGED)


# -- temporary folders: TMP/NAME, renamed into place or removed -----------------------
TMP = 'tmp'


def tmp(name):
    """A step's output folder before it is renamed into place (drivers/runtime/steps.py)."""
    return TMP + '/' + name


def side(name):
    """The join's side folder of *name* (MRMergeJoin writes it beside its output)."""
    return tmp(name + '_side')


INJECT_TMP = tmp('inject')
SEEDS_TMP = tmp('seeds')
PLAN_TMP = tmp('plan')
LAYER_PAGES = tmp('layer_pages')
OPTIMIZE_PASS = tmp('optimize_pass')
MERGE_MAP_TMP = tmp('merge_map')
MERGE_KEYS_TMP = tmp('merge_keys')
AFFECTED_IN = tmp('affected_in')
KEYS_SIDE = side('keys')                  # MRMergeJoin's side files, for the next build
CHANGED_SIDE = side('changed')
LINKS_SIDE = side('links')
INDEX_ROWS_SIDE = side('index_rows')
MERGE_AFFECTED = tmp('merge_affected')
JOIN_ONLY = tmp('join_only')
ANCHORS_NEW = tmp('anchors_new')
ANCHORS_ONLY = tmp('anchors_only')
ANCHORS_SPLICED = tmp('anchors_spliced')
CURRENT_KEYS = tmp('current_keys')
CURRENT_PASS = tmp('current_pass')
INDEX_FOLDS = tmp('index_folds')
INDEX_TMP = tmp('index')
HOSTS_TMP = tmp('hosts')
JOINED = tmp('joined')
