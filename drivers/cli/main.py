"""The ``mrcrawl`` command.

    mrcrawl crawl --seeds FILE --depth N --out DIR [-r inline|local|hadoop]
                  [--conf FILE] [--set SECTION.KEY=VALUE ...]
    mrcrawl demo [--depth N] [--out DIR]
    mrcrawl recrawl --out DIR [--depth N] [--at TIME] [-r ...] [--conf FILE] [--set ...]
    mrcrawl reparse OUT [-r ...] [--conf FILE] [--set ...]
    mrcrawl extract --site CONF [--url URL] [--links] URL-or-FILE
    mrcrawl db stats OUT | mrcrawl db get OUT URL...
    mrcrawl report OUT [--output FILE] [--png-dir DIR]
    mrcrawl index OUT --solr URL [-r ...] [--set solr.KEY=VALUE ...]

Errors the user can act on (missing seeds file, unwritable output folder, a folder
that is not a crawl, bad configuration, a failed step) print one line and exit with
status 2. A crawl cycle that tried URLs and fetched no page exits with status 3 after
its summary, with the top reasons and what to do about each.

A run on an existing crawl starts from the settings of its last run (OUT/conf.json,
the sites' rules included), then applies --conf, --sites and --set given now; each
setting that differs is printed (drivers/folder/settings.py).

The crawler's modules are imported inside the commands that use them: they take about
0.4 s, which ``mrcrawl --help`` and a usage error need not wait for.
"""
import argparse
import atexit
import json
import logging
import os
import shutil
import sys
import tempfile

from drivers.folder import layout
from drivers.runtime import interrupts
from jobs.lib import config

EXIT_USAGE = 2
EXIT_NO_PAGE = 3           # the cycle tried URLs and fetched none (drivers/reports/summary.py)


def _add_crawl_options(p, depth_default=3):
    p.add_argument('--depth', type=int, default=depth_default,
                   help='Link hops from the seeds to fetch: seeds are depth 0, so N+1 '
                        'layers (as wget -l N, Scrapy DEPTH_LIMIT=N). Default: %s' % (
                            depth_default if depth_default is not None
                            else "the last cycle's"))
    p.add_argument('--at', metavar='TIME', default=None,
                   help='Pretend it is TIME (ISO-8601 UTC, e.g. 2026-12-31T00:00:00Z) when '
                        'a later cycle decides what is due again. Default: now.')
    p.add_argument('-r', '--runner', choices=('inline', 'local', 'hadoop'), default='local',
                   help='mrjob runner: inline (one process, for debugging), local '
                        '(subprocesses on this machine), hadoop (Hadoop Streaming on '
                        'YARN; OUT may be hdfs:///...). Default: %(default)s')
    p.add_argument('--conf', metavar='FILE',
                   help='Site configuration (TOML) overriding conf/defaults.toml.')
    p.add_argument('--set', metavar='SECTION.KEY=VALUE', action='append', default=[],
                   help='Override one setting, after --conf; repeatable. '
                        'Example: --set politeness.delay=0.5')
    p.add_argument('--prune', action='store_true',
                   help='Delete the pages of earlier cycles that a setting now refuses '
                        '(recrawl.prune, for this run only). Default: they are kept.')
    p.add_argument('-q', '--quiet', action='store_true', help='Print only the summary.')


def build_parser():
    parser = argparse.ArgumentParser(
        prog='mrcrawl',
        description='A layer-by-layer web crawler that runs as MapReduce jobs (mrjob). '
                    'Settings and their defaults: conf/defaults.toml.')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    crawl = sub.add_parser('crawl', help='Crawl from seed URLs into an output folder.',
                           description='Crawl from seed URLs, layer by layer: fetch, '
                                       'parse, optimize per layer, then merge and xml. '
                                       'Rerunning the same command resumes an '
                                       'interrupted crawl, or on a finished one runs the '
                                       'next cycle: what is new (new seeds, a larger '
                                       '--depth, links found last time) and what is due '
                                       'again, then merged/, xml/ and the delta since the '
                                       'last cycle (OUT/delta/CCC/xml).')
    crawl.add_argument('--seeds', metavar='FILE',
                       help='Seed URLs, one per line; blank lines and # comments skipped. '
                            'Optional when the sites name entry URLs (--sites).')
    crawl.add_argument('--sites', metavar='DIR', action='append', default=[],
                       help='Site configurations (a folder of *.toml, or a file) in place '
                            'of parse.sites; their [site] entry URLs are seeds too, so '
                            'a crawl can start from them alone. Repeatable.')
    crawl.add_argument('--out', required=True, metavar='DIR',
                       help='Output folder (local path or hdfs:///path).')
    _add_crawl_options(crawl)

    demo = sub.add_parser('demo', help='Serve the fixture website on 127.0.0.1 and crawl it.',
                          description='Start the project\'s fixture website on loopback, '
                                      'crawl it and print the summary (no internet needed).')
    demo.add_argument('--out', default='demo-crawl', metavar='DIR',
                      help='Output folder (replaced). Default: %(default)s')
    _add_crawl_options(demo)

    recrawl = sub.add_parser(
        'recrawl', help='Run the next cycle of a crawl without new seeds.',
        description='The next cycle of a finished crawl (what `mrcrawl crawl` does when '
                    'rerun on it), with no seeds file and the last cycle\'s depth unless '
                    '--depth is given: fetch what is new within the depth and what is due '
                    'again (conditional requests; recrawl.*), rebuild merged/ and xml/, '
                    'and write what changed to OUT/delta/CCC/xml. Rerunning resumes an '
                    'unfinished cycle.')
    recrawl.add_argument('--out', required=True, metavar='DIR', help='The crawl output folder.')
    _add_crawl_options(recrawl, depth_default=None)
    _add_reparse(sub)

    sub.add_parser('extract', add_help=False,
                   help='Show what a site configuration (conf/sites) extracts from one page: '
                        'mrcrawl extract --site CONF [--url URL] [--links] URL-or-FILE')

    sub.add_parser('report', add_help=False,
                   help='Write OUT/report.html (tables and charts): mrcrawl report OUT '
                        '[--output FILE] [--png-dir DIR]')
    _add_db(sub)
    _add_index(sub)
    return parser


