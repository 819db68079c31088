"""``mrcrawl report OUT``: the crawl as one self-contained HTML page (OUT/report.html).

    mrcrawl report OUT [--output FILE] [--png-dir DIR]

What it shows, and where each figure comes from:

- **per layer** (report.json's rows, else rebuilt from steps/*.json): pages by status,
  bytes, new URLs, seconds; the **duplicate rate** (fetched rows of the layer that
  merge folded into another page: index/ ``duplicate_of``); **fetch time against its
  politeness lower bound** = (largest per-host URL count of the layer - 1) x
  politeness.delay, since one host's URLs are fetched one at a time, that far apart
  (its first request may start the step: its last one of the layer before may be a
  delay past by then, and robots.txt is read once a cycle).
  The per-host counts are a MapReduce count (MRIndexRows' ``host_layer`` totals, in
  hosts/); this page streams them keeping one maximum per layer, so memory does not grow
  with the number of hosts. Without hosts/ (a crawl stopped before its index), the
  largest planned key of plan/NNN stands in when there is one, else "n/a".
- **slowest hosts** (hosts/): summed fetch seconds per (layer, host), the top ones, with
  their URLs by status and the reasons that stopped the rest (``time_budget``,
  ``host_failures``, ``robots_503``...).
- **error classes** (index/): URLs by status and reason, with example URLs; **robots
  denials** by reason with examples, and the hosts with most denials.

Memory is bounded throughout: Parquet files are read in record batches of a few columns,
only counters, a top-N heap and a few example URLs per class are kept. A missing step
file, folder or an empty layer leaves a "n/a" or a note, never an exception. Charts are
matplotlib (Agg) PNGs embedded as base64, so the page is one file that can be mailed.
"""
import argparse
import base64
import heapq
import html
import json
import logging
import os
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from drivers.folder import layout
from drivers.later.index import layer_dirs
from drivers.reports.charts import TOP_HOSTS, charts, short
from drivers.reports.harvest import harvest_section, scan_tasks
from drivers.reports.summary import Report
from drivers.reports.table import cell, html_table
from drivers.runtime import fs as fslib
from jobs.lib import counters as C, records as R

log = logging.getLogger('mrcrawl')

EXAMPLES = 3
BATCH_ROWS = 65_536
OK_STATUSES = (R.FETCH_FETCHED, R.FETCH_NOT_MODIFIED)


# -- reading what the crawl left ----------------------------------------------------------

def _read_json(fs, path):
    try:
        return json.loads(fs.read_text(path))
    except (OSError, ValueError):
        return None


def _batches(fs, folder, columns):
    """Record batches of *columns* from every Parquet file in *folder*."""
    for name in fs.listdir(folder):
        if not name.endswith('.parquet'):
            continue
        with fs.open_read_binary(fs.join(folder, name)) as f:
            pf = pq.ParquetFile(f)
            have = [c for c in columns if c in pf.schema_arrow.names]
            yield from pf.iter_batches(batch_size=BATCH_ROWS, columns=have)


def layers_from_steps(out, fs, conf):
    """Per-layer rows rebuilt from steps/*.json (a crawl without report.json)."""
    report = Report(out, fs, conf or {}, 0, '')
    names = fs.listdir(fs.join(out, layout.STEPS))
    layers = sorted({int(n[6:9]) for n in names
                     if n.startswith('fetch-') and n[6:9].isdigit()})
    rows = []
    for layer in layers:
        L = '%03d' % layer
        steps = {kind: report.load_step('%s-%s' % (kind, L))
                 for kind in ('plan', 'fetch', 'parse', 'optimize')}
        if ('generate-%03d.json' % (layer + 1)) in names:
            steps['generate'] = report.load_step('generate-%03d' % (layer + 1))
        steps = {k: v for k, v in steps.items() if not v.get('missing')
                 or k in ('fetch', 'optimize')}
        urls_in = steps['fetch']['counters'].get(C.FETCH, {}).get(C.URLS_IN, 0)
        rows.append(Report.layer_row(layer, urls_in, steps))
    return rows


