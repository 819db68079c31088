"""Per-step counters, the per-layer summary and report.json.

Each finished step's counters and wall time are saved in OUT/steps/<step>.json, so a
resumed crawl still reports every layer. report.json holds the crawl's settings, one
row per layer and the merge/xml totals; the same rows are printed as a table.
"""
import json
import time

from drivers.folder import layout
from jobs.lib import counters as C, records as R

#: Columns of the per-layer table: (title, key).
COLUMNS = (('layer', 'layer'), ('in', 'urls_in'), ('followed', 'followed'),
           ('fetched', 'fetched'),
           ('http_err', 'http_error'), ('net_err', 'network_error'),
           ('robots', 'robots_denied'), ('filtered', 'filtered'), ('deferred', 'deferred'),
           ('new_urls', 'new_urls'), ('bytes', 'bytes'), ('seconds', 'seconds'))


class Report:
    def __init__(self, out, fs, conf, depth, runner, settings_changes=()):
        self.out = out
        self.fs = fs
        self.conf = conf
        self.depth = depth
        self.runner = runner
        #: How this run's settings differ from the last run's (drivers.folder.settings.Change
        #: as dicts): report.json's settings_changes.
        self.settings_changes = list(settings_changes)

    def step_path(self, name):
        return self.fs.join(self.out, layout.STEPS, name + '.json')

    def save_step(self, name, step):
        self.fs.write_text(self.step_path(name), json.dumps(step, sort_keys=True))

    def load_step(self, name):
        try:
            return json.loads(self.fs.read_text(self.step_path(name)))
        except (OSError, ValueError):
            return {'counters': {}, 'seconds': 0.0, 'missing': True}

    @staticmethod
    def layer_row(layer, urls_in, steps):
        fetch = steps['fetch']['counters'].get(C.FETCH, {})
        optimize = steps['optimize']['counters'].get(C.OPTIMIZE, {})
        row = {'layer': layer, 'urls_in': urls_in}
        row.update(C.status_totals(fetch, C.FETCH, R.FETCH_STATUSES))
        row['errors_by_reason'] = {
            k[len('fetch_'):-len('_total')]: v for k, v in sorted(fetch.items())
            if k.startswith(('fetch_http_error_', 'fetch_network_error_', 'fetch_filtered_',
                             'fetch_deferred_', 'fetch_robots_denied_'))}
        row['new_urls'] = optimize.get(C.NEW_URLS, 0)
        # Pages of earlier cycles a setting refuses now, kept (recrawl.prune off).
        row['kept'] = sum(v for k, v in fetch.items() if k.startswith('refused_kept_'))
        # What the next layer's generate held back (unfetched, for later), by cap or
        # limit, and each limited site's counts after it (jobs.lib.sitelimits).
        generate = steps.get('generate', {}).get('counters', {})
        held = {k[:-len('_total')]: v for k, v in sorted(generate.get(C.GENERATE, {}).items())
                if k in C.HELD_BACK and v}
        if held:
            row['held_back'] = held
        if generate.get(C.SITE_LIMITS):
            row['site_limits'] = generate[C.SITE_LIMITS]
        row['bytes'] = fetch.get(C.BYTES, 0)
        # The sum of the steps' own times, so a resumed crawl reports the same figures.
        row['seconds'] = round(sum(v['seconds'] for v in steps.values()), 2)
        row['step_seconds'] = {k: v['seconds'] for k, v in steps.items()}
        # Followed URLs (fetch.follow_hops) were in no in/: each has its record too, and
        # the statuses count them; what accounts for in/ is the rest.
        row['followed'] = fetch.get(C.FOLLOWED, 0)
        row['accounted'] = sum(row[s] for s in R.FETCH_STATUSES) - row['followed']
        # WARC counters: the fetch's when it archived the bodies itself, else MRWarc's.
        warc = steps.get('warc', steps['fetch'])['counters'].get(C.WARC)
        if warc:
            row['warc'] = warc
        # Pages rendered in the browser and what became of its requests (jobs.lib.render).
        render = steps['fetch']['counters'].get(C.RENDER)
        if render:
            row['render'] = render
        # The parse counters: the parse job's, or the fetch job's when it parsed.
        parse = steps.get('parse', steps['fetch']).get('counters', {}).get(C.PARSE, {})
        row['links_found'] = parse.get(C.LINKS_FOUND, 0)
        row['on_topic'] = parse.get(C.PAGES_ON_TOPIC, 0)
        row['off_topic'] = parse.get(C.PAGES_OFF_TOPIC, 0)
        row['links_rejected'] = {
            k[len('link_rejected_'):-len('_total')]: v for k, v in sorted(parse.items())
            if k.startswith('link_rejected_')}
        return row

    @staticmethod
    def format_header():
        return ' '.join('%9s' % title for title, _ in COLUMNS)

    @staticmethod
    def format_row(row):
        cells = []
        for _, key in COLUMNS:
            v = row.get(key, 0)
            cells.append('%9s' % ('%.1f' % v if isinstance(v, float) else v))
        return ' '.join(cells)

    def write(self, layers, merge, xml, stopped, index=None, cycles=None, build=None,
              outputs=None):
        report = {
            'out': self.out, 'runner': self.runner, 'depth': self.depth,
            'finished_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
            'stopped_by_user': stopped,
            'settings': {'politeness.delay': self.conf['politeness']['delay'],
                         'politeness.user_agent': self.conf['politeness']['user_agent']},
            'settings_changes': self.settings_changes,
            'seeds': self.load_step('inject').get('seeds'),
            'layers': layers,
            # Which layers each crawl cycle ran, and the build the outputs describe.
            'cycles': [{k: c.get(k) for k in ('cycle', 'first_layer', 'depth', 'at',
                                               'finished', 'settings_changed')}
                       | {'layers': [row['layer'] for row in c['layers']]}
                       for c in cycles or ()],
            'build': build,
            'totals': {key: sum(row.get(key, 0) for row in layers)
                       for _, key in COLUMNS[1:]},
        }
        if merge is not None:
            m = merge['counters'].get(C.MERGE, {})
            report['merge'] = {'pages': m.get(C.MERGED_PAGES, 0),
                               'exact_duplicates': m.get(C.EXACT_DUPLICATES, 0),
                               'near_duplicates': m.get(C.NEAR_DUPLICATES, 0),
                               'canonical_duplicates': m.get(C.CANONICAL_DUPLICATES, 0),
                               'seconds': merge['seconds']}
        if xml is not None:
            # xml/ is the base build; the deltas since apply over it (OUT/outputs.json).
            outputs = outputs or {}
            report['xml'] = {'documents': xml['counters'].get(C.XML, {}).get(C.XML_DOCS, 0),
                             'seconds': xml['seconds'], 'base': outputs.get('base', build),
                             'deltas': outputs.get('deltas', [])}
        if index is not None:
            report['index'] = {'rows': index.get('rows', 0), 'hosts': index.get('hosts', 0),
                               'files': index.get('files', 0), 'seconds': index['seconds']}
        on = sum(row.get('on_topic', 0) for row in layers)
        off = sum(row.get('off_topic', 0) for row in layers)
        if on + off:
            # Harvest rate: the share of parsed pages that are on topic (focused crawling).
            report['topic'] = {'on_topic': on, 'off_topic': off,
                               'harvest_rate': round(on / (on + off), 4)}
        self.fs.write_text(self.fs.join(self.out, layout.REPORT),
                           json.dumps(report, indent=1, sort_keys=True))
        return report

    def format_summary(self, report):
        lines = ['', 'crawl summary (%s, runner %s, depth %d)' % (
            report['out'], report['runner'], report['depth']), self.format_header()]
        lines += [self.format_row(row) for row in report['layers']]
        lines.append(self.format_row(dict(report['totals'], layer='total')))
        for row in report['layers']:
            if row['errors_by_reason']:
                lines.append('layer %03d outcomes by reason: %s' % (row['layer'], ', '.join(
                    '%s=%d' % kv for kv in row['errors_by_reason'].items())))
        if 'merge' in report:
            m = report['merge']
            lines.append('merged pages: %d (duplicates folded: exact %d, near %d, '
                         'rel=canonical %d)' % (m['pages'], m['exact_duplicates'],
                                                m.get('near_duplicates', 0),
                                                m.get('canonical_duplicates', 0)))
        if 'xml' in report:
            x = report['xml']
            lines.append('xml documents: %d in %s/xml%s' % (x['documents'], report['out'], (
                ' (build %s), with delta/%s/xml applied over it in that order' % (
                    x['base'], '/xml, delta/'.join(x['deltas']))) if x.get('deltas') else ''))
        if 'index' in report:
            lines.append('index: %d row(s) in %s/index, %d host row(s) in %s/hosts '
                         '(Parquet, by layer)' % (report['index']['rows'], report['out'],
                                                  report['index']['hosts'], report['out']))
        if 'topic' in report:
            t = report['topic']
            lines.append('harvest rate: %.1f%% (%d of %d parsed pages on topic)' % (
                100 * t['harvest_rate'], t['on_topic'], t['on_topic'] + t['off_topic']))
        kept = sum(row.get('kept', 0) for row in last_cycle_rows(report))
        if kept:
            lines.append('pages kept though a setting refuses them now: %d (their last '
                         'fetch stands; --prune deletes them)' % kept)
        if report.get('stopped_by_user'):
            lines.append('stopped by the STOP file: run the same command again to continue')
        lines.append('report: %s/report.json' % report['out'])
        return '\n'.join(lines)


