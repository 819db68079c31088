"""Per-site configuration files (conf/sites/*.toml): loading, validation, matching.

A site file is TOML, read with tomllib (never executed)::

    [site]
    name = "films"                        # default: the file name without .toml
    hosts = ["films.example", "*.films.example"]   # host names, globs allowed; with a
                                          # port ("127.0.0.1:8080"), that host on that
                                          # port only (the default port of http or
                                          # https where the URL names none)
    urls = []                             # regexes: a page matches when its URL matches one
    pages = ['/film/\\d+']                # regexes: pages whose fields are extracted
                                          # (default: every page of the site)
    refetch_interval = 86400              # seconds until a page should be fetched again
    entry = ["https://films.example/"]    # where a crawl of the site starts (depth 0):
                                          # `mrcrawl crawl --sites DIR`, no seeds needed
    delay = 2.0                           # seconds between requests to its hosts
                                          # (default: politeness.delay; see below)
    render = false                        # load its pages in headless Chromium: links
                                          # and fields from the rendered DOM
                                          # (jobs.lib.render, settings [render])
    max_pages = 10000                     # pages ever requested (jobs.lib.sitelimits)
    quota_per_hour = 600                  # requests in any hour, across layers and
    quota_per_day = 5000                  # cycles (jobs.lib.sitelimits)
    proxy = "http://proxy.corp:3128"      # its pages' proxy instead of fetch.proxy;
                                          # "": none (jobs.lib.routes)

    [links]                               # which out-links of this site's pages to follow
    follow = ['/film/', '/list/']         # when set, only links matching one (site_rule)
    deny = ['/login']                     # links matching one are rejected (site_rule)

    [fields.TITLE]                        # a named field; see jobs.lib.extract
    css = "h1.title"                      # one of css / xpath / regex (regex may also
    type = "text"                         # post-process what css or xpath selected)

    [request]                             # what its requests carry (jobs.lib.routes)
    user = "crawler"                      # HTTP credentials (auth = "basic", the
    auth = "digest"                       # default, or "digest"); the password, the
    password = "${FILMS_PASSWORD}"        # cookies and credential headers only as
    headers = {"X-Api-Key" = "${KEY}"}    # references (jobs.lib.secretref); sent over
    cookies = {session = "${file:/p}"}    # https only unless over_http = true

    [resources.video]                     # secondary resources (jobs.lib.extract)
    css = "video source"
    attr = "src"
    max_bytes = 52428800

A site's ``delay`` replaces ``politeness.delay`` for its pages; where
``politeness.key`` puts pages of several sites on one key the largest delay wins, and
robots.txt's Crawl-delay still raises it (jobs.lib.fetcher). ``max_pages`` and the
quotas are applied where a layer is chosen (jobs.generate), never by the fetch.

A page belongs to the first site (files in name order) whose ``hosts`` or ``urls``
match its final URL. The driver calls :func:`resolve` once; the loaded sites travel in
the resolved configuration (``conf['sites']``, plain JSON), so tasks never read
``conf/``. Errors are :class:`SiteConfigError` naming the file and the key.
"""
import fnmatch
import json
import os
import re
import tomllib
import urllib.parse

from jobs.lib import config, secretref, urls
from jobs.lib.config import ConfigError
from jobs.lib.filters import split_url
from jobs.lib.urls import host

FIELD_TYPES = ('text', 'int', 'float', 'date', 'list', 'url')
_FIELD_KEYS = {'css', 'xpath', 'regex', 'attr', 'type', 'formats', 'required'}
_RESOURCE_KEYS = {'css', 'xpath', 'regex', 'attr', 'max_bytes'}
_SITE_KEYS = {'name', 'hosts', 'urls', 'pages', 'refetch_interval', 'entry', 'delay',
              'max_pages', 'quota_per_hour', 'quota_per_day', 'render', 'proxy'}
#: The limits jobs.lib.sitelimits applies, by their key in [site].
LIMIT_KEYS = ('max_pages', 'quota_per_hour', 'quota_per_day')
_LINK_KEYS = {'follow', 'deny'}
_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_.-]*$')


