"""MRGenerate (OptimizerDriver, second half): pick the next layer from the crawl database.

Reads ``db`` records (crawldb/NNN), and ``pagerank`` records (pagerank/NNN) when the
strategy is pagerank, and writes a ``url`` record (in/NNN+1) for the URLs it selects:
those unfetched (new, or deferred by an earlier layer) and within ``--max-depth``.

What comes first is ``generate.strategy``; each gives a candidate a priority:

    bfs          shallower first (1 / (1 + depth)); in-links break ties     (default)
    backlinks    the number of links seen to it
    opic         its OPIC cash: every fetched page hands its cash to its out-links in
                 equal shares (Abiteboul et al.; jobs/optimize.py keeps the accounts)
    pagerank     its PageRank over the known link graph (MRPageRank, recomputed every
                 ``generate.pagerank_every`` layers)
    major_site   the total in-links of its host's candidates: big sites first

With a topic profile, ``generate.topic_weight`` w multiplies a priority by
(1 + w x share of its in-links that come from on-topic pages).

Counters: ``generated_total`` URLs over ``generated_hosts_total`` distinct hosts (the
driver runs the fetch plan only when there are more hosts than ``fetch.threads``).

Caps, as Nutch's generator: the mapper keys candidates by host and a reducer sees all of
one host's candidates, so ``filter.max_urls_per_host`` (when not 0) keeps the host's best
ones (counter ``over_host_cap_total``); then, when ``generate.top_n`` is not 0, one
reducer keeps the best top_n of the layer (``over_top_n_total``). URLs over a cap stay
``unfetched`` in crawldb and come back in later layers; only a cap's worth of
candidates is held in memory.

Per-site limits (``max_pages``, ``quota_per_hour``, ``quota_per_day``: jobs.lib.sitelimits):
a limited site's candidates and counts are keyed by the site (``SITE_KEY`` + name), so
one reducer applies the host cap, then the site's limits; the rest stay unfetched,
counted by limit (``site_*_total``; group ``site_limits``: NAME.pages, .hour, .day, .held).

Secondary resources (crawldb records with ``resource_of``: files a site rule names on a
fetched page) are outside both caps: they are keyed apart from their host's pages
(``RESOURCE_KEY``), so they never take a page's place, and go to in/ with
``resource_of``, ``resource_name`` and ``max_bytes`` (counter
``generated_resources_total``). Their number is bounded where they are named
(``parse.max_resources_per_page``) and only fetched pages name any.

``--resources-only`` (the layer after a cycle's last, when sites name resources):
only the secondary resources, so that those the last layer's pages name are fetched in
the same cycle; an unfetched page within the depth (deferred, held back) waits for
the next cycle (counter ``pages_for_next_cycle_total``).

Cycle mode (``--recrawl-at TIME``: the first layer of a crawl's later cycles): besides
the unfetched URLs, select the known ones whose last fetch + ``fetch_interval`` is not
after TIME (all when ``recrawl.interval`` is 0), and a fetched page whose
``sitemap_lastmod`` is after its last fetch and not after TIME (a sitemap says it
changed; ``due_sitemap_lastmod_total``), with what a conditional request needs (``etag``,
``last_modified``) and what the page was (``prev``: digest, fields checksum). A URL whose
last fetch failed transiently is tried again at every cycle. A known URL that the link
filters or its site's link rules of this run reject (the settings changed) is not
fetched: a page goes to in/ with ``excluded`` (the reason), so that its fetch records it
filtered, kept unless the run prunes (jobs.lib.merging.mark_kept; ``now_excluded_total``).

``--inject``: some inputs are seed ``url`` records (a cycle's seeds file, if no layer had
it before); a first step joins them with the database on the URL, so a seed already known
is not fetched again (unless due) and a new one becomes an unfetched URL at depth 0.

Run alone::

    python -m jobs.generate --crawl-conf crawl/conf.json --max-depth 3 crawl/crawldb/000 -o /tmp/in
"""
from datetime import datetime, timezone

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, plan, records as R, urls
from jobs.lib.ranking import keep_best, priority
from jobs.lib.sitelimits import HELD, SITE_KEY, Allowance, Limits, parse_time, static_bound

