"""The settings one run of a crawl uses, and whether a folder is a crawl at all.

A crawl folder keeps the resolved settings of its last run in OUT/conf.json, the rules
of its site files included (``conf['sites']``, the validated copy jobs read): a crawl is
self-contained, and no later run depends on files outside it. Each run of ``crawl``,
``recrawl`` or ``reparse`` on an existing crawl starts from those settings, then applies
what the command gives now, in jobs.lib.config's order: ``--conf``, ``--sites``,
``--set``. A new crawl starts from conf/defaults.toml.

    new crawl:    defaults < --conf < --sites < --set
    later runs:   defaults < the crawl's last settings < --conf < --sites < --set

The site files are read again only when this run names them (``--sites``, or a
``parse.sites`` that differs from the last run's); otherwise the crawl's copy is used.
Settings listed in :data:`PER_RUN` hold for the run that sets them only.

Every difference from the last run is a :class:`Change`: printed one line per key by the
CLI, and recorded in the cycle's record and report.json.

A folder is a crawl when it holds :data:`MARKER` (written at a crawl's start) or, for
folders made before the marker, conf.json beside cycles/ or in/. ``crawl`` refuses a
non-empty folder that is not a crawl (:func:`check_folder`; a STOP file or a lock in a
new folder aside), so that mrcrawl never writes into, or deletes from, a folder of the
user's.
"""
import json
from typing import NamedTuple

from drivers.folder import layout
from drivers.runtime import fs as fslib
from jobs.lib import config, sites as sitelib

#: Settings that a run's command sets for that run only: the next cycle starts from the
#: default again (conf/defaults.toml says so beside each).
PER_RUN = ('recrawl.prune',)


class FolderRefused(Exception):
    """The output folder is not one mrcrawl may write into: one line for the user."""


class Change(NamedTuple):
    key: str          # 'section.key', or 'sites.NAME'
    old: object       # the last run's value (None: there was none)
    new: object       # this run's (None: there is none now)

    def line(self):
        if self.key.startswith('sites.'):
            what = 'added' if self.old is None else 'removed' if self.new is None else \
                'changed (%s)' % ', '.join(_site_diff(self.old, self.new))
            return 'site %s %s' % (self.key[len('sites.'):], what)
        return '%s: %s -> %s' % (self.key, json.dumps(self.old), json.dumps(self.new))

    def as_dict(self):
        return {'key': self.key, 'from': self.old, 'to': self.new}


def is_crawl(fs, out):
    """Is *out* a crawl folder (made by mrcrawl)?"""
    if fs.exists(fs.join(out, layout.MARKER)):
        return True
    return fs.exists(fs.join(out, layout.SETTINGS)) and any(
        fs.exists(fs.join(out, name)) for name in (layout.CYCLES, layout.IN))


def layout_of(fs, out):
    """The layout version crawl folder *out* records in its marker (1 without one)."""
    path = fs.join(out, layout.MARKER)
    text = fs.read_text(path) if fs.exists(path) else ''
    for line in text.splitlines():
        word, _, number = line.partition(' ')
        if word == 'layout' and number.strip().isdigit():
            return int(number)
    return 1


def check_folder(out, existing=False):
    """Refuse *out* unless it is a crawl folder of this layout, missing or empty
    (*existing*: unless it is a crawl folder). Writes nothing."""
    fs = fslib.for_path(out)
    if is_crawl(fs, out):
        version = layout_of(fs, out)
        if version != layout.VERSION:
            raise FolderRefused(
                '%s is a crawl folder of layout %d, written by %s mrcrawl; this one reads '
                'layout %d only: nothing was read or written; crawl into a new folder'
                % (out, version, 'a newer' if version > layout.VERSION else 'an older',
                   layout.VERSION))
        return
    if existing:
        raise FolderRefused('%s is not a crawl folder (no %s): nothing was read or '
                            'written; name the folder a crawl wrote with --out'
                            % (out, layout.MARKER))
    try:
        names = fs.listdir(out) if fs.exists(out) else []
    except OSError:
        names = []
    names = [n for n in names if n not in layout.CONTROL_FILES]
    if names:
        raise FolderRefused(
            '%s is not empty and is not a crawl folder (%s, ...): nothing was written; '
            'name a new or empty folder with --out' % (out, ', '.join(names[:3])))


def mark(fs, out):
    """Mark *out* as a crawl folder (once; the run's first write into it)."""
    path = fs.join(out, layout.MARKER)
    if not fs.exists(path):
        fs.write_text(path, 'A crawl folder of mrcrawl: its runs write and delete here.\n'
                            'layout %d\n' % layout.VERSION)


def saved(out):
    """The settings of the crawl's last run (OUT/conf.json), or None for a new crawl."""
    fs = fslib.for_path(out)
    path = fs.join(out, layout.SETTINGS)
    if not (is_crawl(fs, out) and fs.exists(path)):
        return None
    try:
        return json.loads(fs.read_text(path))
    except ValueError as e:
        raise config.ConfigError('%s: not valid JSON: %s' % (path, e))


class Resolved(NamedTuple):
    conf: dict
    changes: list     # [Change], empty for a new crawl
    notes: list       # lines about settings that came or went with a newer mrcrawl


def for_run(out, conf_file=None, sets=(), site_dirs=()):
    """The settings of a run on *out* (see the module doc). Raises ConfigError."""
    sets = list(sets) + (['parse.sites=%s' % json.dumps(list(site_dirs))] if site_dirs
                         else [])
    last = saved(out)
    if last is None:
        return Resolved(sitelib.resolve(config.load(conf_file, sets)), [], [])
    base, notes = config.carried(last, per_run=PER_RUN)
    conf = config.load(conf_file, sets, base=base)
    named = site_dirs or any(s.split('=', 1)[0].strip() == 'parse.sites' for s in sets)
    if named or 'sites' not in last or \
            conf['parse']['sites'] != last.get('parse', {}).get('sites'):
        sitelib.resolve(conf)
    else:
        conf['sites'] = last['sites']
    return Resolved(conf, diff(last, conf), notes)


def diff(old, new):
    """[Change] from the settings *old* to *new*: one per key, and one per site."""
    a, b = config.flat(old), config.flat(new)
    changes = [Change(k, a.get(k), b.get(k)) for k in sorted(a.keys() & b.keys())
               if a[k] != b[k] and k not in PER_RUN]
    new_keys = sorted(b.keys() - a.keys())
    defaults = config.flat(config.load()) if new_keys else {}
    changes += [Change(k, None, b[k]) for k in new_keys if b[k] != defaults[k]]
    old_sites = {s['name']: s for s in old.get('sites') or ()}
    new_sites = {s['name']: s for s in new.get('sites') or ()}
    for name in sorted(old_sites.keys() | new_sites.keys()):
        o, n = old_sites.get(name), new_sites.get(name)
        if o is None or n is None or _site_diff(o, n):
            changes.append(Change('sites.' + name, o, n))
    return changes


def _site_diff(old, new):
    """The keys of a site's rules that differ (its file's path aside)."""
    keys = (old.keys() | new.keys()) - {'file'}
    return sorted(k for k in keys if old.get(k) != new.get(k))
