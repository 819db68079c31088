"""Rendering pages in headless Chromium, for sites whose config says ``render = true``.

The fetch job wraps each key's fetch in :meth:`Renderer.each`: a fetched HTML page of
such a site is loaded in the browser and its rendered DOM replaces ``doc['body']`` for
the parse (``doc['rendered'] = True``); the WARC keeps the bytes as received
(``warc_body``). One :class:`Renderer` per fetch task owns one thread running an
asyncio loop, which starts Playwright and the browser (``render.browser``) on the first
page and renders the pages the host threads hand it at once; a host thread waits for
its page. The task has one browser context; a politeness key's pages are loaded one
after another in one page of it, kept while the key is fetched: its renderer process
and what it loaded serve the key's next page (a new page per URL costs a process
each: bench/README.md).

The browser never touches the network itself: every request it makes goes through the
route handler. The page's document is fulfilled from the body already fetched; every
other request (script, XHR, style sheet, image, frame) is fetched by
jobs.lib.subrequest, under the rules of a crawl request and the page's budget, or
aborted with a counted reason. The DOM is taken when no request has been open for
``render.idle_seconds`` after the load event.

A render that fails (time, crash) leaves the fetched body; a crashed browser is started
again for the next page. Without Playwright or the browser, the task logs one warning
and pages are parsed as fetched (counter ``render_failed_unavailable_total``).
"""
import asyncio
import base64
import importlib.util
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from jobs.lib import counters as C, encoding, politeness, records as R
from jobs.lib.sites import SiteIndex
from jobs.lib.subrequest import Asked, Budget, SubRequests

# Requests the route handler does not see (WebSockets, a DNS prefetch) go to a proxy
# that does not exist, loopback included: they fail instead of reaching the network.
_LAUNCH_ARGS = ['--no-sandbox', '--proxy-server=socks5://127.0.0.1:9',
                '--proxy-bypass-list=<-loopback>']
#: Seconds a page's close may take: a page whose renderer was killed may never answer.
_CLOSE_SECONDS = 5.0


def tool_warnings(conf):
    """What the crawl's driver says once, at the start, when a site asks for rendering
    and this machine has no browser (the tasks count the pages it costs)."""
    if not any(spec.get('render') for spec in conf.get('sites') or ()):
        return []
    browser = conf['render']['browser']
    if not os.access(browser, os.X_OK):
        return ['render: no browser at %s (render.browser): pages of render = true sites '
                'are parsed as fetched (Debian: apt-get install chromium)' % browser]
    try:                  # imported, not only found: a broken install is said here too
        importlib.import_module('playwright.sync_api')
    except Exception as e:
        return ['render: Playwright cannot load (%s; pip install playwright): pages of '
                'render = true sites are parsed as fetched' % ' '.join(str(e).split())]
    return []


class _Unavailable(Exception):
    """Playwright or the browser cannot be started on this machine."""


class _Job:
    """One page handed to the render thread, and what came of it."""

    def __init__(self, doc, hf):
        self.doc, self.hf = doc, hf
        self.html = None
        self.error = None
        self.done = threading.Event()


class _KeyPage:
    """A politeness key's page in the browser, and the job it is loading (None: free)."""

    def __init__(self, browser, page, key):
        self.browser, self.page, self.key, self.job = browser, page, key, None
        self.budget = self.activity = None
        self.served = self.closed = False
        self.loads = 0

    def start(self, budget, activity):
        """A new load: its budget, its requests, its document not yet served."""
        self.budget, self.activity, self.served = budget, activity, False
        self.loads += 1

    def route_to(self, handler):
        async def route(r):
            await handler(r, self)
        return route


class _Activity:
    """A page's open requests, and when the last one opened or closed."""

    def __init__(self):
        self.open, self.last = 0, time.monotonic()

    def opened(self):
        self.open += 1
        self.last = time.monotonic()

    def closed(self):
        self.open -= 1
        self.last = time.monotonic()

    def idle_for(self, seconds):
        return self.open == 0 and time.monotonic() - self.last >= seconds