class SiteConfigError(ConfigError):
    """A site file is invalid; the message names the file and the key."""


def _err(path, msg, *args):
    return SiteConfigError('%s: %s' % (path, msg % args))


def _str_list(path, key, value):
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _err(path, '%s must be a list of strings, got %r', key, value)
    return value


def _regexes(path, key, value):
    value = _str_list(path, key, value)
    for p in value:
        try:
            re.compile(p)
        except re.error as e:
            raise _err(path, '%s: bad regular expression %r: %s', key, p, e)
    return value


def _check_keys(path, where, table, allowed):
    if not isinstance(table, dict):
        raise _err(path, '%s must be a table', where)
    for key in table:
        if key not in allowed:
            raise _err(path, 'unknown key %s.%s (allowed: %s)', where, key,
                       ', '.join(sorted(allowed)))


def _selector(path, where, spec, field=True):
    out = {}
    kinds = [k for k in ('css', 'xpath') if k in spec]
    if len(kinds) > 1:
        raise _err(path, '%s: give css or xpath, not both', where)
    if not kinds and 'regex' not in spec:
        raise _err(path, '%s needs one of css, xpath, regex', where)
    if 'css' in spec:
        if not isinstance(spec['css'], str) or not spec['css'].strip():
            raise _err(path, '%s.css must be a non-empty string', where)
        _check_css(path, where, spec['css'])
        out['css'] = spec['css']
    if 'xpath' in spec:
        if not isinstance(spec['xpath'], str):
            raise _err(path, '%s.xpath must be a string', where)
        # lazy: lxml only to check a site file's XPath
        from lxml import etree
        try:
            etree.XPath(spec['xpath'])
        except etree.XPathError as e:
            raise _err(path, '%s.xpath: bad XPath %r: %s', where, spec['xpath'], e)
        out['xpath'] = spec['xpath']
    if 'regex' in spec:
        if not isinstance(spec['regex'], str):
            raise _err(path, '%s.regex must be a string', where)
        _regexes(path, where + '.regex', spec['regex'])
        out['regex'] = spec['regex']
    if 'attr' in spec:
        if not isinstance(spec['attr'], str) or not spec['attr']:
            raise _err(path, '%s.attr must be an attribute name', where)
        out['attr'] = spec['attr']
    if field:
        ftype = spec.get('type', 'text')
        if ftype not in FIELD_TYPES:
            raise _err(path, '%s.type must be one of %s, got %r', where,
                       ', '.join(FIELD_TYPES), ftype)
        out['type'] = ftype
        out['formats'] = _str_list(path, where + '.formats', spec.get('formats', []))
        required = spec.get('required', False)
        if not isinstance(required, bool):
            raise _err(path, '%s.required must be true or false', where)
        out['required'] = required
    return out


def _check_css(path, where, css):
    # lazy: the parser only to check a site file's CSS
    from selectolax.lexbor import LexborHTMLParser
    try:
        LexborHTMLParser('<p></p>').css(css)
    except Exception as e:   # selectolax raises plain exceptions for bad selectors
        raise _err(path, '%s.css: bad selector %r: %s', where, css, e)


