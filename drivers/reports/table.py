"""The tables of report.html: a cell's text and a whole table, shared by
drivers/reports/html.py and its harvest section (drivers/reports/harvest.py)."""
import html


def cell(v, digits=1):
    """A table cell's text: *v* with *digits* decimals if a float, 'n/a' if None."""
    if v is None:
        return 'n/a'
    if isinstance(v, float):
        return '%.*f' % (digits, v)
    return str(v)


def html_table(head, rows, left=()):
    """An HTML table: *head* (escaped here), *rows* of cells (HTML already); the
    columns in *left* aligned left."""
    e = html.escape
    parts = ['<table><tr>%s</tr>' % ''.join('<th>%s</th>' % e(h) for h in head)]
    for row in rows:
        parts.append('<tr>%s</tr>' % ''.join(
            '<td%s>%s</td>' % (' class="l"' if i in left else '', text)
            for i, text in enumerate(row)))
    parts.append('</table>')
    return ''.join(parts)
