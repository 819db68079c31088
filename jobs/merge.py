"""MRMerge (MergeDriver), job 1 of 3: which pages fold into which, on slim summaries.

Reads ``page`` records of every layer (out/*; they carry doc/'s fetch metadata and the
parse results, without the raw body), or the same records without their text (meta/*,
jobs.lib.sidefile: all this job reads of a page when its SimHash is current). Writes
``merge_map`` records (merge_map/): one per distinct HTML page (a *leader*), naming the
URLs folded into it, with its SimHash and secondary resources. MRAnchors
(jobs/anchors.py) then gathers the in-link anchors of each group, and MRMergeJoin
(jobs/merge_join.py) joins both with out/* into ``merged`` records (merged/).

**Why apart from the join.** A page record is tens of KB (text, main text, links); the decisions
below need a few hundred bytes of it. This job's mapper reads each page once and emits
a *summary* (url, final URL, digest, SimHash, relevance, fetch time, layer: what the
folding and the order need); every later shuffle here carries summaries and resource
outcomes only. The join shuffles each page record once, keyed by URL, and
drops every fetch but a leader's latest. mrjob keeps a job's intermediate files until
the job ends (the local runner, on disk), so the heavy records cross one shuffle in
all: a merge that carried whole pages through every step filled the disk of a soak
crawl (bench/merge_disk.py and bench/README.md for the figures).

Pages fold into one canonical page four ways, in this order of steps:

1. **final URL** (redirects): pages are keyed by their URL after redirects; a URL
   fetched more than once keeps its latest fetch (jobs.lib.merging.latest_key) and the
   URLs that redirected to it become its duplicates. ``rel=canonical``: a page whose
   canonical link names another URL sends a claim there; the claim is remembered if
   that URL is a fetched page.
2. **exact digest**: pages with the same content digest are one page.
3. **near duplicates** (``merge.near_duplicates``): each page's 64-bit SimHash over the
   word shingles of its main text (``main_text``, else ``text``; computed in the first
   mapper, the only place that sees the text) is cut into
   ``merge.max_hamming_distance + 1`` bands; ``(band, bits)`` keys the shuffle, so pages
   within that Hamming distance meet in at least one bucket (jobs.lib.simhash). Every
   pair that meets is verified on the whole fingerprint; no all-pairs comparison is
   made, and a bucket is cut at ``merge.max_bucket_pages`` pages.
4. **groups**: a page is a group's canonical page (a *leader*) when no near duplicate
   ranks before it and it names no fetched page as its rel=canonical. Every other page
   folds into its rel=canonical target if that is a leader, else into the best-ranked
   leader among its near duplicates. A page none of whose better near duplicates is a
   leader (a chain a~b~c where b is folded into a but c is not near a) stays a page of
   its own, counted ``near_chain_unfolded_total``: groups are stars, never chains.

**Order** (the first page is the canonical one), Nutch's dedup ``-compareOrder``:
higher topic relevance (the page score; 0 without a topic profile), then https before
http, then the shorter URL, then the earliest fetch, then the URL's text order.

Secondary resources (page records with ``resource_of``: a
video or image a site rule named on a page, fetched in the next layer) are keyed by
their parent's URL after redirects and travel with it, so a parent folded into a leader
hands them on; they are never pages themselves. They ride along here rather than in
the join because a folded URL's share must reach its leader, which only this job
knows (they are few: the anchors, many, take a job of their own). Pages marked
noindex (meta robots or X-Robots-Tag) are left out.
A file several pages name is fetched once (under one ``resource_of``) but listed on
every page that names it: the first step keys resource fetches and the pages' named
resources by the resource's URL and routes each fetch to all its namers.
Seven steps: each after the first is a shuffle of one summary per page (steps 4-6 also
of the band keys and of small notices), never of a set held in memory.

Run alone::

    python -m jobs.merge --crawl-conf crawl/conf.json crawl/out/000 crawl/out/001 \\
        -o /tmp/merge_map
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import affected, counters as C, merging as M, simhash
from jobs.lib.merging import canonical_order


def summary(page):
    """What the band buckets and notices carry of a page: enough to rank it."""
    return {'url': page['url'], 'fetch_time': page.get('fetch_time'),
            'relevance': page.get('relevance'), 'simhash': page.get('simhash')}


class MRMerge(CrawlJob):
    COUNTER_GROUP = C.MERGE

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--keys-dir', default=None,
                              help='Also write the key row (jobs.lib.affected) of every '
                              'page read into this folder, one file per map task: what '
                              'a later build\'s merge of its affected set reads. '
                              'Default: off.')
        self.add_webhdfs_args('--keys-dir')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_keys, mapper=self.mapper_by_final_url,
                       mapper_final=self.mapper_final_keys,
                       reducer=self.reducer_route_resources, jobconf=self.wide_reduce()),
                # Each a shuffle of one summary per page, keyed (final URL, digest,
                # band, leader...): as many reducers as the first.
                MRStep(reducer=self.reducer_latest, jobconf=self.wide_reduce()),
                MRStep(reducer=self.reducer_fold_exact, jobconf=self.wide_reduce()),
                MRStep(mapper=self.mapper_bands, reducer=self.reducer_candidates,
                       jobconf=self.wide_reduce()),
                MRStep(reducer=self.reducer_leaders, jobconf=self.wide_reduce()),
                MRStep(reducer=self.reducer_choose_group, jobconf=self.wide_reduce()),
                MRStep(reducer=self.reducer_collect, jobconf=self.wide_reduce())]

    @property
    def settings(self):
        return self.conf['merge']

    # -- step 1: one summary per final URL ----------------------------------------------

    def mapper_init_keys(self):
        self.keys = self.options.keys_dir and self.side_sink(self.options.keys_dir)

    def mapper_final_keys(self):
        if self.keys:
            self.keys.commit()
        return ()

    def mapper_by_final_url(self, _, line):
        """page line -> (final url, summary) and (its rel=canonical, claim); resource
        line -> (parent url, outcome)."""
        for rec in self.records(line, 'page'):
            what = M.classify(rec)
            if what == M.RESOURCE:
                if self.keys:
                    self.keys.add(affected.row(rec, None, None))
                yield rec['url'], {'fetched_resource': M.resource_entry(rec),
                                   'resource_of': rec['resource_of']}
                continue
            if what == M.NOT_FETCHED:
                self.count(C.NOT_A_PAGE)
                continue
            if what == M.NOINDEX:
                self.count(C.SKIPPED_NOINDEX)
                continue
            final = M.final_url(rec)
            fp = self.fingerprint(rec)
            if self.keys:
                self.keys.add(affected.row(rec, fp, self.settings['max_hamming_distance']))
            for named in rec.get('resources') or ():
                if named.get('url'):
                    yield named['url'], {'named_by': final, 'name': named.get('name')}
            yield final, {'page': {
                'url': rec['url'], 'fetch_time': rec.get('fetch_time'),
                'layer': rec.get('layer'), 'relevance': rec.get('relevance'),
                'digest': rec['digest'], 'simhash': fp}}
            canonical = rec.get('canonical')
            if canonical and canonical != final:
                yield canonical, {'claim': final}

    def reducer_route_resources(self, url, values):
        """A resource's URL: its latest fetch goes to every page that names it (a file
        two pages name is fetched once, under one parent: resource_of) and to its
        resource_of parent; every other value passes on unchanged."""
        fetches, named_by = [], {}
        for v in values:
            if 'fetched_resource' in v:
                fetches.append(v)
            elif 'named_by' in v:
                named_by.setdefault(v['named_by'], v.get('name'))
            else:
                yield url, v
        if not fetches:
            return     # named, never fetched: the join lists it as not_fetched
        latest = max(fetches, key=lambda f: f['fetched_resource'].get('fetch_time') or '')
        entry = latest['fetched_resource']
        named_by.setdefault(latest['resource_of'], entry.get('name'))
        if len(named_by) > 1:
            self.count(C.RESOURCES_SHARED, len(named_by) - 1)
        for parent, name in sorted(named_by.items()):
            yield parent, {'resource': dict(entry, name=name if name is not None
                                            else entry.get('name'))}

    def reducer_latest(self, final_url, values):
        """(final url, its fetches' summaries, claims, resources) ->
        (digest, summary of the latest fetch)."""
        pages, claims, resources = [], set(), []
        for v in values:
            if 'page' in v:
                pages.append(v['page'])
            elif 'claim' in v:
                claims.add(v['claim'])
            else:
                resources.append(v['resource'])
        if not pages:
            self.count(C.CANONICAL_NOT_FETCHED, len(claims))
            self.count(C.RESOURCES_PARENT_NOT_A_PAGE, len(resources))
            return
        latest = max(pages, key=M.latest_key)
        aliases = {p['url'] for p in pages} - {final_url}
        if self.settings['near_duplicates'] and latest['simhash'] is None:
            self.count(C.NEAR_SKIPPED_SHORT)
        yield latest['digest'], {
            'url': final_url, 'fetch': M.latest_key(latest),
            'fetch_time': latest.get('fetch_time'),
            'relevance': latest.get('relevance'), 'simhash': latest['simhash'],
            'duplicates': sorted(aliases), 'near_duplicates': [],
            'canonical_duplicates': [], 'canonical_claims': sorted(claims - {final_url}),
'resources': resources}

    def fingerprint(self, page):
        """Hex SimHash of the page's main text, or None when it is not compared
        (near duplicates off, or fewer than merge.min_words words): the page's own
        ``fingerprint`` (PageParser) when it was made with merge.shingle_words and this
        hash version, else hashed here (page records written before it, another
        shingle width, an older hash; jobs.lib.affected.compared_simhash)."""
        fp, event = affected.compared_simhash(page, self.settings)
        if event == affected.TEXT_ELSEWHERE:
            # A meta/ record (jobs.lib.sidefile): the text to hash is in out/.
            self.count(C.NEAR_TEXT_IN_OUT)
        elif event == affected.HASHED:
            self.count(C.NEAR_HASHED_IN_MERGE)
        return fp

    # -- step 2: exact duplicates -------------------------------------------------------

    def reducer_fold_exact(self, digest, pages):
        """(digest, summaries) -> (url, one summary naming the others as duplicates)."""
        pages = sorted(pages, key=canonical_order)
        best = pages[0]
        for other in pages[1:]:
            self.fold(best, other)
        self.count(C.EXACT_DUPLICATES, len(pages) - 1)
        folded = {best['url']} | set(best['duplicates'])
        best['canonical_claims'] = [c for c in best['canonical_claims'] if c not in folded]
        yield best['url'], best

    @staticmethod
    def fold(best, other, kind=None):
        """Add *other* (a page or a folded group's summary) to *best*'s duplicates."""
        dups = set(best['duplicates']) | {other['url']} | set(other.get('duplicates') or ())
        dups.discard(best['url'])
        best['duplicates'] = sorted(dups)
        for field in ('near_duplicates', 'canonical_duplicates'):
            best[field] = sorted(set(best[field]) | set(other.get(field) or ()))
        if kind is not None:
            field = kind + '_duplicates'
            best[field] = sorted(set(best[field]) | {other['url']})
        best['canonical_claims'] = sorted(
            set(best.get('canonical_claims') or ()) | set(other.get('canonical_claims') or ()))
        best['resources'] = list(best.get('resources') or ()) + list(
            other.get('resources') or ())

    # -- step 3: band buckets -----------------------------------------------------------

    def mapper_bands(self, url, page):
        """page -> (url, page), (each claimer, canonical target), ((band, bits), summary)."""
        yield url, {'page': page}
        mine = summary(page)
        for claimer in page.get('canonical_claims') or ():
            yield claimer, {'canonical_target': mine}
        if page.get('simhash') is not None:
            value = simhash.from_hex(page['simhash'])
            for band, bits in simhash.bands(value, self.settings['max_hamming_distance']):
                yield ['band', band, bits], mine

    def reducer_candidates(self, key, values):
        """(url, page and notices) -> the same; ((band, bits), summaries) -> verified
        near-duplicate pairs, each reported by the first band its two pages share."""
        if not isinstance(key, list):
            for v in values:
                yield key, v
            return
        band = key[1]
        k = self.settings['max_hamming_distance']
        cap = self.settings['max_bucket_pages']
        bucket = []
        for v in values:
            if len(bucket) < cap:
                bucket.append(v)
            else:
                self.count(C.NEAR_BUCKET_OVERFLOW)
        bucket.sort(key=lambda s: s['url'])   # the same pages compared in any run
        fps = [simhash.from_hex(s['simhash']) for s in bucket]
        candidates = rejected = 0      # counted once per bucket: pairs are many
        for i in range(len(bucket)):
            for j in range(i + 1, len(bucket)):
                if simhash.first_common_band(fps[i], fps[j], k) != band:
                    continue
                candidates += 1
                d = simhash.distance(fps[i], fps[j])
                if d > k:
                    rejected += 1
                    continue
                yield bucket[i]['url'], {'near': bucket[j], 'distance': d}
                yield bucket[j]['url'], {'near': bucket[i], 'distance': d}
        self.count(C.NEAR_CANDIDATES, candidates)
        self.count(C.NEAR_REJECTED, rejected)

    # -- step 4: who leads a group ------------------------------------------------------

    def reducer_leaders(self, url, values):
        """(url, page + near duplicates + canonical target) -> (url, page and whether it
        leads), and a leader's notice to each of its near duplicates and claimers."""
        page, near, target = None, {}, None
        for v in values:
            if 'page' in v:
                page = v['page']
            elif 'near' in v:
                near[v['near']['url']] = v['near']
            else:
                target = v['canonical_target']
        if page is None:   # a claimer that was folded by digest into another page
            self.count(C.CANONICAL_UNRESOLVED)
            return
        mine = canonical_order(page)
        leader = target is None and all(canonical_order(n) > mine for n in near.values())
        yield url, {'page': page, 'leader': leader,
                    'target': target['url'] if target else None}
        if leader:
            notice = summary(page)
            for other in near:
                yield other, {'leader': notice}
            for claimer in page.get('canonical_claims') or ():
                yield claimer, {'leader': notice}

    # -- step 5: each page picks its group ----------------------------------------------

    def reducer_choose_group(self, url, values):
        """(url, page + leaders' notices) -> (url, page) if it leads or stays alone, else
        (its leader's url, what folds into it)."""
        me, leaders = None, []
        for v in values:
            if 'page' in v:
                me = v
            else:
                leaders.append(v['leader'])
        if me is None:
            return        # a notice to a claimer folded by digest (counted in step 4)
        page = me['page']
        if me['leader']:
            yield url, {'page': page}
            return
        chosen, kind = None, None
        for leader in leaders:
            if leader['url'] == me['target']:
                chosen, kind = leader, 'canonical'
        if chosen is None and leaders:
            chosen, kind = min(leaders, key=canonical_order), 'near'
        if chosen is None:
            if me['target'] is None:
                self.count(C.NEAR_UNFOLDED)
            yield url, {'page': page}
            return
        yield chosen['url'], {'folded': {
            'url': url, 'kind': kind, 'duplicates': page['duplicates'],
            'near_duplicates': page['near_duplicates'],
            'canonical_duplicates': page['canonical_duplicates'],
            'resources': page.get('resources') or []}}

    # -- step 6: the map record ---------------------------------------------------------

    def reducer_collect(self, url, values):
        """(leader url, its summary + what folds into it) -> merge_map record."""
        page, folded = None, []
        for v in values:
            if 'page' in v:
                page = v['page']
            else:
                folded.append(v['folded'])
        for other in folded:
            self.fold(page, other, other['kind'])
            self.count(C.NEAR_DUPLICATES if other['kind'] == 'near'
                       else C.CANONICAL_DUPLICATES)
        resources = M.keep_resources(page.get('resources') or ())
        self.count(C.RESOURCES_ATTACHED, len(resources))
        self.count(C.MERGED_PAGES)
        yield None, {'kind': 'merge_map', 'url': url, 'fetch': page['fetch'],
                     'simhash': page['simhash'],
                     'duplicates': page['duplicates'],
                     'near_duplicates': page['near_duplicates'],
                     'canonical_duplicates': page['canonical_duplicates'],
'resources': resources}


if __name__ == '__main__':
    MRMerge.run()
