"""The crawl's columnar index: OUT/index/ and OUT/hosts/, Parquet datasets.

    index rows   out/* + merge_map/ (+ warc_index/*)  -> index_rows/   (MRIndexRows:
                                                                      joins, host totals)
    parquet      index_rows/      -> index/layer=NNN/part-XXXXX.parquet   (this module;
                                                   drivers/later/affected_index.py runs both)
                                     hosts/layer=NNN/part-XXXXX.parquet
    index_rows/ is removed once both datasets are in place.

**Why a job of JSON rows, then the driver writes Parquet** (not reducers writing
Parquet): the tasks keep the small dependency archive (pyarrow, ~40 MB of wheels plus
numpy, stays off the nodes: drivers/runtime/hadoop.py TASK_DISTRIBUTIONS is unchanged), and
the job's output goes through Hadoop's output committer like every other step, where
side files written by streaming reducers would not (a retried or speculative attempt
would leave a second copy). The cost is one sequential pass in the driver over rows of
about 400 bytes (no body, no text), parsed in batches by Arrow's JSON reader (C++,
:data:`FAST_MARK`; bench/README.md has the rate), against the hours the crawl took to
fetch them. Past ~100 M rows, write Parquet from Spark over index_rows/ instead (the
rows are plain JSON lines).

**Memory** is bounded: at most ``MAX_BUFFERED_ROWS`` rows are held, across all
layers; when the buffer is full every layer's pending rows become one row group.

**Partitioning: by layer** (Hive style ``layer=NNN``, which pyarrow.dataset, pandas,
DuckDB ``hive_partitioning`` and Spark read as a ``layer`` column). A layer is the
crawl's unit of work and of reporting (which layer fetched what, how the crawl grew),
it gives a handful of partitions of similar size, and it is the one key every row has
from the start. A registered-domain hash bucket would serve "everything of domain X"
instead, but at the price of buckets x layers small files on a small crawl; here each
file keeps the job's key order, sorted by URL, so rows of one host are contiguous and
the Parquet min/max statistics of ``url``, ``host`` and ``registered_domain`` let
readers skip row groups for a host or domain filter anyway.

Columns: see INDEX_SCHEMA and HOSTS_SCHEMA. The WARC columns are named after Common
Crawl's columnar index; they are filled (from MRWarc's warc_index/, joined by URL and
layer in MRIndexRows) when ``warc.enabled`` is on, else null. warc_filename is relative
to the crawl folder (``warc/mrcrawl-L000-part-00000-0.warc.gz``); offset and length
select one gzip member, the URL's response or revisit record.
"""
import datetime
import io

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from jobs.lib import records as R

#: Rows held in memory at once, all layers together (about 1 KB each as Python objects).
MAX_BUFFERED_ROWS = 50_000

TIMESTAMP = pa.timestamp('us', tz='UTC')   # microseconds: what Spark reads natively

#: One row per page record (per URL per layer it was in; the layer is the partition).
INDEX_SCHEMA = pa.schema([
    ('url', pa.string()),
    ('host', pa.string()),                 # host[:port], the default politeness key
    ('registered_domain', pa.string()),    # Public Suffix List; an IP stays as is
    ('status', pa.string()),               # records.FETCH_*
    ('reason', pa.string()),               # why, for every status but fetched
    ('http_status', pa.int32()),
    ('fetch_time', TIMESTAMP),
    ('content_type', pa.string()),
    ('length', pa.int64()),                # body bytes kept
    ('digest', pa.string()),               # sha1:BASE32 of the body
    ('depth', pa.int32()),
    ('title', pa.string()),
    ('language', pa.string()),
    ('duplicate_of', pa.string()),         # canonical URL of the merged page, else null
    ('final_url', pa.string()),
    ('elapsed', pa.float64()),             # seconds spent fetching it (retries included)
    ('attempts', pa.int32()),
    ('tls_verified', pa.bool_()),          # https: certificate verified; http: null
    ('warc_filename', pa.string()),        # relative to the crawl folder; null: not archived
    ('warc_record_offset', pa.int64()),
    ('warc_record_length', pa.int64()),
])

