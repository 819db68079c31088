"""In-fetch following (``fetch.follow_hops``, Nutch's fetcher.follow.outlinks.depth).

A layered crawl waits for its slowest host in every layer; the others sit idle. With
following on, a fetch thread whose key's list is done goes on to the same-key out-links
of the pages it fetched, while its task still has listed URLs of other keys to fetch
(MRFetch decides when: :meth:`Follower.items` asks it before each URL).

What may be followed (never a URL the crawl has, so nothing is fetched twice and the
next generate never selects a followed URL again):

- a link of a fetched page, after the parse's link filters (``links`` of the page
  record: normalised, denied extensions, nofollow and site rules already applied);
- of the same politeness key, so the key's robots.txt and delay govern it;
- not in the crawl database (the key's list joins its known URLs: ``known`` and
  ``held`` lines), not in this layer's list, not requested or queued here before;
- at depth parent + link step (the parse's ``link_depth_step``, as MROptimize counts
  it), never past the crawl's depth, and at most ``fetch.follow_hops`` hops from a
  listed URL.

With one hop, a followed page's depth is the one a crawl without following gives it:
every page shallower than its parent was fetched in an earlier layer, so a link to it
from one of them would be in the crawl database. A followed URL carries ``followed``
(its hop) and ``score``, its parent's OPIC share, as MROptimize would hand it on.

This module is pure bookkeeping; the threads and the parse are MRFetch's.
"""
import collections
import threading

from jobs.lib import records as R


class Reply:
    """The parse of one fetched page, handed from the task's main thread (which
    parses) back to the key's fetch thread (which follows its links)."""

    def __init__(self):
        self._done = threading.Event()
        self.page = None

    def set(self, page):
        self.page = page
        self._done.set()

    def wait(self, cancelled, poll=0.5):
        """The page record, or None once *cancelled* (a threading.Event) is set."""
        while not self._done.wait(poll):
            if cancelled.is_set():
                return None
        return self.page


class Follower:
    """One politeness key's queue of followed URLs.

    *same_key(url)*: is *url* of this key (HostFetcher.same_key); *seen* the URLs that
    must not be followed (the crawl database's and the list's); *max_depth* the crawl's
    depth; *max_hops* fetch.follow_hops.
    """

    def __init__(self, same_key, seen, max_depth, max_hops):
        self.same_key = same_key
        self.seen = set(seen)
        self.max_depth, self.max_hops = max_depth, max_hops
        self.queue = collections.deque()
        self.queued = self.left = 0

    def wants(self, doc):
        """Are *doc*'s links worth its parse's reply: a page fetched here, not a
        resource, whose links may still go a hop and a level deeper?"""
        return (doc['status'] == R.FETCH_FETCHED and doc.get('resource_of') is None
                and doc.get('followed', 0) < self.max_hops
                and doc.get('depth', 0) + 1 <= self.max_depth)

    def add(self, page):
        """Queue the followable links of *page* (its parse: a page record)."""
        links = page.get('links') or ()
        depth = page.get('depth', 0) + page.get('link_depth_step', 1)
        if not links or depth > self.max_depth:
            return
        # OPIC: the parent's cash in equal shares, as MROptimize hands it on.
        share = R.opic_cash(page) / len(links)
        hop = page.get('followed', 0) + 1
        for link in links:
            url = link['url']
            if url in self.seen or not self.same_key(url):
                continue
            self.seen.add(url)
            self.queue.append({'kind': 'url', 'url': url, 'depth': depth, 'score': share,
                               'followed': hop})
            self.queued += 1

    def items(self, may_follow, requested):
        """Yield queued URLs while *may_follow()* holds, skipping any *requested(url)*
        since it was queued (a redirect's hop fetched it); what is left when it stops
        is counted in ``left`` and stays a link for the crawl database."""
        while self.queue:
            if not may_follow():
                self.left += len(self.queue)
                self.queue.clear()
                return
            rec = self.queue.popleft()
            if not requested(rec['url']):
                yield rec
