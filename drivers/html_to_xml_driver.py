"""HtmlToXmlDriver: one XML document per merged page (the design's HtmlToXmlDriver).

    xml        merged/               -> xml/             (the documents downstream
                                                          indexers read; schema in docs/:
                                                          written by the merge join's
                                                          tasks, MergeDriver.merge_join,
                                                          else here by MRHtmlToXml)
    delta xml  delta/BUILD/records   -> delta/BUILD/xml  (MRHtmlToXml: what changed
                                                          since the last build, with
                                                          deletion documents)
"""
from jobs.html_to_xml import MRHtmlToXml


class HtmlToXmlDriver:
    def __init__(self, crawl):
        self.crawl = crawl

    def xml(self):
        c = self.crawl
        return c.run_step('xml', MRHtmlToXml, [c.path('merged')], c.path('xml'))

    def delta(self, build, records):
        c = self.crawl
        xml = c.fs.join(c.path('delta', build), 'xml')
        step = c.run_step('delta-%s-xml' % build, MRHtmlToXml, [records], xml)
        c.progress('delta documents: %s' % xml)
        return step
