"""Reading a seeds file: one URL per line; blank lines and ``#`` comments are skipped.

A URL may be followed by a comment (`` # ...``) or, as in Nutch's seed files, by a TAB
and metadata, both ignored. Bad lines (not an absolute http(s) URL: relative, ftp:,
javascript:, a space inside the URL, garbage, too long) are counted by reason and
reported with their line numbers; good ones are normalised and de-duplicated. The
configured sites' entry URLs (jobs.lib.sites) join them: :func:`gather`.
"""
from jobs.lib import urls
from jobs.lib.sites import entry_urls

#: A new crawl folder with neither a seeds file nor sites' entry URLs.
NO_CRAWL = '%s holds no crawl yet: give --seeds, or sites with entry URLs (--sites DIR)'


class NoSeeds(Exception):
    """No seed can be read: the message says why (a crawl stops with it)."""


class SeedReport:
    def __init__(self):
        self.good = []
        self.bad = {}          # reason -> count
        self.examples = []     # (line number, reason, text) for the first few
        self.duplicates = 0
        self.skipped = 0       # blank and comment lines
        self.site_entries = 0  # URLs added from the site configs' entry lists

    def add_entries(self, entries):
        """The sites' entry URLs (already normalised, jobs.lib.sites), after the file's
        seeds; one already there counts as a duplicate."""
        have = set(self.good)
        for url in entries:
            if url in have:
                self.duplicates += 1
                continue
            have.add(url)
            self.good.append(url)
            self.site_entries += 1

    def reject(self, lineno, reason, text):
        self.bad[reason] = self.bad.get(reason, 0) + 1
        if len(self.examples) < 10:
            self.examples.append((lineno, reason, text[:120]))

    def problems(self):
        """Lines for the user about the bad lines: a count by reason, then examples."""
        bad = sum(self.bad.values())
        if not bad:
            return []
        return ['seeds: %d bad line(s) skipped: %s' % (bad, ', '.join(
            '%s=%d' % kv for kv in sorted(self.bad.items())))] + [
            '  line %d (%s): %s' % ex for ex in self.examples[:5]]

    def as_dict(self):
        return {'good': len(self.good), 'bad': dict(self.bad), 'duplicates': self.duplicates,
                'site_entries': self.site_entries,
                'examples': [{'line': n, 'reason': r, 'text': t} for n, r, t in self.examples]}


def read_seeds(path, max_url_length=2048, normalize=urls.normalize):
    """Parse *path*; raises OSError if it cannot be read.

    *normalize* is the crawl's normaliser (``urls.normalizer(conf)``), so that seeds are
    spelled the way out-links are (query sorting, stripped parameters).
    """
    report = SeedReport()
    seen = set()
    with open(path, 'rb') as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode('utf-8').strip()
            except UnicodeDecodeError:
                report.reject(lineno, 'not_utf8', raw.decode('utf-8', 'replace').strip())
                continue
            if not line or line.startswith('#'):
                report.skipped += 1
                continue
            text = line.split('\t', 1)[0].split(' #', 1)[0].strip()
            if any(c.isspace() for c in text):
                # "http://exa mple.com/" is not http://exa/ with a remark after it
                report.reject(lineno, 'whitespace_in_url', line)
                continue
            if urls.resolve(None, text) is None:
                report.reject(lineno, 'not_absolute_url', line)
                continue
            url = normalize(text)
            if url is None:
                report.reject(lineno, 'not_http', line)
                continue
            if len(url) > max_url_length:
                report.reject(lineno, 'url_too_long', line)
                continue
            if url in seen:
                report.duplicates += 1
                continue
            seen.add(url)
            report.good.append(url)
    return report


def gather(seeds_path, conf):
    """The seeds file's URLs (when *seeds_path* is given) and the entry URLs of the
    sites in *conf*: a SeedReport. NoSeeds when the file cannot be read or no valid
    URL comes of both."""
    seeds = SeedReport()
    if seeds_path:
        try:
            seeds = read_seeds(seeds_path, conf['filter']['max_url_length'],
                               normalize=urls.normalizer(conf))
        except OSError as e:
            raise NoSeeds('cannot read seeds file %s: %s' % (seeds_path, e.strerror or e))
    seeds.add_entries(entry_urls(conf.get('sites')))
    if not seeds.good:
        raise NoSeeds('no valid seed URL in %s (%d bad line(s))' % (
            seeds_path, sum(seeds.bad.values())) if seeds_path else
            'no seeds: give --seeds FILE, or sites with entry URLs (--sites DIR)')
    return seeds
