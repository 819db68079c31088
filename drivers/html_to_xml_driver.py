"""HtmlToXmlDriver: one XML document per merged page (the design's HtmlToXmlDriver).

    xml        merged/               -> xml/             (the documents downstream
                                                          indexers read; schema in docs/:
                                                          written by the merge join's
                                                          tasks, MergeDriver.merge_join,
                                                          else here by MRHtmlToXml)
    delta xml  delta/BUILD/records   -> delta/BUILD/xml  (MRHtmlToXml: what changed
                                                          since the last build, with
                                                          deletion documents)

HtmlToXmlDriver owns xml/ however it is made: by default the merge join's tasks write
each page's document as they make its merged record (:meth:`join_args`), so that no job
reads merged/ again; the driver then records their counters as the xml step
(:meth:`joined`) and installs the folder (:meth:`install`), and :meth:`xml` finds it
made.
"""
from drivers.folder import layout
from drivers.runtime.part_files import install_side
from jobs.html_to_xml import MRHtmlToXml
from jobs.lib import counters as C


class HtmlToXmlDriver:
    def __init__(self, crawl):
        self.crawl = crawl

    def join_args(self, side):
        """The merge join's option that has its tasks write xml/ into *side*."""
        return self.crawl.task_path_args('--xml-dir', side)

    def joined(self, counters):
        """The xml step of a join that wrote the documents: their *counters* (the xml
        group of the join's)."""
        self.crawl.report.save_step('xml', {'seconds': 0.0, 'made_by': 'mergejoin',
                                            'counters': {C.XML: counters}})

    def install(self, side):
        """The join's documents (*side*; a folder no task wrote: empty) as xml/, unless an
        interrupted run installed them already."""
        install_side(self.crawl, side, self.crawl.path(layout.XML))

    def xml(self):
        """merged/ -> xml/ by MRHtmlToXml, unless xml/ is there (the join wrote it)."""
        c = self.crawl
        return c.run_step('xml', MRHtmlToXml, [c.path(layout.MERGED)], c.path(layout.XML))

    def delta(self, build, records):
        c = self.crawl
        xml = c.path(layout.delta_part(build, layout.DELTA_XML))
        step = c.run_step('delta-%s-xml' % build, MRHtmlToXml, [records], xml)
        c.progress('delta documents: %s' % xml)
        return step