#: One row per (layer, host): what the report's host sections read.
HOSTS_SCHEMA = pa.schema(
    [('host', pa.string()), ('urls', pa.int64()), ('elapsed', pa.float64()),
     ('bytes', pa.int64())]
    + [(status, pa.int64()) for status in R.FETCH_STATUSES]
    + [('reasons', pa.map_(pa.string(), pa.int64()))])


def _str(v):
    return v if isinstance(v, str) else (None if v is None else str(v))


def _int(v):
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _float(v):
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def _bool(v):
    return v if isinstance(v, bool) else None


def _time(v):
    if not isinstance(v, str):
        return None
    try:
        t = datetime.datetime.fromisoformat(v)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)


_CONVERT = {pa.string(): _str, pa.int32(): _int, pa.int64(): _int, pa.float64(): _float,
            pa.bool_(): _bool, TIMESTAMP: _time}


def index_columns(row):
    """An index_row record -> its values in INDEX_SCHEMA order."""
    return [_CONVERT[f.type](row.get(f.name)) for f in INDEX_SCHEMA]


def host_columns(rec):
    """A host_layer record -> its values in HOSTS_SCHEMA order."""
    statuses = rec.get('statuses') or {}
    reasons = rec.get('reasons') or {}
    return ([_str(rec.get('host')), _int(rec.get('urls')) or 0,
             _float(rec.get('elapsed')) or 0.0, _int(rec.get('bytes')) or 0]
            + [_int(statuses.get(s)) or 0 for s in R.FETCH_STATUSES]
            + [sorted((str(k), _int(v) or 0) for k, v in reasons.items())])


class PartitionedWriter:
    """Parquet files ``DIR/layer=NNN/NAME.parquet``, one open writer per layer seen in
    the current input part, rows buffered up to a shared bound."""

    def __init__(self, fs, root, schema, counts):
        self.fs, self.root, self.schema, self.counts = fs, root, schema, counts
        self.name = None
        self.open = {}       # layer -> (context manager, file, ParquetWriter, rows)
        self.files = 0

    def start(self, name):
        self.name = name

    def add(self, layer, values):
        self.entry(layer)[3].append(values)

    def add_table(self, layer, table):
        """*table* (rows of *layer* in this schema) as a row group of its own, after the
        layer's pending rows."""
        entry = self.entry(layer)
        self.flush_entry(entry)
        entry[2].write_table(table)
        self.counts['row_groups'] += 1

    def entry(self, layer):
        entry = self.open.get(layer)
        if entry is None:
            folder = self.fs.join(self.root, 'layer=%03d' % layer)
            self.fs.mkdirs(folder)
            cm = self.fs.open_write_binary(self.fs.join(folder, self.name + '.parquet'))
            f = cm.__enter__()
            writer = pq.ParquetWriter(f, self.schema, compression='zstd')
            entry = self.open[layer] = [cm, f, writer, []]
            self.files += 1
        return entry

    def pending(self):
        return sum(len(e[3]) for e in self.open.values())

    def flush(self):
        """Each layer's pending rows -> one row group."""
        for entry in self.open.values():
            self.flush_entry(entry)

    def flush_entry(self, entry):
        rows = entry[3]
        if rows:
            columns = [pa.array([r[i] for r in rows], type=f.type)
                       for i, f in enumerate(self.schema)]
            entry[2].write_table(pa.Table.from_arrays(columns, schema=self.schema))
            self.counts['row_groups'] += 1
            entry[3] = []

    def close(self):
        self.flush()
        for cm, f, writer, _ in self.open.values():
            writer.close()
            cm.__exit__(None, None, None)
        self.open = {}


#: What marks an index_row line as MRIndexRows writes it (orjson: no spaces). Such lines
#: are parsed in batches by Arrow's JSON reader, in C++, against INDEX_SCHEMA: a fifth
#: of the time of one Python conversion per cell. Any other line, and a batch Arrow
#: cannot read as the schema says (a value of another type), take the per-line way,
#: which gives the same columns and counts what it cannot read.
FAST_MARK = b'"kind":"index_row"'
_FAST_OPTIONS = pj.ParseOptions(explicit_schema=pa.schema(
    list(INDEX_SCHEMA) + [pa.field('layer', pa.int64())]), unexpected_field_behavior='ignore')


