"""MROptimize (OptimizerDriver, first half): update the crawl database with one layer.

Reads the previous crawl database (``db`` records, crawldb/NNN-1) and this layer's
parsed pages (``page`` records, out/NNN); writes the new crawl database (crawldb/NNN):
one ``db`` record per known URL. It is an exact reduce-side join on the URL: a link to
a URL with no db record is new (status unfetched, depth = linking page's depth + 1);
a link to a known URL only adds to its in-link count. No set of URLs is held in memory.
A link from a sitemap may carry its entry's lastmod: the record keeps the newest one
seen as ``sitemap_lastmod`` (MRGenerate's cycle mode uses it).

Secondary resources a page names (its ``resources``, from site rules) join the same way:
a new one becomes an unfetched record at the page's own depth (a resource is not a link
hop) carrying ``resource_of`` (the naming page's final URL), ``resource_name`` and
``max_bytes``, so MRGenerate puts it in the next in/ and the fetcher caps it. They never
went through the link filters (an image is exactly what the extension deny list
drops); the fetch still applies scheme, address, robots.txt and politeness rules. A URL
named by several pages keeps one parent (the shallowest, then the smallest URL); one
already known is fetched once, as anything else.

Run alone::

    python -m jobs.optimize --crawl-conf crawl/conf.json --layer 1 crawl/crawldb/000 crawl/out/001 -o /tmp/db
"""
import orjson
from mrjob.step import MRStep

from jobs.base import CrawlJob, JSONKeyRawValueProtocol, JSONLinesValueProtocol
from jobs.lib import counters as C, records as R
from jobs.lib.records import now_iso  # not from the fetcher: requests is a slow import

_FETCH, _LINK, _RESOURCE = 1, 2, 3
#: A db record that has both fields already is what reducer_join would write of it when
#: nothing joins it (it sets them).
_SCORE, _INLINKS = b'"score":', b'"inlinks":'


class DbLineProtocol(JSONKeyRawValueProtocol):
    """``key<TAB>value``, both JSON, where a db record travels as the line it was read
    as (bytes, a JSON object): most URLs of a layer's join get no fetch and no link,
    and their record leaves the reducer as it came, never decoded. The other values
    (tagged lists) are decoded."""

    @staticmethod
    def read(line):
        key, value = JSONKeyRawValueProtocol.read(line)
        return key, (value if value[:1] == b'{' else orjson.loads(value))

    @staticmethod
    def write(key, value):
        return JSONKeyRawValueProtocol.write(
            key, value if isinstance(value, bytes) else orjson.dumps(value))


class RecordLineProtocol(JSONLinesValueProtocol):
    """Records as JSON lines; a record given as bytes is written as it is."""

    @staticmethod
    def write(key, value):
        return value if isinstance(value, bytes) else orjson.dumps(value)


