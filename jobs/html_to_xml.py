"""MRHtmlToXml (HtmlToXmlDriver): one XML document per merged page.

Reads ``merged`` records (merged/) and writes xml/part-*: one line per page, the page
URL, a TAB, then the page as a one-line XML document (conf/page.xsd) that parses alone.
A re-crawl's ``deletion`` records become ``<deletion>`` documents (same schema file).
A map-only job.

Run alone::

    python -m jobs.html_to_xml --crawl-conf crawl/conf.json crawl/merged -o /tmp/xml
"""
from mrjob.protocol import BytesProtocol
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, xmlpage


class MRHtmlToXml(CrawlJob):
    COUNTER_GROUP = C.XML
    OUTPUT_PROTOCOL = BytesProtocol      # url<TAB>xml, both UTF-8 bytes

    def steps(self):
        return [MRStep(mapper=self.mapper_to_xml)]

    def mapper_to_xml(self, _, line):
        """merged line -> (url, one-line XML)."""
        for page in self.records(line, 'merged', 'deletion'):
            if page['kind'] == 'deletion':    # from a re-crawl: the page is gone
                self.count(C.XML_DELETIONS)
            else:
                self.count(C.XML_DOCS)
            yield xmlpage.doc_key_value(page)


if __name__ == '__main__':
    MRHtmlToXml.run()
