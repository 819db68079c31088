"""Benchmark: HTML parsing + link extraction speed on real documentation pages.

    .venv/bin/python bench/parse_speed.py [--docs DIR] [--rounds N] [--min-mbps 30]
                                          [--no-install] [--compare]

Pages: the HTML manual of Debian's python3-doc package (/usr/share/doc/python3/html or
similar). When it is missing and apt-get can be run (as root), the script installs it
(``apt-get update && apt-get install -y python3-doc``) unless --no-install; otherwise it
prints SKIP and why, and exits 0.

It times, in this one process (one core), over every page of the manual:

- ``lexbor parse alone``: building the tree only, the floor the others are compared to
  (on a loaded machine the ratio to it is steadier than MB/s);
- ``extract_links``: jobs.lib.html.extract_links (Lexbor HTML5 tree, links resolved
  against <base href>, title, visible text) -- the figure the target applies to;
- ``parse job path``: the same plus what MRParse does per link (normalisation with
  the configured options, [filter] checks, de-duplication);
- with --compare, the same link extraction with lxml.html and with BeautifulSoup
  (html.parser, on a sample: it is slow), for reference.

MB/s = bytes of HTML (UTF-8) / CPU seconds of the best round. Exit status 1 when
``extract_links`` is below --min-mbps.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from jobs.lib import config, filters, html, urls  # noqa: E402

CANDIDATES = ('/usr/share/doc/python3/html', '/usr/share/doc/python3-doc/html',
              '/usr/share/doc/python3.11/html', '/usr/share/doc/python3.11-doc/html',
              '/usr/share/doc/python3.12/html', '/usr/share/doc/python3.13/html')
BASE = 'https://docs.python.org/3/'


def locate(explicit=None):
    for d in ([explicit] if explicit else CANDIDATES):
        if d and os.path.isfile(os.path.join(d, 'index.html')):
            return d
    return None


def install():
    """Try apt-get install python3-doc; returns a reason string when it cannot."""
    if not shutil.which('apt-get'):
        return 'apt-get not found (not a Debian/Ubuntu system)'
    if os.geteuid() != 0:
        return 'not root: run  sudo apt-get install -y python3-doc  first'
    print('installing python3-doc with apt-get ...', flush=True)
    for cmd in (['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', 'python3-doc']):
        res = subprocess.run(cmd, capture_output=True, text=True,
                             env=dict(os.environ, DEBIAN_FRONTEND='noninteractive'))
        if res.returncode != 0:
            return '%s failed: %s' % (' '.join(cmd), (res.stderr or res.stdout).strip()[-300:])
    return None


def load_pages(root):
    pages = []
    for dirpath, _, names in os.walk(root, followlinks=True):
        for name in sorted(names):
            if name.endswith('.html'):
                path = os.path.join(dirpath, name)
                with open(path, 'rb') as f:
                    data = f.read()
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                pages.append((BASE + rel, data.decode('utf-8', 'replace'), len(data)))
    return pages


def time_rounds(fn, pages, rounds):
    """Best CPU seconds of *rounds* runs of fn over all pages, and the links found."""
    best, links = None, 0
    for _ in range(rounds):
        start = time.process_time()
        links = 0
        for url, text, _ in pages:
            links += fn(text, url)
        spent = time.process_time() - start
        best = spent if best is None else min(best, spent)
    return best, links


def bench_lexbor_parse(text, url):
    """The floor: building the HTML5 tree, nothing else (for comparing under load)."""
    html.tree(text)
    return 0


def bench_extract_links(text, url):
    return len(html.extract_links(text, url))


def make_job_path():
    conf = config.load()
    normalize = urls.normalizer(conf)
    link_filter = filters.LinkFilter.for_conf(conf)
    max_links = conf['parse']['max_links_per_page']

    def job_path(text, url):
        parsed = html.parse(text, url, conf['parse']['max_text_chars'])
        kept, _ = filters.select_links(parsed['links'], url, normalize, link_filter,
                                       None, max_links)
        return len(kept)
    return job_path


def bench_lxml(text, url):
    import lxml.html
    doc = lxml.html.document_fromstring(text, base_url=url)
    doc.make_links_absolute(url, resolve_base_href=True, handle_failures='ignore')
    n = 0
    for el in doc.iter('a', 'area', 'frame', 'iframe'):
        if el.get('href') or el.get('src'):
            el.text_content()
            n += 1
    doc.text_content()
    return n


def bench_bs4(text, url):
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(text, 'html.parser')
    n = 0
    for el in soup.find_all(['a', 'area', 'frame', 'iframe']):
        target = el.get('href') or el.get('src')
        if target:
            urls.resolve(url, target)
            el.get_text(' ')
            n += 1
    soup.get_text(' ')
    return n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--docs', help='HTML folder to use instead of the python3-doc manual.')
    p.add_argument('--rounds', type=int, default=3, help='Best of N rounds. Default: %(default)s')
    p.add_argument('--min-mbps', type=float, default=30.0,
                   help='Target for extract_links, MB/s per core. Default: %(default)s')
    p.add_argument('--no-install', action='store_true', help='Never run apt-get.')
    p.add_argument('--compare', action='store_true',
                   help='Also time lxml.html and BeautifulSoup (html.parser, on a sample).')
    args = p.parse_args(argv)

    root = locate(args.docs)
    if root is None and not args.docs and not args.no_install:
        why = install()
        root = locate()
        if root is None:
            print('SKIP: the python3-doc HTML manual is not installed and could not be '
                  'installed: %s' % (why or 'not found after installing'))
            return 0
    if root is None:
        print('SKIP: no HTML manual found (looked in %s); install python3-doc or pass '
              '--docs DIR' % (args.docs or ', '.join(CANDIDATES)))
        return 0
    pages = load_pages(root)
    total = sum(n for _, _, n in pages)
    mb = total / 1e6
    print('pages: %d HTML files, %.1f MB, from %s (one process, CPU time, best of %d)' % (
        len(pages), mb, root, args.rounds))
    results = {}
    runs = [('lexbor parse alone', bench_lexbor_parse, pages),
            ('extract_links', bench_extract_links, pages),
            ('parse job path', make_job_path(), pages)]
    if args.compare:
        sample = pages[::10]
        runs += [('lxml.html', bench_lxml, pages), ('bs4 html.parser (1/10)', bench_bs4, sample)]
    for name, fn, subset in runs:
        seconds, links = time_rounds(fn, subset, args.rounds if 'bs4' not in name else 1)
        size = sum(n for _, _, n in subset) / 1e6
        results[name] = size / seconds
        print('%-24s %7.1f MB/s  (%.2f s CPU for %.1f MB, %d links, %.0f%% of parse alone)'
              % (name, results[name], seconds, size, links,
                 100 * results[name] / results['lexbor parse alone']))
    ok = results['extract_links'] >= args.min_mbps
    print('%s: extract_links %.1f MB/s, target >= %.1f MB/s per core' % (
        'PASS' if ok else 'FAIL', results['extract_links'], args.min_mbps))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