#: Shuffle key of resource candidates (a space: never part of a host name).
RESOURCE_KEY = ' resources'
_RESOURCE_FIELDS = ('resource_of', 'resource_name', 'max_bytes')

# A candidate travels as [depth, url, inlinks, topic_inlinks, score, pagerank, extra]:
# extra is a dict merged into the url record (re-crawl validators), or None.


class MRGenerate(CrawlJob):
    COUNTER_GROUP = C.GENERATE

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--max-depth', type=int, default=3,
                              help='Deepest layer to generate (link hops from a seed). '
                                   'Default: %(default)s')
        self.add_passthru_arg('--recrawl-at', metavar='TIME', default=None,
                              help='Cycle mode: also select known URLs due at TIME '
                                   '(ISO-8601 UTC). Default: off.')
        self.add_passthru_arg('--inject', action='store_true',
                              help='Some inputs are seed url records: join them first.')
        self.add_passthru_arg('--now', metavar='TIME', default=None,
                              help='The layer\'s time (ISO-8601 UTC), which per-site quotas '
                              'count back from, the same in every task. Default: '
                              '--recrawl-at, else the task\'s clock.')
        self.add_passthru_arg('--resources-only', action='store_true',
                              help='Select secondary resources only: the layer after a '
                              'cycle\'s last, which fetches what its pages name.')
        self.add_passthru_arg('--plan-dir', default=None,
                              help='Write each task\'s cost per politeness key of the URLs '
                              'it selects there, as one file (the driver places the next '
                              'fetch plan from them: jobs.lib.plan). Default: off.')
        self.add_webhdfs_args('--plan-dir')

    def steps(self):
        # The step that writes the url records sums their costs (--plan-dir).
        top_n = self.conf['generate']['top_n']
        sums = {'reducer_init': self.reducer_init_plan,
                'reducer_final': self.reducer_final_plan} if self.options.plan_dir else {}
        # Keyed by host (a limited site's pages by its site) and by URL: the frontier
        # spreads over as many reducers as the driver gives (--reducers).
        select = MRStep(mapper=self.mapper_select_rec if self.options.inject
                        else self.mapper_select, mapper_final=self.mapper_final_use,
                        reducer=self.reducer_cap_host, jobconf=self.wide_reduce(),
                        **({} if top_n else sums))
        steps = [MRStep(mapper=self.mapper_by_url, reducer=self.reducer_inject,
                        jobconf=self.wide_reduce()), select] \
            if self.options.inject else [select]
        if top_n:
            steps.append(MRStep(reducer=self.reducer_top_n,
                                jobconf={'mapreduce.job.reduces': 1}, **sums))
        return steps

    plan_sums = None

    def reducer_init_plan(self):
        self.plan_sums = plan.Sums(self.conf, normalized=True)

    def reducer_final_plan(self):
        """This task's cost per politeness key of the URLs it selected, into --plan-dir."""
        sink = self.side_sink(self.options.plan_dir)
        for row in self.plan_sums.rows():
            sink.add(row)
        sink.commit()
        return ()

    def mapper_select(self, _, line):
        """db or pagerank line -> (host, candidate or [pagerank marker])."""
        for db in self.records(line, 'db', 'pagerank'):
            yield from self.select(db)

    def mapper_select_rec(self, _, db):
        yield from self.select(db)

    def mapper_by_url(self, _, line):
        """db, seed url or pagerank line -> (url, record), for the seeds' join."""
        for rec in self.records(line, 'db', 'url', 'pagerank'):
            yield rec['url'], rec

    def reducer_inject(self, url, recs):
        """(url, its db record and seed records) -> the db record, or a new unfetched
        one at depth 0 for a seed the database does not know."""
        db = seed = None
        for rec in recs:
            if rec['kind'] == 'url':
                seed = rec
            elif rec['kind'] == 'db':
                db = rec
            else:
                yield None, rec          # pagerank: passes on
        if db is None and seed is not None:
            self.count(C.INJECTED_NEW)
            db = {'kind': 'db', 'url': url, 'status': R.DB_UNFETCHED, 'depth': 0,
                  'inlinks': 0, 'score': 1.0}
        elif seed is not None:
            self.count(C.INJECTED_KNOWN)
        if db is not None:
            yield None, db

    @property
    def limits(self):
        """The sites with limits (jobs.lib.sitelimits), as of the layer's time."""
        if not hasattr(self, '_limits'):
            at = self.options.recrawl_at or self.options.now
            self._limits = Limits.for_conf(self.conf, parse_time(at) if at
                                           else datetime.now(timezone.utc))
            self._use = {}
        return self._limits

    def shuffle_key(self, url, site=None):
        """Where a page's candidate goes: its limited *site*'s key, else its host."""
        return urls.host(url) if site is None else SITE_KEY + site

    def mapper_final_use(self):
        """Each limited site's counts from this task's records (see :meth:`select`)."""
        for site, used in getattr(self, '_use', {}).items():
            yield SITE_KEY + site, ['use', used]

    def select(self, db):
        """A db (or pagerank) record -> (host, candidate or [pagerank marker]): an
        unfetched URL within the depth, or in cycle mode a known one that is due. A page
        of a limited site goes to its site's key instead, and adds to its counts."""
        if db['kind'] == 'pagerank':
            site = self.limits.site(db['url']) if self.limits else None
            yield self.shuffle_key(db['url'], site), ['pr', db['url'], db['pagerank']]
            return
        site = self.limits.site(db['url']) if self.limits and not db.get('resource_of') else None
        if site:
            use = self.limits.usage(db)
            if use:
                total = self._use.setdefault(site, [0, 0, 0])
                for i in range(3):
                    total[i] += use[i]
        excluded = self.now_excluded(db) if self.options.recrawl_at else None
        if db['status'] != R.DB_UNFETCHED:
            if excluded and db['status'] in (R.DB_FETCHED, R.DB_REDIRECTED):
                # A page the settings now exclude: its fetch says so without a request
                # (jobs/fetch.py), and with recrawl.prune the cycle's delta deletes it;
                # without, the page is kept (jobs.lib.merging.mark_kept: its prev).
                self.count(C.NOW_EXCLUDED)
                yield urls.host(db['url']), [db['depth'], db['url'], 0, 0, 0.0, None,
                                             {'excluded': excluded, 'prev': _prev(db)}]
            elif self.options.recrawl_at and not excluded:
                yield from self.due(db, site)
            return
        if excluded:
            self.count(C.NOW_EXCLUDED)
            return
        if db['depth'] > self.options.max_depth:
            self.count(C.BEYOND_DEPTH)
            return
        extra = _resource_extra(db)
        if extra is None and self.options.resources_only:
            self.count(C.PAGES_FOR_NEXT_CYCLE)
            return
        yield (self.shuffle_key(db['url'], site) if extra is None else RESOURCE_KEY), [
            db['depth'], db['url'], db.get('inlinks') or 0,
            db.get('topic_inlinks') or 0, db.get('score') or 0.0, None, extra]

    def now_excluded(self, db):
        """Cycle mode: the reason the link filters or its site's link rules of this run
        reject a known URL (the settings changed since it was found), or None. Seeds
        and a page's resources never went through them, so they are not held to them."""
        if db['depth'] == 0 or db.get('resource_of') is not None:
            return None
        if not hasattr(self, '_link_filter'):
            # lazy: the filters bring the fetcher's modules (requests), which only a
            # cycle after the first reads here
            from jobs.lib.filters import LinkFilter
            from jobs.lib.sites import SiteIndex
            self._link_filter = LinkFilter.for_conf(self.conf)
            self._sites = SiteIndex(self.conf.get('sites'))
        reason = self._link_filter.reason(db['url'])
        site = None if reason else self._sites.match(db['url'])
        reason = 'site_rule' if site and not site.link_allowed(db['url']) else reason
        return 'filter_' + reason if reason else None

    #: Known statuses a cycle fetches again once their interval passed (a transient
    #: failure: at once; gone or denied: after recrawl.max_interval); filtered URLs
    #: stay out.
    DUE_STATUSES = (R.DB_FETCHED, R.DB_REDIRECTED, R.DB_GONE, R.DB_DENIED, R.DB_FAILED)

    def due(self, db, site=None):
        """A known db record -> (host or *site*'s key, candidate) if it is due again."""
        if db['status'] not in self.DUE_STATUSES or db['depth'] > self.options.max_depth:
            return
        if db.get('reason') == 'redirect_target':
            return     # known only as a redirect's end: its source is re-fetched
        rc = self.conf['recrawl']
        if rc['interval'] > 0 and db['status'] != R.DB_FAILED and db.get('last_fetch'):
            if db['status'] in (R.DB_GONE, R.DB_DENIED):
                # As Nutch's setPageGoneSchedule: a gone page is asked again rarely.
                interval = rc['max_interval']
            else:
                interval = db.get('fetch_interval') or rc['interval']
            if not hasattr(self, '_due_at'):      # parsed once per task, not per URL
                self._due_at = parse_time(self.options.recrawl_at)
            age = (self._due_at - parse_time(db['last_fetch'])).total_seconds()
            if age < interval:
                if not self.changed_since(db):
                    self.count(C.RECRAWL_NOT_DUE)
                    return
                self.count(C.DUE_SITEMAP_LASTMOD)
        self.count(C.RECRAWL_DUE)
        extra = {'prev': _prev(db)}
        if db['status'] in (R.DB_FETCHED, R.DB_REDIRECTED):
            for key in ('etag', 'last_modified'):
                if db.get(key):
                    extra[key] = db[key]
        resource = _resource_extra(db)
        if resource is not None:
            extra.update(resource)
        yield (self.shuffle_key(db['url'], site) if resource is None else RESOURCE_KEY), [
            db['depth'], db['url'], db.get('inlinks') or 0,
            db.get('topic_inlinks') or 0, db.get('score') or 0.0, None, extra]

    def changed_since(self, db):
        """Does a sitemap date the fetched page *db* after its last fetch (and not after
        the cycle's time: a future lastmod would make it due in every cycle till then)?"""
        lastmod = db.get('sitemap_lastmod')
        return bool(lastmod) and db['status'] in (R.DB_FETCHED, R.DB_REDIRECTED) and \
            parse_time(db['last_fetch']) < parse_time(lastmod) <= self._due_at

    def reducer_cap_host(self, host, values):
        """(host, candidates) -> its best candidates under filter.max_urls_per_host.

        Without top_n they are written as url records; with it they go on, keyed by
        nothing, to the single top-N reducer.
        """
        gen = self.conf['generate']
        if host == RESOURCE_KEY:
            # Resources: outside the caps (see the module doc), written as they come.
            # Their hosts count when they are the whole layer (the driver's fetch plan).
            hosts = set()
            for cand in values:
                self.count(C.GENERATED_RESOURCES)
                if self.options.resources_only:
                    hosts.add(urls.host(cand[1]))
                if gen['top_n']:
                    yield RESOURCE_KEY, cand
                else:
                    yield None, self._url_record(cand)
            self.count(C.GENERATED_HOSTS, len(hosts))
            return
        if host.startswith(SITE_KEY):
            yield from self.reducer_site(host[len(SITE_KEY):], values)
            return
        strategy = gen['strategy']
        cands, ranks = [], {}
        if strategy in ('pagerank', 'major_site'):
            # These need a look at the whole host first: its PageRank records, its size.
            for v in values:
                if v[0] == 'pr':
                    ranks[v[1]] = v[2]
                else:
                    cands.append(v)
            for c in cands:
                c[5] = ranks.get(c[1])
        else:
            cands = (v for v in values if v[0] != 'pr')
        host_weight = sum(c[2] for c in cands) if strategy == 'major_site' else 0.0
        keyed = ((priority(c, strategy, gen['topic_weight'], host_weight), c) for c in cands)
        cap = self.conf['filter']['max_urls_per_host']
        if cap:
            n, keyed = keep_best(keyed, cap)
            self.count(C.OVER_HOST_CAP, n - len(keyed))
        any_url = False
        for key, cand in keyed:
            any_url = True
            if gen['top_n']:
                yield None, [key, cand]
            else:
                yield None, self._url_record(cand, key)
        if any_url and not gen['top_n']:
            self.count(C.GENERATED_HOSTS)

    def reducer_site(self, name, values):
        """(a limited site, its candidates, PageRank markers and counts) -> the best
        candidates of each host under the host cap, then the site's best of those its
        limits allow. Held in memory: per host, at most what the cap or the limits
        could take (all of a host's candidates for pagerank and major_site, which need
        the whole host, as :meth:`reducer_cap_host` does); due pages that no limit
        bounds and no cap holds stream through."""
        gen, spec = self.conf['generate'], self.limits.specs[name]
        strategy, cap = gen['strategy'], self.conf['filter']['max_urls_per_host']
        whole = strategy in ('pagerank', 'major_site')
        bounds = {new: static_bound(spec, new) for new in (True, False)}
        stream_due = not cap and bounds[False][0] is None and not whole
        # held: limit -> candidates it held back; pruned: new? -> those past a bound
        used, ranks, hosts, held, pruned = [0, 0, 0], {}, {}, {}, {True: 0, False: 0}
        streamed, taken_hosts = 0, set()
        for v in values:
            if v[0] == 'use':
                used = [a + b for a, b in zip(used, v[1])]
            elif v[0] == 'pr':
                ranks[v[1]] = v[2]
            elif stream_due and not _is_new(v):
                # Nothing limits or caps it (a due page takes no max_pages): as it comes.
                streamed += 1
                taken_hosts.add(urls.host(v[1]))
                key = priority(v, strategy, gen['topic_weight'])
                yield (None, [key, v]) if gen['top_n'] else (None, self._url_record(v, key))
            else:
                host = hosts.setdefault(urls.host(v[1]), [0, {True: [], False: []}])
                host[0] += 1
                host[1][_is_new(v)].append(v)
                if not whole:     # prune as they come: keep what could be taken
                    self._prune(host[1], bounds, cap, strategy, 0.0, pruned)
        allowance, survivors = Allowance(spec, used), []
        allowance.used['hour'] += streamed
        allowance.used['day'] += streamed
        for seen, by_new in hosts.values():
            for c in by_new[True] + by_new[False]:
                if whole and c[5] is None:
                    c[5] = ranks.get(c[1])
            weight = sum(c[2] for c in by_new[True] + by_new[False]) \
                if strategy == 'major_site' else 0.0
            kept = self._prune(by_new, bounds, cap, strategy, weight, pruned, True)
            # Host cap first: of what this host lost, what the cap would have cut is
            # the cap's; the rest is the site limits'.
            over_cap = max(0, seen - cap) if cap else 0
            self.count(C.OVER_HOST_CAP, over_cap)
            for new in (True, False):
                moved = min(over_cap, pruned[new])
                pruned[new] -= moved
                over_cap -= moved
            survivors += kept
        for key, new, cand in sorted(survivors, key=lambda kc: kc[0]):
            reason = allowance.take(new)
            if reason:
                held[reason] = held.get(reason, 0) + 1
                continue
            taken_hosts.add(urls.host(cand[1]))
            yield (None, [key, cand]) if gen['top_n'] else (None, self._url_record(cand, key))
        if not gen['top_n']:
            self.count(C.GENERATED_HOSTS, len(taken_hosts))
        self._count_site(name, allowance, held, pruned, bounds)

    def _count_site(self, name, allowance, held, pruned, bounds):
        """A limited site's counters: what each limit held back, and its counts."""
        for new, n in pruned.items():
            # Past what the limits could ever allow a layer: held by the one that ran
            # out (else by the one that set the bound).
            if n:
                reason = allowance.exhausted(new) or bounds[new][1]
                held[reason] = held.get(reason, 0) + n
        for reason, n in held.items():
            self.count(HELD[reason], n)
        for what in ('pages', 'hour', 'day'):
            self.count('%s.%s' % (name, what), allowance.used[what], C.SITE_LIMITS)
        self.count(name + '.held', sum(held.values()), C.SITE_LIMITS)

    def _prune(self, by_new, bounds, cap, strategy, weight, pruned, final=False):
        """Trim one host's candidates of a limited site, *by_new* ({True: new ones,
        False: due ones}), to what the host cap and the site's bounds could take; every
        drop is added to *pruned* (new? -> count; the caller gives the host cap its
        share). *final*: return the survivors as (priority, new, candidate), within the
        cap."""
        tw = self.conf['generate']['topic_weight']
        out = []
        for new in (True, False):
            cands = by_new[new]
            bound = bounds[new][0]
            keep = min(b for b in (cap or None, bound) if b is not None) \
                if (cap or bound is not None) else None
            if not final and (keep is None or len(cands) <= 2 * keep + 64):
                continue          # amortised: trim when twice the bound is reached
            keyed = sorted(((priority(c, strategy, tw, weight), c) for c in cands),
                           key=lambda kc: kc[0])
            if keep is not None and len(keyed) > keep:
                pruned[new] += len(keyed) - keep
                keyed = keyed[:keep]
            by_new[new] = [c for _, c in keyed]
            out += [(k, new, c) for k, c in keyed]
        if final and cap and len(out) > cap:
            out.sort(key=lambda kc: kc[0])
            for _, new, _ in out[cap:]:
                pruned[new] += 1
            out = out[:cap]
        return out

    def reducer_top_n(self, key, keyed):
        """All hosts' candidates -> the layer's best generate.top_n (resources pass)."""
        if key == RESOURCE_KEY:
            for cand in keyed:
                yield None, self._url_record(cand)
            return
        n, best = keep_best(((tuple(k), c) for k, c in keyed), self.conf['generate']['top_n'])
        self.count(C.OVER_TOP_N, n - len(best))
        self.count(C.GENERATED_HOSTS, len({urls.host(c[1]) for _, c in best}))
        for key, cand in best:
            yield None, self._url_record(cand, key)

    def _url_record(self, cand, key=None):
        """The url record of a candidate; *key*: its :func:`priority` (none for a
        resource), whose value orders its host's URLs in the fetch. bfs gives every URL
        of a layer the same value, so there its in-link count (bfs's tie-break) does."""
        self.count(C.GENERATED)
        rec = {'kind': 'url', 'url': cand[1], 'depth': cand[0], 'score': cand[4]}
        if key is not None:
            rec['priority'] = float(cand[2]) if self.conf['generate']['strategy'] == 'bfs' \
                else -key[0]
        if cand[6]:
            rec.update(cand[6])
        if self.plan_sums is not None:
            self.plan_sums.add(rec)
        return rec


def _is_new(cand):
    """Would fetching candidate *cand* ask the site for a page it was never asked for
    (what max_pages counts)? Not a due page whose last fetch was a request."""
    prev = cand[6] and cand[6].get('prev')
    return not (prev and prev.get('status') in R.DB_REQUESTED)


def _prev(db):
    """What a known URL's in/ record says of its last fetch (``prev``)."""
    return {'digest': db.get('digest'), 'fields_checksum': db.get('fields_checksum'),
            'status': db['status'], 'last_fetch': db.get('last_fetch')}


def _resource_extra(db):
    """The resource fields of a db record for its url record, or None for a page."""
    if db.get('resource_of') is None:
        return None
    return {k: db.get(k) for k in _RESOURCE_FIELDS}


if __name__ == '__main__':
    MRGenerate.run()
