"""MRReparse (ParserDriver again): parse the stored pages anew, fetching nothing.

Reads one layer's ``page`` records (out/NNN) and writes them parsed again with this
run's settings (site rules and their fields, link filters, topic profile, main text):
``mrcrawl reparse OUT`` runs it over every layer after a site configuration changed.
A page whose fetch archived its response (warc_filename, warc_record_offset,
warc_record_length, warc_type = response: ``warc.enabled``) gets its body back from
that WARC record (a local file, or WebHDFS with the offset and length); the body is
decoded as the fetcher decoded it, so the same bytes give the same page. A page that
kept its raw bytes (``raw_body``, fetch.keep_types) is parsed from them. Every other
record (a failed fetch, a resource, a page fetched with WARC off) passes unchanged,
counted ``not_stored_total``. Map-only; one output record per input record.

Run alone::

    python -m jobs.reparse --crawl-conf crawl/conf.json --crawl-root crawl crawl/out/000 \\
        -o /tmp/out000
"""
import base64

from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, encoding, parsepage, records as R, warcfile


class MRReparse(CrawlJob):
    COUNTER_GROUP = C.REPARSE

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--crawl-root', required=True,
                              help='The crawl folder the WARC file names are relative to '
                                   '(local path or hdfs:// URI).')
        self.add_webhdfs_args('crawl folder')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_parser, mapper=self.mapper_reparse)]

    def mapper_init_parser(self):
        self.parser = parsepage.PageParser(self.conf, lambda n, a=1: self.count(n, a, C.PARSE))
        self.parse_fields = parsepage.PARSE_FIELDS

    def mapper_reparse(self, _, line):
        for page in self.records(line, 'page'):
            doc = self.stored_doc(page)
            if doc is None:
                self.count(C.NOT_STORED)
                yield None, page
                continue
            self.count(C.REPARSED)
            yield None, self.parser.parse(doc)

    def stored_doc(self, page):
        """The doc record the fetch gave the parser, rebuilt from the page and its
        stored body; None when no body was stored."""
        if page.get('status') != R.FETCH_FETCHED or page.get('resource_of') is not None:
            return None
        doc = {k: v for k, v in page.items() if k not in self.parse_fields}
        doc['kind'] = 'doc'
        if page.get('raw_body') is not None:
            return doc
        if page.get('warc_type') != 'response' or not page.get('warc_filename'):
            return None
        o = self.options
        try:
            stored = warcfile.read_payload(o.crawl_root, page, o.webhdfs_url, o.hdfs_user)
        except Exception as e:    # a lost or damaged file costs this page's reparse only
            self.count(C.per('warc_unreadable', type(e).__name__))
            return None
        if stored is None:
            return None
        data, ctype = stored
        ctype = ctype or page.get('content_type')
        if encoding.is_html(encoding.mime(ctype)):
            doc['body'], doc['encoding'] = encoding.decode(data, ctype)
        else:
            doc['raw_body'] = base64.b64encode(data).decode('ascii')
        return doc


if __name__ == '__main__':
    MRReparse.run()