def rows_to_parquet(fs, rows_dir, index_dir, hosts_dir, max_buffered=MAX_BUFFERED_ROWS):
    """index_rows/part-* -> index_dir and hosts_dir, partitioned by layer. Returns counts
    (``fast_rows``: the rows Arrow's reader parsed)."""
    counts = {'rows': 0, 'hosts': 0, 'row_groups': 0, 'bad_lines': 0, 'fast_rows': 0}
    index = PartitionedWriter(fs, index_dir, INDEX_SCHEMA, counts)
    hosts = PartitionedWriter(fs, hosts_dir, HOSTS_SCHEMA, counts)
    fs.mkdirs(index_dir)
    fs.mkdirs(hosts_dir)
    for part in fs.listdir(rows_dir):
        if part.startswith(('.', '_')):
            continue
        name = part.rsplit('.', 1)[0] if part.endswith('.json') else part
        index.start(name)
        hosts.start(name)
        batch = []
        try:
            for line in fs.iter_lines(fs.join(rows_dir, part)):
                if FAST_MARK in line:
                    batch.append(line.rstrip(b'\n'))
                    if len(batch) >= max_buffered:
                        add_batch(batch, index, hosts, counts, max_buffered)
                        batch = []
                elif line.strip():
                    add_line(line, index, hosts, counts, max_buffered)
            add_batch(batch, index, hosts, counts, max_buffered)
        finally:
            index.close()
            hosts.close()
    counts['files'] = index.files
    write_schema(fs, index_dir)
    return counts


def write_schema(fs, index_dir):
    """The schema alone, for readers of a crawl that fetched nothing (Spark's convention;
    pyarrow, DuckDB globs and Spark skip files named _*)."""
    with fs.open_write_binary(fs.join(index_dir, '_common_metadata')) as f:
        pq.write_metadata(INDEX_SCHEMA, f)


def rows_table(lines):
    """index_row *lines* (bytes, orjson's) as one table of INDEX_SCHEMA + layer."""
    schema = _FAST_OPTIONS.explicit_schema
    try:
        return pj.read_json(io.BytesIO(b'\n'.join(lines)), parse_options=_FAST_OPTIONS) \
            if lines else schema.empty_table()
    except pa.ArrowInvalid:      # a value of another type: converted one by one
        rows = [orjson.loads(line) for line in lines]
        return pa.Table.from_arrays(
            [pa.array([v[i] for v in map(index_columns, rows)], f.type)
             for i, f in enumerate(INDEX_SCHEMA)]
            + [pa.array([int(r.get('layer') or 0) for r in rows], pa.int64())],
            schema=schema)


def add_batch(lines, index, hosts, counts, max_buffered):
    """index_row *lines* parsed by Arrow, one row group per layer; line by line when a
    value does not fit the schema."""
    if not lines:
        return
    try:
        table = pj.read_json(io.BytesIO(b'\n'.join(lines)), parse_options=_FAST_OPTIONS)
    except pa.ArrowInvalid:
        for line in lines:
            add_line(line, index, hosts, counts, max_buffered)
        return
    layers = pc.fill_null(table['layer'], 0)
    table = table.drop_columns(['layer'])
    for layer in sorted(pc.unique(layers).to_pylist()):
        index.add_table(layer, table.filter(pc.equal(layers, layer)))
    counts['rows'] += table.num_rows
    counts['fast_rows'] += table.num_rows


def add_line(line, index, hosts, counts, max_buffered):
    """One line of index_rows/ converted value by value."""
    try:
        rec = orjson.loads(line)
        layer = int(rec.get('layer') or 0)
    except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError):
        counts['bad_lines'] += 1
        return
    if rec.get('kind') == 'index_row':
        index.add(layer, index_columns(rec))
        counts['rows'] += 1
    elif rec.get('kind') == 'host_layer':
        hosts.add(layer, host_columns(rec))
        counts['hosts'] += 1
    else:
        counts['bad_lines'] += 1
        return
    if index.pending() + hosts.pending() >= max_buffered:
        index.flush()
        hosts.flush()


def layer_dirs(fs, root):
    """[(layer int, folder)] of a dataset partitioned as ``layer=NNN``."""
    out = []
    for name in fs.listdir(root):
        if name.startswith('layer=') and name[6:].isdigit():
            out.append((int(name[6:]), fs.join(root, name)))
    return sorted(out)
