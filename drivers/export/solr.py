"""``mrcrawl index OUT --solr URL``: the crawl's pages into a Solr core or collection.

OUT/outputs.json names the build the outputs describe: its base (merged/) and the deltas
to apply over it, in order (delta/D/records: added and changed pages, deletions). OUT/
solr.json records, for each Solr (its URL without user and password), the base and the
deltas it holds:

- the same base: the deltas it does not hold yet, in order;
- another base (the first run, a compaction, a reparse), or deltas that are not the
  start of the crawl's: the base and every delta again, then a delete of the crawl's
  documents that none of them wrote (a page the new base no longer has).

Each build is one job (jobs/solr_index.py: its tasks post batches, with retries and a
bounded rate) and a commit, and is recorded only then: a run killed half-way posts
the build it was in again (an add overwrites by id, a delete by id is idempotent), so a
rerun gives the same index. Every document carries its ``crawl`` (OUT), when that
crawl started (``crawl_started``: a folder crawled anew is another crawl) and its
``build``.
"""
import json
import os
import tempfile
import time
import urllib.parse

from drivers.folder import layout
from drivers.folder.cycles import Cycles
from drivers.runtime import fs as fslib, launch
from drivers.runtime.steps import CrawlError, StepRunner
from jobs.lib import counters as C, secretref, solr
from jobs.solr_index import MRSolrIndex


class SolrIndexer(StepRunner):
    def __init__(self, out, conf, url, runner='local', progress=print):
        self.out = out.rstrip('/') if '://' in out else os.path.abspath(out)
        self.conf, self.url, self.runner, self.progress = conf, url, runner, progress
        self.fs = fslib.for_path(self.out)
        self.key = solr.safe_url(secretref.masked(url)[0])
        self.user_args = []
        self.runner_args = launch.runner_args(runner, conf)
        self._conf_file = None
        self.started = None       # when the crawl's first cycle started

    def path(self, *parts):
        return self.fs.join(self.out, *parts)

    def on_step(self, name):
        """(steps.py's hook: an index run has no status.json)"""

    def run(self):
        """Bring the Solr up to the crawl's outputs, holding the crawl's lock (a crawl
        running meanwhile would replace the outputs under the job): {'builds': [names
        posted], 'documents': the crawl's documents in Solr now, 'counters': {...}}."""
        with Cycles(self.fs, self.out).held(self.progress) as cycles:
            return self._run(cycles)

    def _run(self, cycles):
        outputs = self._read(layout.OUTPUTS)
        self.started = (cycles.all() or [{}])[0].get('at')
        if not outputs or not outputs.get('base'):
            raise CrawlError('%s holds no finished build to index (run the crawl first)'
                             % self.out)
        poster = solr.Poster(self.url, self.conf['solr'], lambda name, n: None,
                             self.progress)
        state = self._read(layout.SOLR) or {}
        held = state.get(self.key) or {}
        base, deltas = outputs['base'], list(outputs.get('deltas') or ())
        had = held.get('deltas') or []
        full = held.get('base') != base or deltas[:len(had)] != had
        todo = ([base] if full else []) + deltas[0 if full else len(had):]
        if full:
            held = {'base': None, 'deltas': [], 'clean': True}
        fd, self._conf_file = tempfile.mkstemp(prefix='mrcrawl-conf-', suffix='.json')
        with os.fdopen(fd, 'w') as f:
            json.dump(self.conf, f)
        counters = {}
        try:
            for name in todo:
                is_base = held['base'] is None       # a full run's first build
                folder = self.path(layout.MERGED) if is_base else \
                    self.path(layout.delta_part(name, layout.DELTA_RECORDS))
                self._post(name, folder, poster, counters)
                if is_base:
                    held['base'] = name
                else:
                    held['deltas'] = held['deltas'] + [name]
                self._record(state, held)
            if held.get('clean'):      # what the base and the deltas no longer hold
                poster.delete_query(self._stale([base] + deltas))
                poster.commit()
                del held['clean']
                self._record(state, held)
            found = poster.found('crawl:' + solr.quoted(self.out))
        except solr.SolrRefused as e:
            raise CrawlError(str(e))
        finally:
            os.unlink(self._conf_file)
        self.progress('solr %s: %d document(s) of this crawl, build %s%s' % (
            self.key, found, base, ' + %d delta(s)' % len(deltas) if deltas else ''))
        return {'builds': todo, 'documents': found, 'counters': counters}

    def _stale(self, builds):
        """The query for the crawl's documents that none of *builds* of this crawl
        wrote: of a build since replaced, or of an earlier crawl in the same folder."""
        ours = 'build:(%s)' % ' OR '.join(solr.quoted(b) for b in builds)
        if self.started:
            ours = '(crawl_started:%s AND %s)' % (solr.quoted(self.started), ours)
        return 'crawl:%s AND NOT %s' % (solr.quoted(self.out), ours)

    def _post(self, name, folder, poster, counters):
        """Post build *name* (its records in *folder*), then commit."""
        start = time.monotonic()
        if self.fs.exists(folder):
            tmp = self.path(layout.tmp('solr'))
            self.fs.rm(tmp)
            args = ['--solr', self.url, '--build', name, '--crawl', self.out] + (
                ['--crawl-started', self.started] if self.started else [])
            runner = self.runner_for(MRSolrIndex, [folder], args)
            got = C.merge_steps(self.run_job(MRSolrIndex, self.job_args(
                runner, tmp, args, [folder]))).get(MRSolrIndex.COUNTER_GROUP, {})
            self.fs.rm(tmp)
        else:
            got = {}     # a delta of no page (nothing changed)
        poster.commit()
        for k, v in got.items():
            counters[k] = counters.get(k, 0) + v
        self.progress('  %-12s %7d added %6d deleted %4d refused %6.1fs' % (
            name, got.get(C.SOLR_ADDED, 0), got.get(C.SOLR_DELETED, 0),
            got.get(C.SOLR_REFUSED, 0), time.monotonic() - start))

    def _read(self, name):
        path = self.path(name)
        return json.loads(self.fs.read_text(path)) if self.fs.exists(path) else None

    def _record(self, state, held):
        state[self.key] = dict(held, updated=time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                                           time.gmtime()))
        self.fs.write_text(self.path(layout.SOLR), json.dumps(state, indent=1,
                                                               sort_keys=True))


def check_url(url):
    """None, or one line saying what is wrong with the --solr *url*."""
    text, _ = secretref.masked(url)
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        return '--solr %s: not an http(s) URL of a Solr core or collection' % \
            solr.safe_url(text)
    if parts.password and not secretref.is_reference(url.split('@')[0].rsplit(':', 1)[1]):
        return ('--solr: a password is given as ${NAME} (an environment variable) or '
                '${file:/path}, never in the URL itself')
    try:
        secretref.check(url, '--solr')
    except secretref.SecretError as e:
        return str(e)
    return None