def _add_reparse(sub):
    reparse = sub.add_parser(
        'reparse', help='Parse the stored pages again (new site rules); fetch nothing.',
        description='Parse every layer\'s pages again from their stored bodies (the WARC '
                    'files of warc.enabled) with the settings given now, e.g. a site '
                    'configuration with a new field rule, then rebuild merged/, xml/ and '
                    'index/ and write what changed to OUT/delta/CCC-reparseK/xml. Nothing '
                    'is fetched. Rerunning resumes an interrupted reparse.')
    reparse.add_argument('out', metavar='OUT', help='The crawl output folder.')
    reparse.add_argument('-r', '--runner', choices=('inline', 'local', 'hadoop'),
                         default='local', help='mrjob runner. Default: %(default)s')
    reparse.add_argument('--conf', metavar='FILE',
                         help='Site configuration (TOML) overriding conf/defaults.toml.')
    reparse.add_argument('--set', metavar='SECTION.KEY=VALUE', action='append', default=[],
                         help='Override one setting, after --conf; repeatable.')
    reparse.add_argument('-q', '--quiet', action='store_true', help='Print only the summary.')


def _add_db(sub):
    db = sub.add_parser('db', help='Look into a crawl database: stats, get.',
                        description='Counts by status, depth and host, or the records '
                                    'of some URLs, from the newest OUT/crawldb/NNN.')
    db_sub = db.add_subparsers(dest='db_command', required=True, metavar='DB_COMMAND')
    st = db_sub.add_parser('stats', help='URLs by status, depth and host.')
    st.add_argument('out', metavar='OUT', help='Crawl output folder.')
    st.add_argument('--json', action='store_true', help='Print JSON instead of a table.')
    gt = db_sub.add_parser('get', help='The crawl database record of URL(s).',
                           description='Print the crawl database records of the URLs '
                                       'found; the ones not found are named on stderr. '
                                       'Exit status 1 when none is found.')
    gt.add_argument('out', metavar='OUT', help='Crawl output folder.')
    gt.add_argument('urls', metavar='URL', nargs='+', help='URL(s), any spelling.')
    for p in (st, gt):
        p.add_argument('-r', '--runner', choices=('inline', 'local', 'hadoop'),
                       default='inline', help='mrjob runner. Default: %(default)s')


def _add_index(sub):
    index = sub.add_parser(
        'index', help='Index the crawl\'s pages into Solr: its base, then each delta.',
        description='Post the crawl\'s pages to a Solr core or collection (the schema of '
                    'conf/solr/mrcrawl): the base build, then each delta in order '
                    '(adds, changes, deletions). OUT/solr.json records what the Solr '
                    'holds, so a rerun posts only what is new, and a run stopped half-way '
                    'can be run again.')
    index.add_argument('out', metavar='OUT', help='The crawl output folder.')
    index.add_argument('--solr', metavar='URL', required=True,
                       help='The core or collection, e.g. http://127.0.0.1:8983/solr/mrcrawl '
                            '(a password as ${NAME}: http://user:${SOLR_PASSWORD}@host/...).')
    index.add_argument('-r', '--runner', choices=('inline', 'local', 'hadoop'),
                       default='local', help='mrjob runner. Default: %(default)s')
    index.add_argument('--set', metavar='SECTION.KEY=VALUE', action='append', default=[],
                       help='Override a setting ([solr] ...) for this run; repeatable.')
    index.add_argument('-q', '--quiet', action='store_true', help='Print only the result.')