def plan_max(fs, out, layer):
    """Largest planned key's URL count in plan/NNN, or None (no plan, or nothing placed)."""
    folder = fs.join(out, layout.PLAN, '%03d' % layer)
    best = None
    for name in fs.listdir(folder):
        if name.startswith(('.', '_')):
            continue
        try:
            for line in fs.iter_lines(fs.join(folder, name)):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get('urls'), int):
                    if best is None or rec['urls'] > best[0]:
                        best = (rec['urls'], rec.get('key'))
        except OSError:
            continue
    return best


def scan_index(fs, out):
    """Per-layer rows/fetched/duplicates and error classes from index/, or None."""
    ok = pa.array(list(OK_STATUSES))
    root = fs.join(out, layout.INDEX)
    if not fs.exists(root):
        return None
    per_layer, classes = {}, {}
    for layer, folder in layer_dirs(fs, root):
        stats = per_layer.setdefault(layer, {'rows': 0, 'fetched': 0, 'duplicates': 0})
        for batch in _batches(fs, folder, ['url', 'status', 'reason', 'duplicate_of']):
            status = batch.column('status')
            stats['rows'] += batch.num_rows
            fetched = pc.equal(status, R.FETCH_FETCHED)
            stats['fetched'] += pc.sum(fetched).as_py() or 0
            stats['duplicates'] += pc.sum(pc.and_(
                fetched, pc.is_valid(batch.column('duplicate_of')))).as_py() or 0
            bad = batch.filter(pc.invert(pc.fill_null(pc.is_in(status, value_set=ok), False)))
            for url, st, reason in zip(bad.column('url').to_pylist(),
                                       bad.column('status').to_pylist(),
                                       bad.column('reason').to_pylist()):
                c = classes.setdefault((st or 'unknown', reason or ''),
                                       {'urls': 0, 'examples': []})
                c['urls'] += 1
                if len(c['examples']) < EXAMPLES:
                    c['examples'].append(url)
    return {'layers': per_layer, 'classes': classes}


def scan_hosts(fs, out, top=TOP_HOSTS):
    """Largest host per layer, the slowest (layer, host) pairs, most robots-denied hosts."""
    root = fs.join(out, layout.HOSTS)
    if not fs.exists(root):
        return None
    largest, slow, denied, n = {}, [], [], 0
    cols = ['host', 'urls', 'elapsed', 'bytes', 'reasons'] + list(R.FETCH_STATUSES)
    for layer, folder in layer_dirs(fs, root):
        largest.setdefault(layer, (0, None, 0))
        for batch in _batches(fs, folder, cols):
            for rec in batch.to_pylist():
                n += 1
                urls = rec.get('urls') or 0
                big, host, hosts = largest[layer]
                largest[layer] = ((urls, rec['host'], hosts + 1) if urls > big
                                  else (big, host, hosts + 1))
                rec['layer'] = layer
                rec['reasons'] = dict(rec.get('reasons') or [])
                item = (rec.get('elapsed') or 0.0, n, rec)
                (heapq.heappush if len(slow) < top else heapq.heappushpop)(slow, item)
                if rec.get(R.FETCH_ROBOTS_DENIED):
                    item = (rec[R.FETCH_ROBOTS_DENIED], n, rec)
                    (heapq.heappush if len(denied) < top else heapq.heappushpop)(denied, item)
    return {'largest': largest,
            'slowest': [r for _, _, r in sorted(slow, key=lambda t: (-t[0], t[1]))],
            'denied': [r for _, _, r in sorted(denied, key=lambda t: (-t[0], t[1]))]}


def _scans(out, fs, notes):
    """(index/, hosts/ and robots/'s task records, each scanned; None if absent or
    unreadable, with a note)."""
    index = hosts = tasks = None
    try:
        index = scan_index(fs, out)
    except Exception as e:     # a damaged file must not cost the rest of the page
        notes.append('index/ unreadable: %s: %s' % (type(e).__name__, e))
    try:
        hosts = scan_hosts(fs, out)
    except Exception as e:
        notes.append('hosts/ unreadable: %s: %s' % (type(e).__name__, e))
    try:
        tasks = scan_tasks(fs, out)
    except Exception as e:
        notes.append('robots/ unreadable: %s: %s' % (type(e).__name__, e))
    if index is None:
        notes.append('no index/ (the crawl has not finished): no duplicate rates, '
                     'error examples or robots examples')
    if hosts is None:
        notes.append('no hosts/: politeness bounds from plan/NNN where present; '
                     'no slowest hosts')
    return index, hosts, tasks