def parse_site(data, path):
    """Validate the TOML table of one site file -> the plain dict kept in conf['sites']."""
    _check_keys(path, 'the file', data, {'site', 'links', 'fields', 'resources', 'request'})
    site = data.get('site', {})
    _check_keys(path, 'site', site, _SITE_KEYS)
    name = site.get('name', os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str) or not name:
        raise _err(path, 'site.name must be a non-empty string')
    hosts = [_host_entry(path, h) for h in _str_list(path, 'site.hosts', site.get('hosts', []))]
    url_res = _regexes(path, 'site.urls', site.get('urls', []))
    if not hosts and not url_res:
        raise _err(path, 'site.hosts or site.urls must name the pages of the site')
    refetch = site.get('refetch_interval', 0)
    if isinstance(refetch, bool) or not isinstance(refetch, (int, float)) or refetch < 0:
        raise _err(path, 'site.refetch_interval must be seconds >= 0, got %r', refetch)
    entry = _entry_urls(path, site.get('entry', []), hosts, url_res)
    delay = site.get('delay')
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, (int, float))
                              or not 0 <= delay <= 3600):
        raise _err(path, 'site.delay must be seconds from 0 to 3600, got %r', delay)
    render = site.get('render', False)
    if not isinstance(render, bool):
        raise _err(path, 'site.render must be true or false, got %r', render)
    proxy = site.get('proxy')
    if proxy is not None:
        problem = config.check_proxy(proxy, 'site.proxy') if isinstance(proxy, str) \
            else 'site.proxy must be a proxy URL or "", got %r' % (proxy,)
        if problem:
            raise _err(path, '%s', problem)
    limits = {}
    for key in LIMIT_KEYS:
        value = site.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _err(path, 'site.%s must be a whole number >= 0, got %r', key, value)
            limits[key] = value
    links = data.get('links', {})
    _check_keys(path, 'links', links, _LINK_KEYS)
    fields = {}
    for fname, spec in data.get('fields', {}).items():
        if not _NAME_RE.match(fname):
            raise _err(path, 'fields.%s: a field name is letters, digits, _ . -', fname)
        _check_keys(path, 'fields.' + fname, spec, _FIELD_KEYS)
        fields[fname] = _selector(path, 'fields.' + fname, spec)
    resources = {}
    for rname, spec in data.get('resources', {}).items():
        if not _NAME_RE.match(rname):
            raise _err(path, 'resources.%s: a name is letters, digits, _ . -', rname)
        _check_keys(path, 'resources.' + rname, spec, _RESOURCE_KEYS)
        res = _selector(path, 'resources.' + rname, spec, field=False)
        max_bytes = spec.get('max_bytes')    # None: media.max_bytes (resolve)
        if max_bytes is not None and (isinstance(max_bytes, bool) or
                                      not isinstance(max_bytes, int) or max_bytes < 1):
            raise _err(path, 'resources.%s.max_bytes must be bytes >= 1', rname)
        res['max_bytes'] = max_bytes
        resources[rname] = res
    return {'name': name, 'file': path, 'hosts': hosts, 'urls': url_res, 'entry': entry,
            'pages': _regexes(path, 'site.pages', site.get('pages', [])),
            'refetch_interval': refetch or None,
            'follow': _regexes(path, 'links.follow', links.get('follow', [])),
            'deny': _regexes(path, 'links.deny', links.get('deny', [])),
            'fields': fields, 'resources': resources,
            'delay': None if delay is None else float(delay), 'render': render,
            'proxy': proxy, 'request': _request(path, data.get('request', {})), **limits}


_REQUEST_KEYS = {'user', 'password', 'auth', 'headers', 'cookies', 'over_http'}
#: HTTP authentication schemes a site's credentials are sent with (jobs.lib.routes).
AUTH_SCHEMES = ('basic', 'digest')
#: Request headers whose value must be a secret reference (jobs.lib.secretref).
CREDENTIAL_HEADERS = ('authorization', 'cookie', 'proxy-authorization')
_TOKEN_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")     # RFC 9110 token


def _request(path, table):
    """[request]: what the site's requests carry (jobs.lib.routes) -> a dict, or None
    when the file has no such table."""
    _check_keys(path, 'request', table, _REQUEST_KEYS)
    if not table:
        return None
    user, password = table.get('user'), table.get('password')
    if (user is None) != (password is None) or user is not None and (
            not isinstance(user, str) or not user or ':' in user):
        raise _err(path, 'request.user and request.password go together; a user name '
                   'has no ":"')
    if password is not None and not (isinstance(password, str)
                                     and secretref.is_reference(password)):
        raise _err(path, 'request.password: write it as ${VARIABLE} (an environment '
                   'variable) or ${file:/path}: the crawl writes its settings to its folder')
    headers, cookies = table.get('headers', {}), table.get('cookies', {})
    for where, items in (('headers', headers), ('cookies', cookies)):
        if not isinstance(items, dict) or not all(
                isinstance(k, str) and _TOKEN_RE.match(k) and isinstance(v, str) and
                '\r' not in v and '\n' not in v for k, v in items.items()):
            raise _err(path, 'request.%s must be a table of names to one-line strings', where)
    for name, value in list(headers.items()) + [('cookie', v) for v in cookies.values()]:
        if name.lower() in CREDENTIAL_HEADERS and not secretref.is_reference(value):
            raise _err(path, 'request.%s: write %s as ${VARIABLE} or ${file:/path}',
                       'cookies' if name == 'cookie' else 'headers', name)
    over_http = table.get('over_http', False)
    if not isinstance(over_http, bool):
        raise _err(path, 'request.over_http must be true or false, got %r', over_http)
    auth = table.get('auth', 'basic')
    if auth not in AUTH_SCHEMES:
        raise _err(path, 'request.auth must be one of %s, got %r', ', '.join(AUTH_SCHEMES),
                   auth)
    return {'user': user, 'password': password, 'auth': auth, 'headers': headers,
            'cookies': cookies, 'over_http': over_http}


