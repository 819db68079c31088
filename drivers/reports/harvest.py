"""report.html's harvest tables: per layer, the pace of the fetch, the links parsed, the
on-topic pages and what generate held back; per fetch task, its pages a second (from
the ``task`` records each fetch task leaves in robots/NNN: the layers of the last
cycle); per limited site, its counts against its limits (jobs.lib.sitelimits). Kept
apart from drivers/reports/html.py, which renders the rest of the page and calls these."""
import html
import json
import statistics

from drivers.folder import layout
from drivers.reports.table import cell, html_table
from jobs.lib import records as R


def harvest_section(data):
    """Per layer: pages a second of fetch, links parsed, on-topic pages and the
    harvest rate (design source 004), and what generate held back for later."""
    e = html.escape
    rows = data['rows']
    if not rows:
        return []
    table = []
    for r in rows:
        fetched, secs = r.get(R.FETCH_FETCHED, 0), r.get('fetch_seconds')
        on, off = r.get('on_topic', 0), r.get('off_topic', 0)
        held = ', '.join('%s %d' % kv for kv in sorted((r.get('held_back') or {}).items()))
        table.append(['%03d' % r.get('layer', 0), cell(fetched),
                      cell(fetched / secs if secs else None), cell(r.get('links_found')),
                      cell(on), 'n/a' if not on + off else '%.1f%%' % (100 * on / (on + off)),
                      e(held) or '-'])
    body = ['<h2>Harvest</h2>', html_table(
        ['layer', 'fetched', 'pages/s (fetch step)', 'links parsed', 'on topic',
         'harvest rate', 'held back for later'], table, left=(6,))]
    body.append('<p>harvest rate = on-topic pages / pages scored (with a topic profile). '
                'Held back: URLs the next layer\'s generate left unfetched in the crawl '
                'database, by cap or site limit; later layers and cycles take them.</p>')
    return body + tasks_section(data) + site_limits_section(data)


def scan_tasks(fs, out):
    """{layer: [task record]} from robots/NNN/part-* (jobs/fetch.py)."""
    tasks = {}
    root = fs.join(out, layout.ROBOTS)
    for name in fs.listdir(root):
        if not name.isdigit():
            continue
        for part in fs.listdir(fs.join(root, name)):
            if not part.startswith('part-'):
                continue
            for line in fs.iter_lines(fs.join(root, name, part)):
                if b'"task"' in line[:40]:
                    rec = json.loads(line)
                    if rec.get('kind') == 'task':
                        tasks.setdefault(int(name), []).append(rec)
    return tasks


def tasks_section(data):
    """Per layer, the fetch tasks' pages a second: the spread, and the slowest task."""
    e = html.escape
    table = []
    for layer, recs in sorted((data.get('tasks') or {}).items()):
        rates = [r['fetched'] / r['seconds'] for r in recs if r.get('seconds')]
        slow = max(recs, key=lambda r: r.get('seconds') or 0)
        table.append(['%03d' % layer, cell(len(recs)), cell(sum(r['urls'] for r in recs)),
                      ' / '.join(cell(v, 2) for v in (min(rates), statistics.median(rates),
                                                      max(rates))) if rates else 'n/a',
                      '%s on %s: %s s' % (cell(slow['task']), e(slow.get('node') or '?'),
                                          cell(slow.get('seconds')))])
    if not table:
        return []
    return ['<h3>Fetch tasks</h3>', html_table(
        ['layer', 'tasks', 'URLs', 'pages/s per task (min / median / max)',
         'slowest task'], table, left=(4,)),
        '<p>From each fetch task\'s own record (robots/NNN): on Hadoop, one YARN '
        'container each. A slow task on one node points at that node or at its '
        'politeness keys.</p>']


def site_limits_section(data):
    """Each limited site's counts after the last layer that chose its URLs."""
    e = html.escape
    last = {}
    for r in data['rows']:
        for name, n in (r.get('site_limits') or {}).items():
            site, _, what = name.rpartition('.')
            last.setdefault(site, {})[what] = n
    if not last:
        return []
    specs = {s['name']: s for s in data.get('sites') or ()}
    table = []
    for site in sorted(last):
        spec, got = specs.get(site, {}), last[site]
        table.append([e(site)] + ['%s / %s' % (cell(got.get(what)), cell(spec.get(key)))
                                  for what, key in (('pages', 'max_pages'),
                                                    ('hour', 'quota_per_hour'),
                                                    ('day', 'quota_per_day'))]
                     + [cell(got.get('held'))])
    return ['<h3>Per-site limits</h3>', html_table(
        ['site', 'pages / max_pages', 'requests last hour / quota', 'requests last day / '
         'quota', 'held back'], table, left=(0,)),
        '<p>Counted when the last layer was chosen, that layer\'s URLs included '
        '(jobs/lib/sitelimits.py).</p>']