def collect(out, fs, report=None, conf=None, running=False):
    """Everything the page shows, as plain data (tests read this too). *report* and
    *conf*: the crawl's report.json and conf.json when the caller has them (the driver
    at the end of a crawl), else read from OUT. *running*: drawn while the crawl runs
    (its layers so far; no index/, hosts/ or robots/ scan: they are the last build's)."""
    notes = []
    if report is None:
        report = _read_json(fs, fs.join(out, layout.REPORT))
    if conf is None:
        conf = _read_json(fs, fs.join(out, layout.SETTINGS)) or {}
    delay = (conf.get('politeness') or {}).get('delay')
    if delay is None and report:
        delay = (report.get('settings') or {}).get('politeness.delay')
    if report and report.get('layers'):
        layers = report['layers']
    else:
        notes.append('no report.json with layers: rows rebuilt from steps/*.json')
        layers = layers_from_steps(out, fs, conf)
    if running:
        notes.append('the crawl is running: its layers so far, redrawn after each '
                     'layer; duplicates, hosts, examples and charts come at its end')
        index = hosts = tasks = None
    else:
        index, hosts, tasks = _scans(out, fs, notes)
    rows = []
    for row in layers:
        layer = row.get('layer', 0)
        r = dict(row)
        r['fetch_seconds'] = (row.get('step_seconds') or {}).get('fetch')
        big = None
        if hosts is not None and layer in hosts['largest']:
            big = hosts['largest'][layer][:2]
            r['hosts'] = hosts['largest'][layer][2]
        else:
            big = plan_max(fs, out, layer)
            if big is not None:
                r['bound_source'] = 'plan'
        r['largest_host'] = big[1] if big else None
        r['largest_host_urls'] = big[0] if big else None
        r['bound_seconds'] = ((big[0] - 1) * delay if big and delay is not None else None)
        ix = (index or {}).get('layers', {}).get(layer)
        r['duplicates'] = ix['duplicates'] if ix else None
        r['duplicate_rate'] = (ix['duplicates'] / ix['fetched']
                               if ix and ix['fetched'] else None)
        rows.append(r)
    classes = sorted(((k, v) for k, v in ((index or {}).get('classes') or {}).items()),
                     key=lambda kv: (-kv[1]['urls'], kv[0]))
    return {'out': out, 'report': report or {}, 'delay': delay, 'rows': rows,
            'errors': [(k, v) for k, v in classes if k[0] != R.FETCH_ROBOTS_DENIED],
            'robots': [(k, v) for k, v in classes if k[0] == R.FETCH_ROBOTS_DENIED],
            'hosts': hosts, 'index': index is not None, 'notes': notes,
            'sites': conf.get('sites') or [], 'tasks': tasks}


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l{text-align:left}img{max-width:100%;margin:.5em 0}
.note{color:#8d6e00}code{font-size:90%}"""


def _img(pngs, name, alt):
    """The chart *name* as an embedded PNG, or nothing when it was not drawn."""
    if name not in pngs:
        return []
    return ['<img alt="%s" src="data:image/png;base64,%s">' % (
        html.escape(alt), base64.b64encode(pngs[name]).decode('ascii'))]


def _layers_section(data, pngs):
    e = html.escape
    body = ['<h2>Per layer</h2>']
    rows = data['rows']
    if not rows:
        body.append('<p>No layer has finished yet.</p>')
    else:
        head = (['layer', 'URLs in'] + list(R.FETCH_STATUSES)
                + ['new URLs', 'bytes', 'duplicate rate', 'fetch s', 'bound s',
                   'largest host (URLs)', 'layer s'])
        table = []
        for r in rows:
            rate = r['duplicate_rate']
            table.append(
                ['%03d' % r.get('layer', 0), cell(r.get('urls_in'))]
                + [cell(r.get(s, 0)) for s in R.FETCH_STATUSES]
                + [cell(r.get('new_urls')), cell(r.get('bytes')),
                   'n/a' if rate is None else '%.1f%%' % (100 * rate),
                   cell(r.get('fetch_seconds')), cell(r['bound_seconds']),
                   '%s (%s)%s' % (e(short(r['largest_host'], 40)),
                                  cell(r['largest_host_urls']),
                                  ' plan' if r.get('bound_source') == 'plan' else '')
                   if r['largest_host'] else 'n/a',
                   cell(r.get('seconds'))])
        body.append(html_table(head, table, left=(len(head) - 2,)))
        body.append('<p>bound s = (the largest host\'s URL count in the layer - 1) x '
                    'politeness.delay: one connection per host and the delay between its '
                    'requests make the fetch step at least that long. A fetch far above it '
                    'is spent elsewhere (latency, retries, task start-up, an unbalanced '
                    'reducer).</p>')
    for name, alt in (('status', 'URLs by status per layer'), ('volume', 'bytes and new URLs'),
                      ('duplicates', 'duplicate rate per layer'),
                      ('time', 'fetch time against the politeness bound')):
        body += _img(pngs, name, alt)
    return body


def _hosts_section(data, pngs):
    e = html.escape
    body = ['<h2>Slowest hosts and what stopped them</h2>']
    slow = (data['hosts'] or {}).get('slowest') or []
    if not slow:
        return body + ['<p>n/a (no hosts/ data).</p>']
    body += _img(pngs, 'hosts', 'slowest hosts')
    table = []
    for h in slow:
        others = ', '.join('%s %d' % (s, h[s]) for s in R.FETCH_STATUSES
                           if s != R.FETCH_FETCHED and h.get(s))
        reasons = ', '.join('%s %d' % kv for kv in sorted(h['reasons'].items()))
        table.append(['%03d' % h['layer'], e(h['host'] or ''), cell(h.get('urls')),
                      cell(h.get(R.FETCH_FETCHED)), cell(h.get('elapsed'), 2),
                      cell((h.get('urls') or 0) * data['delay']
                          if data['delay'] is not None else None),
                      e(others) or '-', e(reasons) or '-'])
    body.append(html_table(['layer', 'host', 'URLs', 'fetched', 'fetch s (sum)', 'bound s',
                            'not fetched', 'reasons'], table, left=(1, 6, 7)))
    return body


def _errors_section(data, pngs):
    e = html.escape
    body = ['<h2>Error classes</h2>']
    if not data['index']:
        return body + ['<p>n/a (no index/).</p>']
    if not data['errors']:
        return body + ['<p>None: every URL was fetched, not modified or denied by '
                       'robots.txt.</p>']
    body += _img(pngs, 'errors', 'error classes')
    body.append(html_table(['status', 'reason', 'URLs', 'examples'], [
        [e(k[0]), e(k[1] or '-'), cell(v['urls']),
         '<br>'.join('<code>%s</code>' % e(u) for u in v['examples'])]
        for k, v in data['errors']], left=(0, 1, 3)))
    return body


def _robots_section(data):
    e = html.escape
    body = ['<h2>robots.txt denials</h2>']
    if not data['index']:
        return body + ['<p>n/a (no index/).</p>']
    if not data['robots']:
        return body + ['<p>None.</p>']
    body.append(html_table(['reason', 'URLs', 'examples'], [
        [e(k[1] or '-'), cell(v['urls']),
         '<br>'.join('<code>%s</code>' % e(u) for u in v['examples'])]
        for k, v in data['robots']], left=(0, 2)))
    denied = (data['hosts'] or {}).get('denied') or []
    if denied:
        body.append(html_table(['layer', 'host', 'URLs denied', 'of URLs'], [
            ['%03d' % h['layer'], e(h['host'] or ''), cell(h[R.FETCH_ROBOTS_DENIED]),
             cell(h.get('urls'))] for h in denied], left=(1,)))
    return body


def render(data, pngs):
    """report.html: the crawl's facts, then one section per table (with its chart)."""
    e = html.escape
    rep = data['report']
    body = ['<h1>Crawl report: %s</h1>' % e(data['out'])]
    facts = []
    for key, label in (('runner', 'runner'), ('depth', 'depth'),
                       ('finished_at', 'finished')):
        if key in rep:
            facts.append('%s %s' % (label, e(str(rep[key]))))
    facts.append('politeness.delay %s s' % e(cell(data['delay'], 2)))
    body.append('<p>%s</p>' % ', '.join(facts))
    for note in data['notes']:
        body.append('<p class="note">Note: %s</p>' % e(note))
    body += _layers_section(data, pngs) + harvest_section(data) + _hosts_section(data, pngs)
    body += _errors_section(data, pngs) + _robots_section(data)
    merge = rep.get('merge')
    if merge:
        body.append('<h2>Merge</h2><p>%d distinct pages; duplicates folded: exact %d, '
                    'near %d, rel=canonical %d.</p>' % (
                        merge.get('pages', 0), merge.get('exact_duplicates', 0),
                        merge.get('near_duplicates', 0),
                        merge.get('canonical_duplicates', 0)))
    body.append('<p><small>mrcrawl report, %s</small></p>' % e(
        time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())))
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<title>mrcrawl report: %s</title><style>%s</style></head><body>\n%s\n'
            '</body></html>\n' % (e(data['out']), CSS, '\n'.join(body)))


