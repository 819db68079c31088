"""URL filters and trap guards for out-links (pure; the parse job applies them).

A :class:`LinkFilter` is built once per task from the ``[filter]`` section of the
resolved configuration; ``reason(url, page_url)`` returns None for a URL to keep, or
the reason it is rejected. Reasons (the counter is ``link_rejected_<reason>_total``):

- ``url_too_long``: longer than ``max_url_length`` characters;
- ``exclude``: matches one of the ``exclude`` regexes;
- ``include``: ``include`` regexes are set and none matches;
- ``scope``: outside ``scope`` (``host``: the linking page's host name; ``domain``: its
  registered domain, by the Public Suffix List; ``any``: no limit);
- ``extension``: the last path segment ends in one of ``deny_extensions`` (by default
  images, audio, video, archives, office files, executables, fonts: types no parser of
  the crawl reads), unless the crawl keeps that type (``fetch.keep_types``);
- ``path_depth``: more than ``max_path_depth`` path segments;
- ``repeated_segments``: a path segment occurs more than ``max_segment_repeats`` times
  (``/a/b/a/b/a/b``: calendar and relative-link traps).

URLs are expected normalised (:func:`jobs.lib.urls.normalize`). The per-host cap of URLs
per layer is not here: it needs all of a host's URLs at once, so MRGenerate's reducer
(keyed by host) enforces it.
"""
import functools
import mimetypes
import re

from jobs.lib import config, content, sitemaps, urls

SCOPES = config.CHOICES['filter.scope']


class FilterError(ValueError):
    """A filter setting is invalid (bad regex, unknown scope); names the key."""


def compile_patterns(patterns, key):
    """Compile regexes, raising :class:`FilterError` naming *key* and the pattern."""
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as e:
            raise FilterError('%s: bad regular expression %r: %s' % (key, p, e))
    return out


@functools.lru_cache(maxsize=1)
def _psl():
    # lazy: the suffix list loads only when a filter asks for domains
    from publicsuffixlist import PublicSuffixList
    return PublicSuffixList()


@functools.lru_cache(maxsize=65536)
def registered_domain(name):
    """``www.example.co.uk`` -> ``example.co.uk``; IP literals and suffixes stay as they are."""
    if not name or urls.literal_ip(name.strip('[]')) is not None:
        return name
    return _psl().privatesuffix(name) or name


def split_url(url):
    """(host name, path) of a normalised http(s) URL, by string slicing (fast)."""
    rest = url.split('://', 1)[1]
    slash = rest.find('/')
    hostport, path = (rest, '/') if slash == -1 else (rest[:slash], rest[slash:])
    q = path.find('?')
    if q != -1:
        path = path[:q]
    if hostport.startswith('['):
        name = hostport[:hostport.find(']') + 1]
    else:
        name = hostport.rsplit(':', 1)[0] if ':' in hostport else hostport
    return name, path


def repeated_segment(path, max_repeats):
    """True when a non-empty path segment occurs more than *max_repeats* times."""
    counts = {}
    for seg in path.split('/'):
        if seg:
            n = counts.get(seg, 0) + 1
            if n > max_repeats:
                return True
            counts[seg] = n
    return False


def kept_extensions(keep_types):
    """The file extensions of MIME types the crawl keeps (``fetch.keep_types``): links to
    them are followed whatever ``deny_extensions`` says. Python's own type table only,
    not the machine's mime.types, so every node decides the same."""
    table = mimetypes.MimeTypes(filenames=())
    return frozenset(ext for t in keep_types
                     for ext in table.guess_all_extensions(t.lower(), strict=False))


class LinkFilter:
    """The ``[filter]`` settings, compiled; ``reason(url, page_url)`` decides a link.
    *keep_types*: ``fetch.keep_types`` (:func:`kept_extensions`)."""

    @classmethod
    def for_conf(cls, conf):
        """The link filter of a resolved configuration: also lets through the types and
        extensions of its content parsers (parse.parsers, jobs.lib.content) and the
        sitemap types when sitemaps are on (jobs.lib.sitemaps.kept_types)."""
        parsers = content.Registry.for_conf(conf)
        return cls(conf['filter'], sitemaps.kept_types(conf) + parsers.types(),
                   parsers.extensions())

    def __init__(self, conf, keep_types=(), keep_extensions=()):
        self.max_len = conf['max_url_length']
        self.include = compile_patterns(conf['include'], 'filter.include')
        self.exclude = compile_patterns(conf['exclude'], 'filter.exclude')
        self.scope = conf['scope']
        if self.scope not in SCOPES:
            raise FilterError('filter.scope must be one of %s, got %r' % (
                ', '.join(SCOPES), self.scope))
        self.extensions = frozenset('.' + e.lower().lstrip('.')
                                    for e in conf['deny_extensions']) - kept_extensions(
            keep_types) - {'.' + e for e in keep_extensions}
        self.max_depth = conf['max_path_depth']
        self.max_repeats = conf['max_segment_repeats']

    def reason(self, url, page_url=None):
        """None to keep *url* (normalised), else the rejection reason."""
        if len(url) > self.max_len:
            return 'url_too_long'
        for r in self.exclude:
            if r.search(url):
                return 'exclude'
        if self.include and not any(r.search(url) for r in self.include):
            return 'include'
        name, path = split_url(url)
        if self.scope != 'any' and page_url:
            page_name = split_url(page_url)[0]
            if self.scope == 'host':
                if name != page_name:
                    return 'scope'
            elif registered_domain(name) != registered_domain(page_name):
                return 'scope'
        if self.extensions:
            last = path.rsplit('/', 1)[-1]
            dot = last.rfind('.')
            if dot != -1 and last[dot:].lower() in self.extensions:
                return 'extension'
        if self.max_depth and path.count('/') - path.endswith('/') > self.max_depth:
            return 'path_depth'
        if self.max_repeats and repeated_segment(path, self.max_repeats):
            return 'repeated_segments'
        return None


def select_links(found, page_url, normalize, link_filter, site_allows=None, max_links=None):
    """Decide a page's links: (kept [{url, text, rel}], rejected [(reason, url)]).

    In order: ``rel=nofollow`` (nofollow), not an http(s) URL after *normalize*
    (scheme), the same URL again on this page (duplicate), *link_filter*'s reasons,
    *site_allows* (the page's site link rules: site_rule), more than *max_links* kept
    (over_cap). Every link found is either kept or rejected with one reason.
    """
    reason_of = link_filter.reason
    kept, rejected, seen = [], [], set()
    normalized = {}   # resolved URL without fragment -> normalize() of it, for this page
    for link in found:
        url = link['url']
        if 'nofollow' in link['rel'] and 'nofollow' in link['rel'].split():
            rejected.append(('nofollow', url))
            continue
        # Resolved URLs are serialised, so the first "#" starts the fragment, which
        # normalize() drops anyway: many links of a page share one normalisation.
        key = url.partition('#')[0]
        try:
            norm = normalized[key]
        except KeyError:
            norm = normalized[key] = normalize(key)
        if norm is None:
            rejected.append(('scheme', url))
            continue
        if norm in seen:
            rejected.append(('duplicate', norm))
            continue
        seen.add(norm)
        reason = reason_of(norm, page_url)
        if reason is None and site_allows is not None and not site_allows(norm):
            reason = 'site_rule'
        if reason is None and max_links is not None and len(kept) >= max_links:
            reason = 'over_cap'
        if reason is not None:
            rejected.append((reason, norm))
            continue
        kept.append({'url': norm, 'text': link['text'], 'rel': link['rel']})
    return kept, rejected
