"""``mrcrawl extract``: show what a site configuration extracts from one page.

    mrcrawl extract --site CONF [--url URL] [--links] [--conf FILE] [--set K=V ...]
                    URL-or-FILE

Reads the page from a file or fetches it (one GET with urllib, no robots.txt: it is
a tool for writing configurations), applies the site configuration CONF (whether or not its hosts
match: the output says whether they do) and prints JSON: the fields, their checksum,
required fields that came out empty, secondary resources and, with ``--links``, which
out-links the crawl would follow and why the others are rejected.

Exit status: 0, 1 when a required field came out empty, 2 for an error (bad
configuration, unreadable file, failed fetch).
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.request

from jobs.lib import config, encoding, extract, filters, html, sites, urls

EXIT_MISSING = 1
EXIT_ERROR = 2


def build_parser():
    p = argparse.ArgumentParser(
        prog='mrcrawl extract',
        description='Show what a site configuration (conf/sites/*.toml) extracts from '
                    'one page: fields, checksum, resources and (--links) followed links.')
    p.add_argument('target', metavar='URL-or-FILE',
                   help='An http(s) URL to fetch, or an HTML file.')
    p.add_argument('--site', required=True, metavar='CONF',
                   help='The site configuration file (TOML).')
    p.add_argument('--url', metavar='URL',
                   help='The page URL of a FILE (for matching, relative links and url '
                        'fields). Default: the URL itself, or http://HOST/FILE-NAME with '
                        "the site's first host.")
    p.add_argument('--links', action='store_true',
                   help='Also list the out-links kept and rejected (with reasons).')
    p.add_argument('--conf', metavar='FILE',
                   help='Crawl configuration overriding conf/defaults.toml ([filter], '
                        '[parse] normalisation options).')
    p.add_argument('--set', metavar='SECTION.KEY=VALUE', action='append', default=[],
                   help='Override one setting; repeatable.')
    p.add_argument('--timeout', type=float, default=15.0,
                   help='Seconds to wait when fetching a URL. Default: %(default)s')
    return p


def _is_url(text):
    return text.lower().startswith(('http://', 'https://'))


def _read_target(args, conf):
    """(decoded HTML, page URL) of the target; raises OSError/ValueError."""
    if _is_url(args.target):
        # The standard library's client, not the crawl's fetcher: this is one request
        # the user asked for by URL, and it must not depend on the fetcher's
        # connection policy for crawled links.
        req = urllib.request.Request(args.target, headers={
            'User-Agent': conf['politeness']['user_agent']})
        try:
            with urllib.request.urlopen(req, timeout=args.timeout) as resp:
                body = resp.read(conf['fetch']['max_body_bytes'])
                text, _ = encoding.decode(body, resp.headers.get('content-type'))
                return text, args.url or resp.geturl()
        except urllib.error.HTTPError as e:
            raise ValueError('HTTP %d' % e.code)
    with open(args.target, 'rb') as f:
        body = f.read()
    text, _ = encoding.decode(body, None)
    return text, args.url


def _default_url(site, target):
    hosts = [h for h in site['hosts'] if not any(c in h for c in '*?[')]
    return 'http://%s/%s' % (hosts[0] if hosts else 'localhost', os.path.basename(target))


def run(args):
    """The report dict for parsed *args* (raises ConfigError, OSError, ValueError)."""
    conf = config.load(args.conf, args.set)
    spec = sites.load_file(args.site)
    site = sites.Site(spec)
    text, page_url = _read_target(args, conf)
    page_url = page_url or _default_url(spec, args.target)
    normalize = urls.normalizer(conf)
    page_url = normalize(page_url) or page_url
    tree = html.tree(text)
    page = extract.Page(text, page_url, tree, normalize)
    fields, missing = extract.extract_fields(page, spec['fields'])
    report = {
        'site': spec['name'], 'file': args.site, 'url': page_url,
        'matches_site': sites.SiteIndex([spec]).match(page_url) is not None,
        'extracts_page': site.extracts(page_url),
        'fields': fields, 'fields_checksum': extract.fields_checksum(fields),
        'missing_required': missing,
        'resources': extract.extract_resources(page, spec['resources']),
        'refetch_interval': spec['refetch_interval'],
    }
    if args.links:
        parsed = html.parse(text, page_url, tree=tree)
        site_allows = site.link_allowed if site.follow or site.deny else None
        kept, rejected = filters.select_links(
            parsed['links'], page_url, normalize, filters.LinkFilter.for_conf(conf),
            site_allows, conf['parse']['max_links_per_page'])
        by_reason = {}
        for reason, url in rejected:
            by_reason.setdefault(reason, []).append(url)
        report['links'] = {'kept': [l['url'] for l in kept], 'rejected': by_reason}
    return report


def main_extract(argv=None):
    args = build_parser().parse_args(argv)
    try:
        report = run(args)
    except config.ConfigError as e:
        print('mrcrawl extract: configuration error: %s' % e, file=sys.stderr)
        return EXIT_ERROR
    except (OSError, ValueError) as e:
        print('mrcrawl extract: %s: %s' % (args.target, e), file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:   # requests' errors and the like: one line, not a traceback
        print('mrcrawl extract: %s: %s: %s' % (args.target, type(e).__name__, e),
              file=sys.stderr)
        return EXIT_ERROR
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return EXIT_MISSING if report['missing_required'] else 0


if __name__ == '__main__':
    sys.exit(main_extract())