_HOSTS_EXAMPLE = 'e.g. hosts = ["films.example", "*.films.example", "127.0.0.1:8080"]'


def _host_entry(path, entry):
    """One site.hosts entry, lower-cased: a host name or glob, an IP address (IPv6 in
    brackets), each with an optional ``:port``; else a SiteConfigError saying what to
    write instead."""
    h = entry.strip().lower()
    if '://' in h or '/' in h or '@' in h or not h or any(c.isspace() for c in h):
        netloc = urllib.parse.urlsplit(h if '://' in h else '//' + h).netloc \
            if h and not any(c.isspace() for c in h) else ''
        hint = ('write %s (the host alone, or "host:port")' % json.dumps(
            netloc.rpartition('@')[2]) if netloc else
            'write the host alone, or "host:port"')
        raise _err(path, 'site.hosts: %r is not a host name: %s; %s', entry, hint,
                   _HOSTS_EXAMPLE)
    name, port = _split_port(h)
    if name.startswith('[') != name.endswith(']') or (':' in name and not name.startswith('[')):
        raise _err(path, 'site.hosts: %r: an IPv6 address goes in brackets, with an '
                   'optional port: "[::1]" or "[::1]:8080"', entry)
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise _err(path, 'site.hosts: %r: the port %r is not a number from 1 to 65535; '
                   '%s', entry, port, _HOSTS_EXAMPLE)
    return name if port is None else '%s:%d' % (name, int(port))


def _split_port(entry):
    """``'name:port'`` -> ``('name', 'port')``; ``'name'`` -> ``('name', None)``
    (``[v6]`` and ``[v6]:port`` too)."""
    if entry.startswith('['):
        name, _, rest = entry.partition(']')
        name += ']'
        return (name, rest[1:]) if rest.startswith(':') else (name + rest, None)
    if entry.count(':') == 1:
        name, _, port = entry.partition(':')
        return name, port
    return entry, None


def url_port(url):
    """The port of a normalised http(s) URL: the one it names, else its scheme's."""
    name, port = _split_port(host(url))
    if port and port.isdigit():
        return int(port)
    return 443 if url[:6].lower() == 'https:' else 80


def _entry_urls(path, value, hosts, url_res):
    """site.entry: absolute http(s) URLs of pages of this site."""
    entry = []
    for url in _str_list(path, 'site.entry', value):
        norm = urls.normalize(url) if urls.resolve(None, url) else None
        if norm is None:
            raise _err(path, 'site.entry: %r is not an absolute http(s) URL', url)
        if SiteIndex([{'name': '', 'hosts': hosts, 'urls': url_res, 'pages': [],
                       'follow': [], 'deny': []}]).match(norm) is None:
            raise _err(path, 'site.entry: %r is not a page of this site (site.hosts, '
                       'site.urls)', url)
        entry.append(norm)
    return entry


def entry_urls(specs):
    """The entry URLs of every site (conf['sites']), in file order, once each."""
    seen, out = set(), []
    for spec in specs or ():
        for url in spec.get('entry') or ():
            if url not in seen:
                seen.add(url)
                out.append(url)
    return out