def build(out, fs, report=None, conf=None, pngs=None, running=False):
    """(HTML text, {chart name: PNG bytes}) for the crawl in *out* (see collect);
    *pngs*: the charts when already drawn (beside the merge: chart_drawer)."""
    data = collect(out, fs, report, conf, running)
    if pngs is None:
        pngs = charts(data)
    return render(data, pngs), pngs


def write_report_html(out_dir, fs, report=None, conf=None, pngs=None, running=False):
    """Write OUT/report.html (*running*: while the crawl runs, without charts); returns
    its path."""
    text, _ = build(out_dir, fs, report, conf, {} if running else pngs, running)
    path = fs.join(out_dir, layout.REPORT_HTML)
    fs.write_text(path, text)
    return path


def chart_drawer(out, conf, layers):
    """report.html's charts of the crawl in *out* (its *layers*: the report's rows) as a
    function of nothing, for a child to draw (drivers/runtime/beside.py) once index/ and hosts/
    are written. It opens a filesystem client of its own."""
    return lambda: charts(collect(out, fslib.for_path(out), {'layers': layers}, conf))


def main_report(argv):
    """``mrcrawl report OUT [--output FILE] [--png-dir DIR]``; returns the exit status."""
    p = argparse.ArgumentParser(
        prog='mrcrawl report',
        description='Write a crawl\'s HTML report (tables and charts in one file): per '
                    'layer status, bytes, new URLs, duplicate rate, fetch time against the '
                    'politeness bound; slowest hosts, error classes, robots denials.')
    p.add_argument('out', metavar='OUT', help='Crawl output folder (local or hdfs:///...).')
    p.add_argument('--output', metavar='FILE', default=None,
                   help='Where to write the page (local path or hdfs:///...). '
                        'Default: OUT/report.html')
    p.add_argument('--png-dir', metavar='DIR', default=None,
                   help='Also save each chart as DIR/<name>.png (a local folder).')
    args = p.parse_args(argv)
    fs = fslib.for_path(args.out)
    out = args.out.rstrip('/') or '/'
    if not fs.exists(out):
        print('mrcrawl: no crawl output folder %s' % out, file=sys.stderr)
        return 2
    text, pngs = build(out, fs)
    target = args.output or fs.join(out, layout.REPORT_HTML)
    try:
        fslib.for_path(target).write_text(target, text)
    except OSError as e:
        print('mrcrawl: cannot write %s: %s' % (target, e.strerror or e), file=sys.stderr)
        return 2
    if args.png_dir:
        os.makedirs(args.png_dir, exist_ok=True)
        for name, data in pngs.items():
            with open(os.path.join(args.png_dir, name + '.png'), 'wb') as f:
                f.write(data)
    print(target)
    return 0


if __name__ == '__main__':
    sys.exit(main_report(sys.argv[1:]))
