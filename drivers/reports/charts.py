"""report.html's charts: matplotlib (Agg) PNGs from the data drivers/reports/html.py
collects, one function per chart. No pyplot, so no global state."""
import io

from jobs.lib import records as R

#: Rows in the slowest-hosts and error-class charts and tables.
TOP_HOSTS = 15
#: Statuses drawn in the status chart, and their colours (fetched first, at the bottom).
STATUS_COLOURS = {R.FETCH_FETCHED: '#2e7d32', R.FETCH_NOT_MODIFIED: '#81c784',
                  R.FETCH_REDIRECTED: '#64b5f6', R.FETCH_DEFERRED: '#ffb74d',
                  R.FETCH_ROBOTS_DENIED: '#8e24aa', R.FETCH_FILTERED: '#9e9e9e',
                  R.FETCH_HTTP_ERROR: '#e53935', R.FETCH_NETWORK_ERROR: '#6d4c41'}


def short(text, n):
    text = text or ''
    return text if len(text) <= n else text[:n - 1] + '\u2026'


# -- the page -------------------------------------------------------------------------------


def _figure(width=8.0, height=3.6, left=0.8, right=0.1, wspace=0.25, labels=()):
    """A figure with fixed margins (inches; *right* 1.9 leaves room for a legend
    outside the axes; a left margin for the longest of *labels*, y tick labels at 8
    pt). Fixed, not matplotlib's constrained layout: that measures every text on
    every draw, most of the report's time."""
    from matplotlib.figure import Figure  # no pyplot: no global state, Agg canvas
    fig = Figure(figsize=(width, height), dpi=100)
    if labels:
        left = max(left, 0.2 + 0.058 * max(len(t) for t in labels))
    fig.subplots_adjust(left=min(left / width, 0.6), right=1 - right / width,
                        bottom=0.55 / height, top=1 - 0.35 / height, wspace=wspace)
    return fig


def _png(fig):
    # lazy: matplotlib only when report.html draws
    from matplotlib.ticker import MaxNLocator
    for ax in fig.axes:        # counts are whole numbers; seconds keep their decimals
        if ax.get_ylabel() in ('URLs',):
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if ax.get_xlabel() == 'URLs':
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    buf = io.BytesIO()
    fig.savefig(buf, format='png')
    return buf.getvalue()


def _layer_labels(rows):
    return ['%03d' % r.get('layer', 0) for r in rows]


def _bytes_unit(values):
    top = max(values or [0])
    for unit, size in (('GB', 1e9), ('MB', 1e6), ('kB', 1e3)):
        if top >= size:
            return unit, size
    return 'bytes', 1


def charts(data):
    """{name: PNG bytes} for the charts the data allows."""
    rows = data['rows']
    if not rows:
        return {}
    x, labels = list(range(len(rows))), _layer_labels(rows)
    out = {'status': _status_chart(rows, x, labels), 'volume': _volume_chart(rows, x, labels)}
    if any(r['duplicate_rate'] is not None for r in rows):
        out['duplicates'] = _duplicates_chart(rows, x, labels)
    out['time'] = _time_chart(rows, x, labels)
    slow = (data['hosts'] or {}).get('slowest') or []
    if slow:
        out['hosts'] = _hosts_chart(slow)
    if data['errors']:      # the page shows it only beside a table of errors
        out['errors'] = _errors_chart(data['errors'] + data['robots'])
    return out


def _status_chart(rows, x, labels):
    fig = _figure(right=1.9)
    ax = fig.add_subplot()
    bottom = [0] * len(rows)
    for status, colour in STATUS_COLOURS.items():
        vals = [r.get(status, 0) or 0 for r in rows]
        if any(vals):
            ax.bar(x, vals, bottom=bottom, color=colour, label=status)
            bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set(title='URLs by fetch status, per layer', xlabel='layer', ylabel='URLs')
    ax.set_xticks(x, labels)
    if any(bottom):
        ax.legend(fontsize=8, loc='upper left', bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def _volume_chart(rows, x, labels):
    fig = _figure()
    ax1, ax2 = fig.subplots(1, 2)
    unit, size = _bytes_unit([r.get('bytes', 0) or 0 for r in rows])
    ax1.bar(x, [(r.get('bytes', 0) or 0) / size for r in rows], color='#1565c0')
    ax1.set(title='Bytes fetched', xlabel='layer', ylabel=unit)
    ax1.set_xticks(x, labels)
    ax2.bar(x, [r.get('new_urls', 0) or 0 for r in rows], color='#00897b')
    ax2.set(title='New URLs found', xlabel='layer', ylabel='URLs')
    ax2.set_xticks(x, labels)
    return _png(fig)


def _duplicates_chart(rows, x, labels):
    fig = _figure()
    ax = fig.add_subplot()
    vals = [100 * (r['duplicate_rate'] or 0) for r in rows]
    bars = ax.bar(x, vals, color='#f9a825')
    ax.bar_label(bars, labels=['%.0f%%' % v if r['duplicate_rate'] is not None else 'n/a'
                               for v, r in zip(vals, rows)], fontsize=8)
    ax.set(title='Duplicate rate: fetched pages folded into another page',
           xlabel='layer', ylabel='% of fetched pages', ylim=(0, max(vals + [10]) * 1.2))
    ax.set_xticks(x, labels)
    return _png(fig)


def _time_chart(rows, x, labels):
    fig = _figure(right=1.9)
    ax = fig.add_subplot()
    w = 0.4
    took = [r.get('fetch_seconds') or 0 for r in rows]
    bound = [r['bound_seconds'] or 0 for r in rows]
    ax.bar([i - w / 2 for i in x], took, w, color='#5e35b1', label='fetch step took')
    ax.bar([i + w / 2 for i in x], bound, w, color='#bdbdbd', hatch='//',
           label='politeness lower bound\n(largest host x delay)')
    ax.set(title='Fetch time per layer against its politeness lower bound',
           xlabel='layer', ylabel='seconds')
    ax.set_xticks(x, labels)
    ax.legend(fontsize=8, loc='upper left', bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def _hosts_chart(slow):
    names = ['%s  (layer %03d)' % (short(h['host'], 40), h['layer']) for h in slow]
    fig = _figure(height=max(2.4, 0.35 * len(slow) + 1), labels=names)
    ax = fig.add_subplot()
    ax.barh(range(len(slow)), [h.get('elapsed') or 0 for h in slow], color='#5e35b1')
    ax.set_yticks(range(len(slow)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set(title='Slowest hosts: summed fetch seconds', xlabel='seconds')
    return _png(fig)


def _errors_chart(classes):
    classes = sorted(classes, key=lambda kv: -kv[1]['urls'])[:TOP_HOSTS]
    names = ['%s / %s' % (k[0], k[1] or '-') for k, _ in classes]
    fig = _figure(height=max(2.4, 0.35 * len(classes) + 1), labels=names)
    ax = fig.add_subplot()
    ax.barh(range(len(classes)), [v['urls'] for _, v in classes],
            color=[STATUS_COLOURS.get(k[0], '#757575') for k, _ in classes])
    ax.set_yticks(range(len(classes)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set(title='URLs not fetched, by status / reason', xlabel='URLs')
    return _png(fig)


def preload_libraries():
    """Import the plotting library (drivers/runtime/beside.py runs this while a crawl's first
    layer waits on the network)."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except Exception:      # report.html reports its own failure when it runs
        pass