def load_file(path):
    """One site file -> its validated dict."""
    try:
        with open(path, 'rb') as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise _err(path, 'file not found')
    except tomllib.TOMLDecodeError as e:
        raise _err(path, 'not valid TOML: %s', e)
    return parse_site(data, path)


def _locate(entry):
    """A relative entry is looked up in the current directory, then beside the installed
    conf/ (the default, "conf/sites", names the sites shipped with mrcrawl)."""
    if os.path.isabs(entry) or os.path.exists(entry):
        return entry
    return os.path.join(os.path.dirname(config.CONF_DIR), entry)


def load_all(entries):
    """Site dicts from files and directories of ``*.toml`` (in name order)."""
    sites, names = [], {}
    for entry in entries:
        path = _locate(entry)
        if os.path.isdir(path):
            files = sorted(os.path.join(path, n) for n in os.listdir(path)
                           if n.endswith('.toml') and not n.startswith('.'))
        elif os.path.isfile(path):
            files = [path]
        else:
            raise SiteConfigError('parse.sites: %s: no such file or directory' % entry)
        for f in files:
            site = load_file(f)
            if site['name'] in names:
                raise _err(f, 'site.name %r is also used by %s', site['name'],
                           names[site['name']])
            names[site['name']] = f
            sites.append(site)
    return sites


def resolve(conf):
    """Load the site files ``conf['parse']['sites']`` names into ``conf['sites']``.

    The driver calls this once, after :func:`jobs.lib.config.load` and before writing
    OUT/conf.json. Returns *conf*. Raises :class:`SiteConfigError` (a ConfigError).
    """
    conf['sites'] = load_all(conf['parse']['sites'])
    for site in conf['sites']:
        for res in site['resources'].values():
            if res['max_bytes'] is None:
                res['max_bytes'] = conf['media']['max_bytes']
    return conf


class Site:
    """One site's configuration, compiled for matching."""

    def __init__(self, spec):
        self.spec = spec
        self.name = spec['name']
        entries = [_split_port(h) for h in spec['hosts']]
        self.exact_hosts = frozenset(n for n, p in entries if p is None and not _is_glob(n))
        # "host:port" entries: (name, port); globs: (compiled, port or None)
        self.host_ports = frozenset((n, int(p)) for n, p in entries
                                    if p is not None and not _is_glob(n))
        self.host_globs = [(re.compile(fnmatch.translate(n)), p and int(p))
                           for n, p in entries if _is_glob(n)]
        self.url_res = [re.compile(p) for p in spec['urls']]
        self.page_res = [re.compile(p) for p in spec['pages']]
        self.follow = [re.compile(p) for p in spec['follow']]
        self.deny = [re.compile(p) for p in spec['deny']]
        self.refetch_interval = spec.get('refetch_interval')
        self.delay = spec.get('delay')
        self.render = spec.get('render', False)

    def matches(self, host, url):
        if host in self.exact_hosts:
            return True
        port = url_port(url) if self.host_ports or self.host_globs else None
        return ((host, port) in self.host_ports
                or any(g.match(host) and p in (None, port) for g, p in self.host_globs)
                or any(r.search(url) for r in self.url_res))

    def extracts(self, url):
        """True when fields are extracted from the page at *url*."""
        return not self.page_res or any(r.search(url) for r in self.page_res)

    def link_allowed(self, url):
        """The site's link rules: False means rejected (reason site_rule)."""
        if any(r.search(url) for r in self.deny):
            return False
        return not self.follow or any(r.search(url) for r in self.follow)


def _is_glob(text):
    if text.startswith('[') and text.endswith(']') and ':' in text:
        return False                   # an IPv6 address in brackets
    return any(c in text for c in '*?[')


class SiteIndex:
    """All configured sites; ``match(url)`` finds the one a page belongs to."""

    def __init__(self, specs):
        self.sites = [Site(s) for s in specs or ()]

    def match(self, url):
        if not self.sites or not url:
            return None
        try:
            host = split_url(url)[0].lower()
        except IndexError:
            return None
        for site in self.sites:
            if site.matches(host, url):
                return site
        return None
