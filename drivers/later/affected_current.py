"""A later build's current fetches, with only the URLs the change touches shuffled
(MergeDriver).

MRCurrent (jobs/current.py) reads every fetch up to the last build (its current/, kept
as prev_current/: one fetch per URL; in a crawl's second cycle, the first cycle's
layers) and the fetches of the layers new since it. A URL whose fetches need not meet
keeps its one fetch up to the last build: MRCurrent's mapper writes that line into
current/ as it reads it (``--keys``, ``--pass-dir``), and only the other URLs' fetches
cross the shuffle. In a refresh where 1 % of the pages changed, they are 1-2 % of them.

The URLs whose fetches must meet are named by the fetch that made them (changes/L,
jobs.lib.sidefile.MetaSink), and only those small files are read here:

- of every new layer, each URL whose fetch was not a 304 over a page (MRCurrent drops
  such a 304 as it reads it: it never replaces the page its request named);
- in the second cycle, whose base is the first cycle's layers, each URL whose fetch
  there settled nothing (deferred, failed: jobs.lib.merging.definitive) or was made by
  following (jobs.lib.follow). Within a cycle only such a URL is fetched again
  (MRGenerate takes unfetched URLs only; a followed URL can be listed under another
  politeness key, or fetched in an earlier layer), so every other URL has one fetch
  there. prev_current/ has one fetch per URL as made.

Every fetch is shuffled, as before, when a layer has no changes/ (written by an
earlier version, or a separate parse job), when the pages are read from out/ (a
reparse), when the base spans several cycles, when the changes/ files to read total
over runner.task_keys_max_bytes (every map task holds their URLs), and when
prev_current/ holds over merge.current_max_files files (each build that passes lines
adds its tasks' files; shuffling all writes one per reducer again).
"""
from drivers.folder import layout
from drivers.folder.cycles import Cycles
from drivers.runtime.part_files import write_lines
from jobs.current import MRCurrent


def keys_side(c):
    return c.path(layout.CURRENT_KEYS)


def pass_side(c):
    return c.path(layout.CURRENT_PASS)


def layer_of(c, path):
    """The layer of meta/L *path*, or None for another folder."""
    folder, _, name = path.rstrip('/').rpartition('/')
    return int(name) if name.isdigit() and folder == c.path(layout.META) else None


def key_files(c, inputs, last, prev):
    """(the changes/ files naming the URLs to shuffle, None) for MRCurrent's *inputs*
    (*prev*: prev_current/ or None; then meta/L), or (None, why every fetch is
    shuffled)."""
    layers = [layer_of(c, path) for path in inputs if path != prev]
    if None in layers:
        return None, 'the pages are read from out/'
    most = c.conf['merge']['current_max_files']
    if prev is not None and len(c.fs.listdir(prev)) > most:
        return None, 'the last current/ holds over merge.current_max_files (%d) files' % most
    if prev is None:
        cycles = Cycles(c.fs, c.out).all()
        if len(cycles) < 2 or cycles[1]['first_layer'] <= last:
            return None, 'the fetches up to layer %d are of several cycles' % last
    files = []
    for layer in layers:
        folder = c.path(layout.CHANGES, '%03d' % layer)
        if not c.fs.exists(folder):
            return None, 'layer %03d has no changes/ (an earlier version)' % layer
        files += [c.fs.join(folder, n) for n in sorted(c.fs.listdir(folder))
                  if n.startswith('held-') or (layer > last and n.startswith('part-'))]
    size, most = sum(c.fs.size(f) for f in files), c.conf['runner']['task_keys_max_bytes']
    if size > most or most <= 0:
        return None, 'changes/ holds %d bytes to read, over runner.task_keys_max_bytes ' \
            '(%d)' % (size, most)
    return files, None


def run(c, inputs, args, last, prev=None):
    """MRCurrent over *inputs* into current/ (*args*: its others; *last*: the last
    build's top layer, or None; *prev*: prev_current/ when it is the first input):
    with --keys when they serve, the lines it passed moved into current/. Its step."""
    current, passed = c.path(layout.CURRENT), pass_side(c)
    if c.fs.exists(current):
        return c.report.load_step('current')
    files, why = key_files(c, inputs, last, prev) if last is not None else (None, None)
    if files is None:
        if why:
            c.progress('current: %s: every fetch shuffled' % why)
        return c.run_step('current', MRCurrent, inputs, current, args)
    urls = set()
    for path in files:
        urls.update(line.strip() for line in c.fs.iter_lines(path) if line.strip())
    write_lines(c, keys_side(c), sorted(urls))
    step = c.run_step('current', MRCurrent, inputs, current, args + [
        '--keys', c.fs.join(keys_side(c), 'part-00000')] + c.task_path_args('--pass-dir', passed),
        passed=passed)
    c.fs.rm(keys_side(c))
    return step
