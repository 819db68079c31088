"""The doc -> page transformation (Nutch's ParseUtil), shared by MRParse and MRFetch.

:class:`PageParser` turns one ``doc`` record into one ``page`` record: the doc's fetch
metadata without the body, plus title, text, out-links with anchor text (resolved
against the page and ``<base href>``, normalised, http(s) only, filtered by
``[filter]``), the canonical link and the page's robots directives; for indexable pages,
description, headings, main text (jobs.lib.maintext), language
(fastText) and the SimHash fingerprint MRMerge compares (jobs.lib.simhash: hashed here,
where the fetch's CPU waits out politeness delays, not again in the merge); for pages
of a configured site (``conf['sites']``, jobs.lib.sites) the extracted fields and
their checksum; with a topic profile (``[topic]``), the page's relevance. Non-HTML
bodies kept by the fetch (robots.txt, sitemaps, plain text) become URL sources or text.
Every link dropped is counted by reason (``link_rejected_*``).

A parser failure on one page costs that page's links and text, never the record: it is
counted (``parse_error_total``) and named in the page's ``parse_error`` field.

MRParse (fetch.parse = false) calls it in its mapper; MRFetch (fetch.parse = true, the
default) calls it in its reducer as each document arrives, while the fetch threads wait
out their politeness delays. *count(name, amount)* receives the parse counters.
"""
from jobs.lib import (content, counters as C, encoding, extract, filters, html,
                      records as R, maintext, simhash, sitemaps, sites, topic, urls)


#: doc fields a page drops: the body and what only the WARC job reads (the HTTP exchange,
#: the exact bytes of a lossy decode, the robots.txt and redirect responses). A
#: PageParser made with ``keep`` carries those named there onto the page (MRFetch with
#: warc.enabled: MRWarc then reads out/).
WARC_FIELDS = ('body', 'http', 'warc_body', 'warc_exchanges')

#: What the parse adds to a doc record (jobs/reparse.py strips them to rebuild the doc).
PARSE_FIELDS = frozenset((
    'title', 'text', 'links', 'canonical', 'noindex', 'nofollow', 'site', 'fields',
    'fields_checksum', 'refetch_interval', 'relevance', 'on_topic', 'link_depth_step',
    'description', 'headings', 'main_text', 'language', 'parse_error', 'sitemap',
    'resources', 'main_text_error', 'fingerprint', 'fields_missing', 'extract_error'))