def _print(msg):
    print(msg, flush=True)


def resolve_settings(args, out, extra_sets=(), site_dirs=()):
    """The run's settings (drivers/folder/settings.py), their changes printed; None after a
    one-line error (no Hadoop for -r hadoop, a folder that cannot be reached, a bad
    setting). Whether the folder may be crawled into is Crawl.prepare's to say."""
    # lazy: the crawler is imported by the commands that run it (docstring)
    from drivers.folder import settings
    from drivers.runtime import hadoop_locate
    sets = list(extra_sets) + args.set + (
        ['recrawl.prune=true'] if getattr(args, 'prune', False) else [])
    try:
        if args.runner == 'hadoop':     # first: the folder may be on its HDFS
            hadoop_locate.locate()
        run = settings.for_run(out, args.conf, sets, site_dirs)
    except hadoop_locate.NoHadoop as e:
        print('mrcrawl: %s' % e, file=sys.stderr)
        return None
    except config.ConfigError as e:
        print('mrcrawl: configuration error: %s' % e, file=sys.stderr)
        return None
    except OSError as e:          # an HDFS folder whose NameNode does not answer, say
        print('mrcrawl: cannot read the output folder %s: %s' % (
            out, ' '.join(str(e).split())), file=sys.stderr)
        return None
    for line in run.notes:
        _print('settings: %s' % line)
    for change in run.changes:
        _print('setting changed since the last run: %s' % change.line())
    return run