#: What to do about the reasons a cycle fetched no page: (reason prefix, hint).
HINTS = (
    ('filtered_private_address', 'the URLs are on loopback or a private network: '
     '--set security.allow_private_networks=true allows them (a local site)'),
    ('network_error_dns', 'their host names do not resolve: is this machine offline? '
     '`make demo` crawls a website on this machine with no network'),
    ('network_error_tls', "the sites' certificates failed verification (see the reason: "
     'expired, another host\'s, self-signed, no chain to a trusted CA); fetch.ca_bundle '
     'adds the CAs of a private network, fetch.verify_tls=false fetches them anyway'),
    ('network_error_', 'the servers could not be reached: check the network, or a '
     'proxy in the way; fetch.connect_timeout and fetch.read_timeout set the waits'),
    ('robots_denied', "the sites' robots.txt forbid it (politeness.user_agent is the "
     'name they are matched against)'),
    ('filtered_filter_', 'the link filters refuse them: filter.include, filter.exclude, '
     'filter.scope'),
    ('filtered_', 'refused before any request: see the reason'),
    ('http_error_', 'the servers answered with errors: see the status'),
    ('deferred_', 'deferred to the next run (time budget, robots.txt unavailable, failing '
     'hosts): run the same command again later'),
)


def last_cycle_rows(report):
    """The layer rows of *report*'s last cycle."""
    cycles = report.get('cycles') or ()
    mine = set(cycles[-1]['layers']) if cycles else set()
    return [row for row in report['layers'] if row['layer'] in mine]


def no_page_reasons(report):
    """When the last cycle of *report* tried URLs and fetched no page (not even a 304),
    the lines that say why, its top reasons each with what to do; else []."""
    rows = last_cycle_rows(report)
    tried = sum(row['urls_in'] for row in rows)
    if not tried or report.get('stopped_by_user') or any(
            row.get(R.FETCH_FETCHED) or row.get(R.FETCH_NOT_MODIFIED) for row in rows):
        return []
    reasons = {}
    for row in rows:
        for reason, n in row['errors_by_reason'].items():
            reasons[reason] = reasons.get(reason, 0) + n
    lines = ['no page was fetched: %d URL(s) tried, none answered with a page' % tried]
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]:
        hint = next((h for prefix, h in HINTS if reason.startswith(prefix)), None)
        lines.append('  %d %s%s' % (n, reason, ': ' + hint if hint else ''))
    return lines