class PageParser:
    """Compiled once per task: the normaliser, link filters, site configs, topic profile."""

    def __init__(self, conf, count, keep=()):
        self.conf = conf
        self.count = count
        self.keep = frozenset(keep)
        self.normalize = urls.normalizer(conf)
        self.link_filter = filters.LinkFilter.for_conf(conf)
        self.sites = sites.SiteIndex(conf.get('sites'))
        self.topic = topic.Profile.from_conf(conf['topic'])
        self.sitemaps = conf['sitemaps']
        self.content = content.Registry.for_conf(conf)
        merge = conf['merge']
        self.shingle_words = merge['shingle_words'] if merge['near_duplicates'] else None

    def parse(self, doc):
        """One doc record -> its page record (the body dropped, parse results added).

        Never raises for one page's sake: an unexpected failure anywhere in the parse
        leaves the bare page (fetch metadata, no links), counted and named in
        ``parse_error``.
        """
        taken = {k: doc.pop(k) for k in WARC_FIELDS if k in doc}
        page = self.bare_page(doc)
        if doc.get('resource_of') is not None:
            page = self.resource_page(page)
        else:
            try:
                self.fill(page, doc, taken.get('body'))
            except Exception as e:   # a bug on one page costs its parse, not the task
                page = self.bare_page(doc)
                self.count(C.PARSE_ERROR)
                page['parse_error'] = type(e).__name__
        page.update((k, v) for k, v in taken.items() if k in self.keep and v is not None)
        return page

    def resource_page(self, page):
        """A secondary resource (a site rule named it on its parent page): its fetch
        metadata only, never parsed, whatever its type; noindex (not a page of its own:
        merged/ attaches it to the pages that name it)."""
        page['noindex'] = True
        page.pop('raw_body', None)
        self.count(C.RESOURCE_DOCS)
        return page

    @staticmethod
    def bare_page(doc):
        return dict(doc, kind='page', title=None, text='', links=[], canonical=None,
                    noindex=False, nofollow=False, site=None, fields=None,
                    fields_checksum=None, refetch_interval=None, relevance=None,
                    on_topic=None, link_depth_step=1, description=None, headings=[],
                    main_text=None, language=None)

    def fill(self, page, doc, body):
        """Add the parse results of *doc* (whose body is *body*) to *page*."""
        base = doc.get('final_url') or doc['url']
        site = self.sites.match(base)
        if site is not None:
            page['site'] = site.name
            page['refetch_interval'] = site.refetch_interval
        if doc.get('status') != R.FETCH_FETCHED:
            return
        if body is None:
            if doc.get('raw_body') is not None:
                self.parse_other(doc, page, base)
            return
        limits = self.conf['parse']
        try:
            tree = html.tree(body)
            if site is not None:
                self.extract_site(page, site, body, base, tree)
            parsed = html.parse(body, base, limits['max_text_chars'], tree=tree,
                                encoding=doc.get('encoding'))
        except Exception as e:   # a parser failure costs the links, not the record
            self.count(C.PARSE_ERROR)
            page['parse_error'] = type(e).__name__
            return
        self.count(C.PAGES_PARSED)
        x_robots = (doc.get('headers') or {}).get('x-robots-tag', '').lower()
        page.update(title=parsed['title'], text=parsed['text'],
                    canonical=self.normalize(parsed['canonical']),
                    noindex=parsed['noindex'] or 'noindex' in x_robots or 'none' in x_robots,
                    nofollow=parsed['nofollow'] or 'nofollow' in x_robots or 'none' in x_robots)
        if page['noindex']:
            self.count(C.PAGES_NOINDEX)
        else:     # noindex pages never reach xml/: no main text, no language for them
            page.update(description=parsed['description'], headings=parsed['headings'])
            self.main_text_and_language(page, body, base)
            if self.shingle_words:
                page['fingerprint'] = simhash.fingerprint(page['main_text'] or page['text'],
                                                          self.shingle_words)
        follow_links = True
        if self.topic is not None:
            follow_links = self.score_topic(page)
        if page['nofollow'] or not follow_links:
            reason = 'page_nofollow' if page['nofollow'] else 'off_topic'
            self.count(C.LINKS_FOUND, len(parsed['links']))
            self.count(C.link_rejected(reason), len(parsed['links']))
        else:
            page['links'] = self.keep_links(parsed['links'], base, site)
        if (self.sitemaps.get('enabled') and self.sitemaps.get('from_robots')
                and not doc.get('depth')):
            self.link_robots_txt(page, base)

    def main_text_and_language(self, page, body, base):
        """main_text (parse.main_text, parse.main_text_extractor) and language
        (fastText)."""
        limits = self.conf['parse']
        if limits.get('main_text', True):
            if len(body) > limits.get('main_text_max_bytes', 1 << 20):
                self.count(C.MAIN_TEXT_TOO_BIG)
            else:
                try:
                    page['main_text'] = maintext.main_text(
                        body, base, limits.get('main_text_extractor', 'resiliparse'))[
                        :limits['max_text_chars']]
                except Exception as e:   # an extractor failure costs the main text only
                    self.count(C.MAIN_TEXT_ERROR)
                    page['main_text_error'] = type(e).__name__
                else:
                    self.count(C.MAIN_TEXT_PAGES if page['main_text'] else C.MAIN_TEXT_EMPTY)
        page['language'] = maintext.language(page['main_text'] or page['text'])
        if page['language'] is None:
            self.count(C.LANGUAGE_UNKNOWN)

    def link_robots_txt(self, page, base):
        """A seed page links its host's robots.txt, whose Sitemap: lines are URL sources."""
        robots_url = urls.origin(urls.normalize(base)) + '/robots.txt'
        if all(link['url'] != robots_url for link in page['links']):
            page['links'].append({'url': robots_url, 'text': '', 'rel': 'robots'})
            self.count(C.ROBOTS_LINKED)

    def parse_other(self, doc, page, base):
        """Non-HTML bodies the fetch kept (raw_body): sitemaps, robots.txt, and the
        types of the content parsers (parse.parsers: plain text, PDF...)."""
        data = sitemaps.raw_bytes(doc)
        ctype = doc.get('content_type') or ''
        path = filters.split_url(urls.normalize(base) or base)[1]
        enabled = self.sitemaps.get('enabled')
        if enabled and path == '/robots.txt':
            text = data.decode('utf-8', 'replace')
            found = [{'loc': u} for u in sitemaps.robots_sitemaps(text)]
            self.url_source(page, base, 'robots', found)
            return
        if enabled and (ctype in sitemaps.SITEMAP_TYPES or 'xml' in ctype):
            try:
                kind, found = sitemaps.parse(data, self.sitemaps['max_urls'],
                                             self.sitemaps['max_uncompressed_bytes'])
            except sitemaps.SitemapError as e:
                if ctype != 'text/plain':
                    self.count(C.SITEMAP_ERROR)
                    page['parse_error'] = 'sitemap: %s' % e
                    return
            else:
                if kind != 'text' or (found and path.endswith('.txt')):
                    self.url_source(page, base, kind, found)
                    return
        parser = self.content.by_type.get(encoding.mime(ctype) or ctype)
        if parser is None:
            self.count(C.OTHER_CONTENT)
            return
        self.parse_content(parser, data, page, base)
        if self.conf['warc']['enabled']:
            page.pop('raw_body', None)    # the WARC record keeps the bytes (and reparse)

    def parse_content(self, parser, data, page, base):
        """A content parser's fields (jobs.lib.content): title, text (also the main
        text: a document has no page furniture), links, language, SimHash; a document
        it cannot read keeps its fetch metadata and names why in parse_error."""
        page['parser'] = parser.name
        try:
            got = self.content.parse(parser, data, base, self.conf['parse'])
        except content.ParserError as e:
            self.count(C.content_error(parser.name, str(e)))
            page['parse_error'] = '%s: %s' % (parser.name, e)
            return
        self.count(C.content_parsed(parser.name))
        if parser.name == 'text':
            self.count(C.TEXT_PAGES)
        limit = self.conf['parse']['max_text_chars']
        text = ' '.join((got.get('text') or '').split())[:limit]
        page.update(title=got.get('title'), text=text, main_text=text or None)
        page['language'] = maintext.language(text)
        if self.shingle_words:
            page['fingerprint'] = simhash.fingerprint(text, self.shingle_words)
        found = [{'url': urls.resolve(base, link.get('url')), 'text': link.get('text') or '',
                  'rel': ''} for link in got.get('links') or ()]
        page['links'] = self.keep_links([f for f in found if f['url']], base)

    def url_source(self, page, base, kind, entries):
        """robots.txt or a sitemap: its URLs become links that add no depth."""
        self.count(C.sitemap_parsed(kind))
        self.count(C.SITEMAP_URLS, len(entries))
        page['sitemap'] = kind
        page['noindex'] = True    # a list of URLs, not a page for the indexes
        page['link_depth_step'] = 0
        # An unresolvable loc stays as it is: keep_links counts it (reason scheme).
        found = [{'url': urls.resolve(base, e['loc']) or e['loc'], 'text': '', 'rel': kind}
                 for e in entries]
        page['links'] = self.keep_links(found, base, None)
        # A link carries its entry's lastmod as UTC (optimize keeps the newest in the
        # crawl database: a page changed after its last fetch is due again).
        lastmod = {}
        for e in entries:
            if e.get('lastmod'):
                when = sitemaps.lastmod(e['lastmod'])
                if when is None:
                    self.count(C.SITEMAP_LASTMOD_BAD)
                else:
                    lastmod[urls.normalize(urls.resolve(base, e['loc']))] = when
        for link in page['links']:
            if link['url'] in lastmod:
                link['lastmod'] = lastmod[link['url']]

    def extract_site(self, page, site, body, base, tree):
        """Fill the page's fields, checksum and resources from its site's config."""
        self.count(C.SITE_PAGES)
        if not site.extracts(base):
            return
        target = extract.Page(body, base, tree, self.normalize)
        try:
            fields, missing = extract.extract_fields(target, site.spec['fields'])
            resources = extract.extract_resources(target, site.spec['resources'])
        except Exception as e:   # e.g. an XPath that fails on this page: count, go on
            self.count(C.EXTRACT_ERROR)
            page['extract_error'] = '%s: %s' % (type(e).__name__, e)
            return
        self.count(C.FIELDS_PAGES)
        if missing:
            self.count(C.FIELDS_REQUIRED_MISSING)
            page['fields_missing'] = missing
        page['fields'] = fields
        page['fields_checksum'] = extract.fields_checksum(fields)
        if resources:
            cap = self.conf['parse']['max_resources_per_page']
            if len(resources) > cap:
                self.count(C.RESOURCES_OVER_CAP, len(resources) - cap)
                resources = resources[:cap]
            page['resources'] = resources
            self.count(C.RESOURCES_FOUND, len(resources))

    def score_topic(self, page):
        """Set relevance and on_topic; False when the page's links are to be dropped."""
        score = self.topic.score(page['title'], page['text'])
        page['relevance'] = round(score, 4)
        page['on_topic'] = score >= self.topic.min_score
        self.count(C.PAGES_ON_TOPIC if page['on_topic'] else C.PAGES_OFF_TOPIC)
        if page['on_topic']:
            return True
        if self.topic.off_topic_links == 'drop':
            return False
        if self.topic.off_topic_links == 'deprioritise':
            page['link_depth_step'] = 1 + self.topic.depth_penalty
        return True

    def keep_links(self, found, page_url=None, site=None):
        """Normalise, filter and de-duplicate a page's links; count each rejection."""
        self.count(C.LINKS_FOUND, len(found))
        site_allows = site.link_allowed if site is not None and (
            site.follow or site.deny) else None
        kept, rejected = filters.select_links(
            found, page_url, self.normalize, self.link_filter, site_allows,
            self.conf['parse']['max_links_per_page'])
        by_reason = {}
        for reason, _ in rejected:
            by_reason[reason] = by_reason.get(reason, 0) + 1
        for reason, n in by_reason.items():
            self.count(C.link_rejected(reason), n)
        self.count(C.LINKS_KEPT, len(kept))
        return kept