class Renderer:
    """A fetch task's browser. *robots_cache* and *resolver* are the task's; *warn*
    writes a line (bytes) to the task's log: MRJob.stderr, Hadoop's task stderr."""

    def __init__(self, conf, robots_cache, resolver, warn=None):
        self.conf = conf
        self.settings = conf['render']
        specs = conf.get('sites') or ()
        self.sites = SiteIndex(specs) if any(s.get('render') for s in specs) else None
        self.requests = SubRequests(conf, robots_cache, resolver, self._stat)
        self.warn = warn or sys.stderr.buffer.write
        self.stats = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()     # the loop runs: _loop, _stop are set
        self._loop = self._stop = None
        self._thread = None
        # Sub-requests wait their key's turn: threads, so that the loop never blocks.
        self._pool = ThreadPoolExecutor(conf['fetch']['threads'],
                                        thread_name_prefix='render-fetch')
        self._closed = self._unavailable = False
        # The render thread's own: Playwright and the browser.
        self._pw = self._browser = None

    def _stat(self, name, n=1):
        with self._lock:
            self.stats[name] = self.stats.get(name, 0) + n

    def each(self, hf, items, layer, key, *rest):
        """``hf.fetch(items, layer, key, *rest)``'s docs, each rendered first when its
        site asks for it; sleeps through the key's waits."""
        return politeness.waited(self.steps(hf, items, layer, key, *rest), hf.clock,
                                 hf.slot.sleep)

    def steps(self, hf, items, layer, key, *rest):
        """:meth:`each`'s docs and the key's waits between them (HostFetcher.steps)."""
        self.requests.busy(key, 1, hf.slot)
        try:
            for doc in hf.steps(items, layer, key, *rest):
                # The key's thread waits for its page: a fetcher's Slot is one thread's.
                wanted = not isinstance(doc, float) and self.wants(doc)
                yield self._finish(self._submit(doc, hf)) if wanted else doc
        finally:
            loop = self._loop if self.requests.busy(key, -1, hf.slot) else None
            if loop is not None:     # the key's page, if it has one, is not needed now
                try:       # (hf.key: the key the fetcher worked out when *key* is None)
                    loop.call_soon_threadsafe(self._release, hf.key)
                except RuntimeError:     # the loop is over: so is the browser
                    pass

    def wants(self, doc):
        """Is *doc* a fetched HTML page of a site with ``render = true``?"""
        if self.sites is None or doc['status'] != R.FETCH_FETCHED or doc['body'] is None \
                or not encoding.is_html(doc['content_type']):
            return False
        site = self.sites.match(doc['final_url'])
        return site is not None and site.render

    def _submit(self, doc, hf):
        """Hand *doc* to the render thread (host thread): its :class:`_Job`."""
        job = _Job(doc, hf)
        with self._lock:
            if self._unavailable or self._closed:
                job.error = 'unavailable' if self._unavailable else 'cancelled'
            elif self._thread is None:
                self._thread = threading.Thread(target=self._serve, name='render',
                                                daemon=True)
                self._thread.start()
        if job.error is None:
            self._ready.wait()
            self._loop.call_soon_threadsafe(self._begin, job)
        else:
            job.done.set()
        return job

    def _finish(self, job):
        """*job*'s doc once rendered (host thread; waits), its body replaced by the
        rendered DOM; on failure the body stays as fetched, counted by reason."""
        doc, hf = job.doc, job.hf
        while job.error is None and not job.done.wait(1.0):
            if not self._thread.is_alive():    # never expected: do not wait forever
                job.error = 'crash'
        if job.html is None:
            self._stat(C.per('render_failed', job.error))
            return doc
        if hf.warc and doc.get('warc_body') is None:
            # The WARC keeps the bytes as received, not the DOM the parse reads.
            raw = encoding.encode(doc['body'], doc['encoding']) or doc['body'].encode()
            doc['warc_body'] = base64.b64encode(raw).decode('ascii')
        doc['body'], doc['rendered'] = job.html, True
        self._stat(C.PAGES_RENDERED)
        return doc

    def close(self, count=None):
        """Stop the render thread and its browser; pages being rendered keep their
        fetched body. *count(name, n)* gets the counters."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._ready.wait()
            self._loop.call_soon_threadsafe(self._stop.set)
            thread.join(self.settings['max_seconds'] + 10.0)
        for name, n in sorted(self.stats.items()) if count else ():
            count(name, n)

    # -- the render thread: an asyncio loop, one task per page -------------------------

    def _serve(self):
        asyncio.run(self._main())

    async def _main(self):
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._launching, self._tasks = asyncio.Lock(), set()
        self._context, self._pages = None, {}     # (browser, its context); key -> _KeyPage
        self._turns = {}      # key -> the lock its pages take in turn
        self._ready.set()
        await self._stop.wait()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10.0)
        await self._shutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _begin(self, job):
        """Start rendering *job* (in the loop), or refuse it once closing."""
        if self._stop.is_set():
            job.error = 'cancelled'
            job.done.set()
            return
        self._spawn(self._run(job))

    async def _run(self, job):
        # Bounded as a whole: a Playwright call without a timeout of its own (a crashed
        # renderer's page) must not leave the key's thread waiting for ever.
        most = 2 * self.settings['max_seconds'] + _CLOSE_SECONDS
        try:
            job.html = await asyncio.wait_for(self._render_one(job), most)
        except _Unavailable:
            job.error = 'unavailable'
        except asyncio.CancelledError:
            job.error = 'cancelled'
        except Exception as e:   # a page that fails costs its render, not the task
            job.error = self._failure(e)
        finally:
            job.done.set()

    def _failure(self, exc):
        """The reason of a failed render; a crashed browser is dropped (next page: a new
        one)."""
        if not self._connected():
            self._browser = None
            return 'crash'
        return 'timeout' if type(exc).__name__ == 'TimeoutError' else 'browser_error'

    def _connected(self):
        try:
            return self._browser is None or self._browser.is_connected()
        except Exception:    # Playwright's driver is gone too
            return False

    async def _launch(self):
        """The task's browser, started on the first page (and again after a crash)."""
        async with self._launching:
            if self._unavailable:        # found out by a page before: said once
                raise _Unavailable()
            if self._browser is not None and not self._connected():
                self._browser = None     # it crashed since the last page: start another
            if self._browser is not None:
                return self._browser
            try:
                if self._pw is None:
                    # lazy: Playwright only in crawls that render
                    from playwright.async_api import async_playwright
                    self._pw = await async_playwright().start()
                self._browser = await self._pw.chromium.launch(
                    executable_path=self.settings['browser'], args=_LAUNCH_ARGS,
                    timeout=self.settings['max_seconds'] * 1000)
            except Exception as e:   # ImportError, no browser, one that cannot start
                with self._lock:
                    self._unavailable = True
                why = (str(e).strip().splitlines() or [''])[0]
                self.warn(('WARNING render: no browser (%s: %s); the pages of render = '
                           'true sites are parsed as fetched\n'
                           % (type(e).__name__, why)).encode())
                self._stat(C.BROWSER_UNAVAILABLE)
                raise _Unavailable() from e
            self._stat(C.BROWSER_STARTS)
            return self._browser

    async def _page(self, job):
        """The page of the job's politeness key: a key's pages are loaded one after
        another (:meth:`_render_one`) in one page of the task's browser context, kept
        until the key's fetch ends, so that they share its renderer process and what it
        has loaded (a new page costs a process: bench/README.md). A browser that died
        since the last page (its news can come late) is started again, once."""
        try:
            return await self._key_page(job)
        except _Unavailable:
            raise
        except Exception:
            self._browser = None
            return await self._key_page(job)

    async def _key_page(self, job):
        browser = await self._launch()
        # One context, made by the first of the keys that start at once: in contexts of
        # their own, Chromium gave every load a new renderer process, reused page or
        # not (bench/README.md).
        async with self._launching:
            if self._context is None or self._context[0] is not browser:
                self._pages.clear()     # the old browser's pages went with it
                self._context = (browser, await browser.new_context(
                    user_agent=job.hf.user_agent, service_workers='block'))
        held = self._pages.get(job.hf.key)
        if held is None or held.browser is not browser or held.closed:
            held = _KeyPage(browser, await self._context[1].new_page(), job.hf.key)
            await held.page.route('**/*', held.route_to(self._route))
            self._stat(C.BROWSER_PAGES)
            self._pages[job.hf.key] = held
        held.job = job
        return held

    async def _drop(self, held):
        """Close *held*'s page (a failed render leaves a page in an unknown state)."""
        held.closed = True
        if self._pages.get(held.key) is held:
            del self._pages[held.key]
        try:
            await asyncio.wait_for(held.page.close(), _CLOSE_SECONDS)
        except Exception:     # a crashed browser: its pages are gone already
            pass

    def _release(self, key):
        """The key's fetch is over (the loop): close its page unless it is in use."""
        turn = self._turns.get(key)
        if turn is None or not turn.locked():
            self._turns.pop(key, None)
            held = self._pages.get(key)
            if held is not None:
                self._spawn(self._drop(held))

    def _spawn(self, coro):
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _render_one(self, job):
        async with self._turns.setdefault(job.hf.key, asyncio.Lock()):    # FIFO: in turn
            held = await self._page(job)
            budget, reused = Budget(self.settings), held.loads > 0
            try:
                return await self._load(held, budget)
            except _Unavailable:
                raise
            except Exception:
                if not reused or time.monotonic() >= budget.deadline:
                    raise
            # The key's page died since its last load (its renderer or the browser
            # crashed; a browser's death can be told late): once more, in a new page.
            if not self._connected():
                self._browser = None
            return await self._load(await self._page(job), budget)

    async def _load(self, held, budget):
        """Load the held page's job in it: its rendered DOM. On failure the page is
        closed; else it is free for the key's next page."""
        page, activity = held.page, _Activity()
        held.start(budget, activity)
        try:
            await page.goto(held.job.doc['final_url'], wait_until='load',
                            timeout=max(budget.deadline - time.monotonic(), 0.001) * 1000)
            # Scripts that load more after the load event: every request goes through
            # _route, so the page is done when none is open and none started for
            # render.idle_seconds (or its time is up).
            idle = self.settings['idle_seconds']
            while time.monotonic() < budget.deadline and not activity.idle_for(idle):
                await asyncio.sleep(0.02)
            html = await page.content()
        except BaseException:
            await asyncio.shield(self._drop(held))
            raise
        held.job = None
        return html

    async def _route(self, route, held):
        """Route handler (the loop): the page's document from the fetched body, any
        other request fetched in the pool (it may wait its key's turn) or aborted.
        The request counts against the page being loaded when it is asked for."""
        req, job, budget, activity = route.request, held.job, held.budget, held.activity
        if job is None or held.closed:    # between two pages, or closing: not a page's
            self._stat(C.per('subrequests_aborted', 'between_pages'))
            try:
                return await route.abort('blockedbyclient')
            except Exception:   # the page closed meanwhile
                return None
        activity.opened()
        try:
            if req.is_navigation_request() and req.frame == held.page.main_frame:
                if held.served:    # the page navigating away: not followed here
                    self._stat(C.per('subrequests_aborted', 'navigation'))
                    return await route.abort('blockedbyclient')
                held.served = True
                return await route.fulfill(
                    status=200, body=job.doc['body'].encode('utf-8'),
                    headers={'content-type': 'text/html; charset=utf-8'})
            asked = Asked(req.url, req.method, await req.all_headers())
            got = await self._loop.run_in_executor(
                self._pool, self.requests.fetch, asked, job.hf, budget)
            if isinstance(got, str):
                self._stat(C.per('subrequests_aborted', got))
                return await route.abort('blockedbyclient')
            return await route.fulfill(status=got[0], headers=got[1], body=got[2])
        except Exception:   # the page closed meanwhile (its time ran out): nothing to answer
            return None
        finally:
            activity.closed()

    async def _shutdown(self):
        self.requests.close()
        for stop in (self._browser and self._browser.close, self._pw and self._pw.stop):
            try:
                if stop:
                    await stop()
            except Exception:   # already gone (a crash): nothing left to close
                pass
        self._browser = self._pw = None