class MROptimize(CrawlJob):
    COUNTER_GROUP = C.OPTIMIZE
    INTERNAL_PROTOCOL = DbLineProtocol
    OUTPUT_PROTOCOL = RecordLineProtocol
    #: Every URL the layer's pages name (--layer-pages: mapper_init_keys); None: unknown.
    keys = None

    def configure_args(self):
        super().configure_args()
        self.add_file_arg('--layer-pages', help='With --pass-dir: the layer\'s page records '
                          'again (a small layer: OptimizerDriver.update). A db line of a '
                          'URL they do not name, that stands as it is, is written into '
                          '--pass-dir as read, unshuffled. Default: off.')
        self.add_passthru_arg('--pass-dir', default=None, help='With --layer-pages: the '
                              'folder of those lines, one file per map task.')
        self.add_passthru_arg('--max-depth', type=int, default=None,
                              help='Count the unfetched URLs within this depth, which '
                              'the next generate can select. Default: off.')
        self.add_webhdfs_args('--pass-dir')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_keys, mapper=self.mapper_tag,
                       mapper_final=self.mapper_final_keys, combiner=self.combiner_links,
                       reducer=self.reducer_join, jobconf=self.wide_reduce())]

    def mapper_init_keys(self):
        self.passed = None
        if self.options.layer_pages and self.options.pass_dir:
            self.keys = set()
            with open(self.options.layer_pages, 'rb') as f:
                for line in f:
                    try:
                        rec = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue        # counted where the mapper reads it as input
                    if isinstance(rec, dict) and rec.get('kind') == 'page' and 'url' in rec:
                        self.keys.update(key for key, _ in self.page_pairs(rec))

    def mapper_final_keys(self):
        if self.passed is not None:
            self.passed.commit()
        return ()

    def mapper_tag(self, _, line):
        """db line -> (url, the line as bytes); page line -> (url, [tag, data]) for
        the join."""
        if line.startswith(R.DB_START):
            line = line.rstrip()
            known = R.db_url_status(line)
            if known is not None:
                if self.keys is not None and known[0] not in self.keys and \
                        self.stands(line, known):
                    # No page of the layer joins it: the reducer would write it as read.
                    if self.passed is None:
                        self.passed = self.side_sink(self.options.pass_dir, 'part-m')
                    self.passed.add_line(line)
                    self.count(C.DB_UNSHUFFLED)
                    return
                yield known[0], line
                return
        for rec in self.records(line, 'db', 'page'):
            if rec['kind'] == 'db':
                yield rec['url'], orjson.dumps(rec)
            else:
                yield from self.page_pairs(rec)

    def page_pairs(self, rec):
        """A page record -> (url, [tag, data]) for the join: its fetch, the redirect
        target it reached, the resources it names, its links."""
        redirected = rec.get('final_url', rec['url']) != rec['url']
        fetch = {
            'status': R.db_status_for(rec['status'], rec.get('http_status'),
                                      redirected),
            'depth': rec.get('depth', 0), 'http_status': rec.get('http_status'),
            'digest': rec.get('digest'), 'reason': rec.get('reason'),
            'last_fetch': rec.get('fetch_time'), 'layer': rec.get('layer')}
        for key in ('fields_checksum', 'refetch_interval'):
            if rec.get(key) is not None:
                fetch[key] = rec[key]
        if rec.get('followed'):
            fetch['followed'] = True      # fetched inside the fetch: see reducer_join
        if rec.get('kept'):
            fetch['kept'] = True          # a setting refused a known page: see reducer_join
        # The page's OPIC cash (seeds start with 1.0) is spent now: see reducer_join.
        fetch['spent_cash'] = R.opic_cash(rec) if rec['status'] in (
            R.FETCH_FETCHED, R.FETCH_NOT_MODIFIED) else 0.0
        headers = rec.get('headers') or {}
        for key, header in (('etag', 'etag'), ('last_modified', 'last-modified')):
            if headers.get(header):
                fetch[key] = headers[header]
        if rec['status'] == R.FETCH_NOT_MODIFIED:
            # 304: the stored digest, checksum and validators still hold.
            for key in ('digest', 'fields_checksum', 'etag', 'last_modified'):
                fetch.pop(key, None)
            fetch['not_modified'] = True
        yield rec['url'], [_FETCH, fetch]
        if redirected and rec['status'] in (R.FETCH_FETCHED, R.FETCH_NOT_MODIFIED):
            # The redirect target was fetched too: know it, so no one fetches it again.
            yield rec['final_url'], [_FETCH, {
                'status': R.DB_FETCHED, 'depth': rec.get('depth', 0),
                'http_status': rec.get('http_status'), 'digest': rec.get('digest'),
                'reason': 'redirect_target', 'last_fetch': rec.get('fetch_time'),
                'layer': rec.get('layer')}]
        if rec['status'] == R.FETCH_REDIRECTED and redirected:
            # A redirect the fetcher left for the next layer (a hop to another
            # politeness key): its target becomes known like a link, at the source's
            # depth, since a redirect is not a link hop. A resource's target stays
            # a resource of the same page.
            if rec.get('resource_of') is not None:
                yield rec['final_url'], [_RESOURCE, [
                    rec.get('depth', 0), rec['resource_of'], rec.get('resource_name'),
                    rec.get('max_bytes')]]
            else:
                yield rec['final_url'], [_LINK, [rec.get('depth', 0), 1, 0, 0.0]]
        for res in rec.get('resources') or ():
            # No depth added: a resource belongs to its page (see the module doc).
            yield res['url'], [_RESOURCE, [rec.get('depth', 0),
                                           rec.get('final_url') or rec['url'],
                                           res.get('name'), res.get('max_bytes')]]
        # link_depth_step > 1: links of an off-topic page, deprioritised (topic).
        depth = rec.get('depth', 0) + rec.get('link_depth_step', 1)
        on_topic = 1 if rec.get('on_topic') else 0
        links = rec.get('links', ())
        # OPIC: a fetched page hands its cash to its out-links in equal shares.
        share = fetch['spent_cash'] / len(links) if links else 0.0
        for link in links:
            data = [depth, 1, on_topic, share]
            if link.get('lastmod'):       # a sitemap's entry: when the page last changed
                data.append(link['lastmod'])
            yield link['url'], [_LINK, data]

    def combiner_links(self, url, values):
        """Fold link mentions of one URL into one (min depth, count, on-topic count, cash,
        newest sitemap lastmod if any)."""
        depth, n, t, cash, lastmod = None, 0, 0, 0.0, None
        for value in values:
            if isinstance(value, bytes):      # a db record's line
                yield url, value
                continue
            tag, data = value
            if tag == _LINK:
                depth = data[0] if depth is None else min(depth, data[0])
                n += data[1]
                t += data[2]
                cash += data[3]
                lastmod = _newer(lastmod, data)
            else:
                yield url, [tag, data]
        if n:
            yield url, [_LINK, [depth, n, t, cash] + ([lastmod] if lastmod else [])]

    def reducer_join(self, url, values):
        """(url, tagged values) -> the URL's db record, new or updated."""
        db, fetches, link_depth, inlinks, topic_inlinks, cash = None, [], None, 0, 0, 0.0
        resource = line = lastmod = None
        for value in values:
            if isinstance(value, bytes):
                line = value
                continue
            tag, data = value
            if tag == _FETCH:
                fetches.append(data)
            elif tag == _RESOURCE:
                # [depth, parent, name, max_bytes]: the shallowest, then smallest parent
                if resource is None or data[:2] < resource[:2]:
                    resource = data
            else:
                link_depth = data[0] if link_depth is None else min(link_depth, data[0])
                inlinks += data[1]
                topic_inlinks += data[2]
                cash += data[3]
                lastmod = _newer(lastmod, data)
        fetches = self.unless_kept(fetches, line)
        if line is not None:
            if not (fetches or inlinks or resource) and self.stands(line):
                yield None, line
                return
            db = orjson.loads(line)
        if db is None:
            db = _new_db(url)
            if not fetches:
                self.count(C.NEW_URLS)
        elif inlinks:
            self.count(C.KNOWN_LINKS, inlinks)
        if resource is not None:
            link_depth = self.join_resource(db, resource, link_depth, bool(fetches))
        depths = [d for d in [db['depth'], link_depth] + [f['depth'] for f in fetches]
                  if d is not None]
        followed = False
        if fetches:
            # A page's own fetch result wins over the redirect-target marker.
            fetches.sort(key=lambda f: f.get('reason') == 'redirect_target')
            followed = fetches[0].pop('followed', False)
            self.compare_fields(db, fetches[0])
            self.adapt_interval(db, fetches[0])
            db.update(fetches[0])
        db['depth'] = min(depths)
        db['inlinks'] = db.get('inlinks', 0) + inlinks
        if fetches and fetches[0].get('reason') != 'redirect_target':
            # retries: failed or deferred tries since the last success
            ok = db['status'] in (R.DB_FETCHED, R.DB_REDIRECTED, R.DB_GONE, R.DB_DENIED,
                                  R.DB_FILTERED)
            db['retries'] = 0 if ok else db.get('retries', 0) + 1
        # OPIC accounts: cash spent by this URL's fetch moves to its history; cash handed
        # to it by pages fetched in this layer is added.
        spent = db.pop('spent_cash', 0.0)
        if spent:
            db['opic_history'] = db.get('opic_history', 0.0) + spent
            db['score'] = 0.0
        if followed:
            # Followed in the fetch (jobs.lib.follow), it spent its parent's share then;
            # the same share arrives now through the parent's link: count it once.
            cash = max(0.0, cash - spent)
        db['score'] = db.get('score', 0.0) + cash
        if topic_inlinks:
            db['topic_inlinks'] = db.get('topic_inlinks', 0) + topic_inlinks
        if lastmod and lastmod > db.get('sitemap_lastmod', ''):  # UTC: sorts as time
            db['sitemap_lastmod'] = lastmod       # the newest a sitemap gave (module doc)
        self.count_record(db['status'], db)
        yield None, db

    def unless_kept(self, fetches, line):
        """*fetches* of a URL (*line*: its db record, if known), but none when all are a
        setting's no to a page of an earlier cycle, kept (recrawl.prune off:
        jobs.lib.merging.mark_kept): its record then stays what it was, so that it is
        fetched again once the setting allows it."""
        if line is not None and fetches and all(f.get('kept') for f in fetches):
            self.count(C.REFUSED_KEPT, len(fetches))
            return []
        return fetches

    def stands(self, line, known=None):
        """Does a db *line* that nothing of the layer joins stand byte for byte? When
        its URL and status read from its bytes (*known*, if the caller read them) and it
        has the fields the join sets (score, inlinks); counted as the join counts it."""
        known = known or R.db_url_status(line)
        if known is None or _SCORE not in line or _INLINKS not in line:
            return False
        self.count_record(known[1], line)
        return True

    def count_record(self, status, db):
        """Count one db record written (*db*: it, or its line) by status, and an unfetched
        one within --max-depth (a generate with none selects nothing: the driver skips
        it, OptimizerDriver.generate)."""
        self.count(C.status(C.OPTIMIZE, 'db_' + status))
        self.count(C.DB_RECORDS)
        if status == R.DB_UNFETCHED and self.options.max_depth is not None:
            depth = (orjson.loads(db) if isinstance(db, bytes) else db).get('depth')
            if depth is None or depth <= self.options.max_depth:
                self.count(C.UNFETCHED_WITHIN_DEPTH)

    def join_resource(self, db, resource, link_depth, fetched_now):
        """Mark an unfetched URL as the resource of a page; the depth it brings.

        A URL fetched already (or being fetched in this layer) is not fetched again: it
        stays what it is (counter resources_already_known_total).
        """
        depth, parent, name, max_bytes = resource
        if fetched_now or db['status'] != R.DB_UNFETCHED:
            self.count(C.RESOURCES_ALREADY_KNOWN)
            return link_depth
        if db.get('resource_of') is None:
            self.count(C.NEW_RESOURCES)
            db.update(resource_of=parent, resource_name=name, max_bytes=max_bytes)
        return depth if link_depth is None else min(depth, link_depth)

    def adapt_interval(self, db, fetch):
        """Set the URL's re-fetch interval (seconds) and whether its page changed.

        First fetch: the site's ``refetch_interval`` or ``recrawl.interval``. Each later
        fetch divides the interval by ``recrawl.factor`` when the page changed (its
        extracted-fields checksum if both fetches have one, else its content digest) and
        multiplies it when it did not (a 304 is "did not"), within
        ``recrawl.min_interval`` .. ``recrawl.max_interval``.
        """
        rc = self.conf['recrawl']
        fetched = fetch['status'] in (R.DB_FETCHED, R.DB_REDIRECTED)
        if not fetched or fetch.get('reason') == 'redirect_target':
            return
        previous = db.get('fetch_interval')
        if previous is None or db.get('last_fetch') is None:
            interval = fetch.get('refetch_interval') or rc['interval']
            fetch['changed'] = None
        else:
            if fetch.get('not_modified'):
                changed = False
            elif db.get('fields_checksum') and fetch.get('fields_checksum'):
                changed = db['fields_checksum'] != fetch['fields_checksum']
            else:
                changed = db.get('digest') != fetch.get('digest')
            interval = previous / rc['factor'] if changed else previous * rc['factor']
            fetch['changed'] = changed
            self.count(C.PAGES_CHANGED if changed else C.PAGES_UNCHANGED)
        if fetch['changed'] is not False:
            fetch['last_changed'] = fetch['last_fetch']
        fetch['fetch_interval'] = min(max(interval, rc['min_interval']), rc['max_interval'])

    def compare_fields(self, db, fetch):
        """Set ``fields_changed`` when a site page is fetched again (checksums differ)."""
        old, new = db.get('fields_checksum'), fetch.get('fields_checksum')
        if old is not None and new is not None:
            fetch['fields_changed'] = old != new
            self.count(C.FIELDS_CHANGED if old != new else C.FIELDS_UNCHANGED)


def _newer(lastmod, data):
    """The newer of *lastmod* and a link value's sitemap lastmod (its 5th item)."""
    if len(data) > 4 and data[4] and (lastmod is None or data[4] > lastmod):
        return data[4]
    return lastmod


def _new_db(url):
    """The db record of a URL the crawl database did not hold."""
    return {'kind': 'db', 'url': url, 'status': R.DB_UNFETCHED, 'depth': None,
            'first_seen': now_iso(), 'last_fetch': None, 'http_status': None,
            'digest': None, 'reason': None, 'inlinks': 0, 'layer': None}


if __name__ == '__main__':
    MROptimize.run()
