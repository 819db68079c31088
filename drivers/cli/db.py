"""``mrcrawl db stats OUT`` and ``mrcrawl db get OUT URL``: look into the crawl database.

Both run a small job over the newest crawldb/NNN (so they work the same on local folders
and on HDFS, and never load the database into the driver) and print the result.

``db get`` prints the records of the URLs it found and, on stderr, one line naming the
given URLs it did not find (as given); its exit status is 1 only when it found none.
"""
import json

from drivers.folder import layout
from drivers.runtime import fs as fslib, hadoop
from drivers.runtime.launch import make_runner
from jobs.dbget import MRDbGet
from jobs.dbstats import MRDbStats
from jobs.lib import counters as C, urls


def newest_crawldb(out):
    """The newest crawl database: crawldb/<last layer>."""
    fs = fslib.for_path(out)
    versions = [n for n in fs.listdir(fs.join(out, layout.CRAWLDB)) if n.isdigit()]
    if not versions:
        raise FileNotFoundError('no crawl database in %s/crawldb' % out)
    return fs.join(out, layout.CRAWLDB, max(versions))


def _run(job_cls, args, runner, out):
    if runner == 'hadoop':
        fs = fslib.for_path(out)
        args = hadoop.runner_args(json.loads(fs.read_text(fs.join(out, layout.SETTINGS)))) + args
    job = job_cls(['-r', runner] + args)
    with make_runner(job) as r:
        r.run()
        return [value for _, value in job.parse_output(r.cat_output())]


def stats(out, runner='inline', top_hosts=20):
    """{'status': {...}, 'depth': {...}, 'host': {...}, 'urls': N} for the newest crawldb."""
    path = newest_crawldb(out)
    result = {'crawldb': path, 'status': {}, 'depth': {}, 'host': {}}
    for rec in _run(MRDbStats, [path], runner, out):
        result[rec['dim']][str(rec['value'])] = rec['urls']
    result['urls'] = sum(result['status'].values())
    hosts = sorted(result['host'].items(), key=lambda kv: (-kv[1], kv[0]))
    result[C.HOSTS] = len(hosts)
    result['host'] = dict(hosts[:top_hosts])
    return result


def format_stats(result):
    lines = ['crawl database %s: %d URL(s), %d host(s)' % (
        result['crawldb'], result['urls'], result[C.HOSTS])]
    for dim in ('status', 'depth', 'host'):
        lines.append('by %s:' % dim)
        items = result[dim].items()
        if dim == 'depth':
            items = sorted(items, key=lambda kv: int(kv[0]) if kv[0].lstrip('-').isdigit() else 0)
        elif dim == 'status':
            items = sorted(items)
        lines += ['  %-40s %8d' % kv for kv in items]
    return '\n'.join(lines)


def get(out, url_list, runner='inline'):
    args = []
    for url in url_list:
        args += ['--url', url]
    return _run(MRDbGet, args + [newest_crawldb(out)], runner, out)


def missing(url_list, records):
    """The URLs of *url_list* (as given) that no record of *records* is: each is
    normalised as MRDbGet normalises it."""
    found = {r['url'] for r in records}
    return [u for u in url_list if (urls.normalize(u) or u) not in found]


def format_records(records):
    return '\n'.join(json.dumps(r, indent=1, sort_keys=True) for r in records)