def run_crawl(args, seeds, out, extra_sets=(), site_dirs=()):
    # lazy: the crawler is imported by the commands that run it (docstring)
    from drivers.crawl import Crawl
    from drivers.reports.summary import no_page_reasons
    from drivers.runtime.steps import CrawlError
    run = resolve_settings(args, out, extra_sets, site_dirs)
    if run is None:
        return EXIT_USAGE
    progress = (lambda msg: None) if args.quiet else _print
    # The fetch's progress line goes to this stdout, even when an inline job has
    # sys.stdout pointed at its output file meanwhile (mrjob's inline runner does).
    crawl = Crawl(out, run.conf, runner=args.runner, depth=args.depth, progress=progress,
                  settings_changes=[c.as_dict() for c in run.changes],
                  live=None if args.quiet else sys.stdout)
    try:
        report = crawl.run(seeds, args.at)
    except CrawlError as e:
        print('mrcrawl: %s' % e, file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:     # the driver's own bookkeeping (a full disk, a lost folder)
        print('mrcrawl: cannot write the crawl output folder %s: %s' % (
            out, e.strerror or e), file=sys.stderr)
        return EXIT_USAGE
    if args.quiet:
        print(crawl.report.format_summary(report))
    failed = no_page_reasons(report)
    for line in failed:
        print('mrcrawl: %s' % line, file=sys.stderr)
    return EXIT_NO_PAGE if failed else 0


def run_recrawl(args):
    """The next cycle, without seeds: what `crawl` does when rerun on a finished crawl."""
    return run_crawl(args, None, args.out)


def run_reparse(args):
    # lazy: the crawler is imported by the commands that run it (docstring)
    from drivers.crawl import Crawl
    from drivers.runtime.steps import CrawlError
    run = resolve_settings(args, args.out)
    if run is None:
        return EXIT_USAGE
    progress = (lambda msg: None) if args.quiet else _print
    crawl = Crawl(args.out, run.conf, runner=args.runner, depth=None, progress=progress,
                  settings_changes=[c.as_dict() for c in run.changes])
    try:
        report = crawl.reparse()
    except CrawlError as e:
        print('mrcrawl: %s' % e, file=sys.stderr)
        return EXIT_USAGE
    if args.quiet:
        print(crawl.report.format_summary(report))
    return 0


#: The file that marks a folder as a demo crawl, which the next demo may replace.


def run_demo(args):
    # lazy: the crawler is imported by the commands that run it (docstring)
    from drivers.fixtures.site import FixtureSite
    from drivers.folder import settings
    marker = os.path.join(args.out, layout.DEMO_MARKER)
    if os.path.isdir(args.out) and os.listdir(args.out):
        if not os.path.exists(marker):
            print('mrcrawl: %s exists and is not a demo crawl: nothing was deleted; name '
                  'another folder with --out' % args.out, file=sys.stderr)
            return EXIT_USAGE
        shutil.rmtree(args.out)      # the demo's own last crawl
    os.makedirs(args.out, exist_ok=True)
    open(marker, 'w').close()
    settings.mark(settings.fslib.for_path(args.out), args.out)   # a new crawl folder
    with FixtureSite() as site:
        fd, seeds = tempfile.mkstemp(prefix='mrcrawl-demo-seeds-', suffix='.txt')
        with os.fdopen(fd, 'w') as f:
            f.write(site.url('/') + '\n')
        _print('demo: fixture website at %s (crawl delay 0.05 s)' % site.url('/'))
        try:
            return run_crawl(args, seeds, args.out, extra_sets=[
                'security.allow_private_networks=true', 'politeness.delay=0.05'])
        finally:
            os.remove(seeds)


def run_index(args):
    # lazy: the crawler is imported by the commands that run it (docstring)
    from drivers.export.solr import SolrIndexer, check_url
    from drivers.folder import settings
    from drivers.runtime import fs as fslib
    from drivers.runtime.steps import CrawlError
    problem = check_url(args.solr)
    fs = fslib.for_path(args.out)
    if problem is None and not settings.is_crawl(fs, args.out):
        problem = '%s is not a crawl folder' % args.out
    if problem is None:
        try:
            saved = json.loads(fs.read_text(fs.join(args.out, layout.SETTINGS)))
            conf = config.load(base=config.carried(saved)[0], overrides=args.set)
            conf['sites'] = saved.get('sites')     # the crawl's sites: its fields' types
            indexer = SolrIndexer(args.out, conf, args.solr, args.runner,
                                  (lambda msg: None) if args.quiet else _print)
            result = indexer.run()
        except (config.ConfigError, CrawlError) as e:
            problem = str(e)
    if problem is not None:
        print('mrcrawl: %s' % problem, file=sys.stderr)
        return EXIT_USAGE
    if args.quiet:
        print('%d document(s)' % result['documents'])
    return 0


def run_db(args):
    # lazy: the crawler is imported by the commands that run it (docstring)
    from drivers.cli import db
    try:
        if args.db_command == 'stats':
            result = db.stats(args.out, args.runner)
            print(json.dumps(result, indent=1) if args.json else db.format_stats(result))
            return 0
        records = db.get(args.out, args.urls, args.runner)
    except FileNotFoundError as e:
        print('mrcrawl: %s' % e, file=sys.stderr)
        return EXIT_USAGE
    absent = db.missing(args.urls, records)
    if records:
        print(db.format_records(records), flush=True)
    if absent:
        print('mrcrawl: not in the crawl database: %s' % ' '.join(absent), file=sys.stderr)
    return 0 if records else 1


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, format='%(name)s: %(message)s')
    # mrjob logs a failed task at ERROR before raising; the driver's one line says it all.
    logging.getLogger('mrjob').setLevel(logging.CRITICAL)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ['extract']:
        # its own argument parser: mrcrawl extract --help
        from drivers.cli.extract import main_extract
        return main_extract(argv[1:])
    if argv[:1] == ['report']:
        # lazy: the crawler is imported by the commands that run it (docstring)
        from drivers.reports.html import main_report
        return main_report(argv[1:])
    args = build_parser().parse_args(argv)
    if (getattr(args, 'depth', 0) or 0) < 0:
        print('mrcrawl: --depth must be >= 0', file=sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        # Ctrl-C, or SIGTERM (drivers/runtime/interrupts.py). mrjob's runners clean their
        # temporary folders up as the interrupt unwinds them; the crawl resumes from
        # its last finished step. Then no process below this one is left, one line.
        return interrupts.interrupted()
    except Exception as e:      # one raised before a command's own try (no Hadoop)
        # lazy: the crawler is imported by the commands that run it (docstring)
        from drivers.runtime.hadoop_locate import NoHadoop
        from drivers.runtime.steps import CrawlError
        if not isinstance(e, (CrawlError, NoHadoop)):
            raise
        print('mrcrawl: %s' % e, file=sys.stderr)
        return EXIT_USAGE


def run():
    """The ``mrcrawl`` command: :func:`main`; after a success, an exit that skips the
    interpreter's teardown. By then every output is written and closed; the teardown
    would only free what the crawl loaded (the language model, lxml, pyarrow,
    matplotlib), a few tenths of a second at the end of every run. The exit handlers
    (logging's flush among them) still run. A failed run exits the usual way; an
    interrupted one as a successful one does, so that no thread of its (an inline
    fetch's) holds its exit up. SIGINT and SIGTERM: drivers/runtime/interrupts.py."""
    try:
        interrupts.install()       # done already when entered by the console script
        status = main()
        interrupts.finishing()     # from here a signal ends the process at once
    except KeyboardInterrupt:      # outside main's own handler (the arguments' parsing)
        status = interrupts.interrupted()
        interrupts.finishing()
    if status and not interrupts.received():
        sys.exit(status)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


COMMANDS = {'crawl': lambda args: run_crawl(args, args.seeds, args.out, site_dirs=args.sites),
            'demo': run_demo, 'recrawl': run_recrawl, 'reparse': run_reparse, 'db': run_db,
            'index': run_index}

