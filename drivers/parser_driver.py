"""ParserDriver: a layer's parse (the design's ParserDriver).

    parse    doc/L -> out/L          (MRParse: links, fields, text; fetch.parse = false)
    reparse  out/L -> out/L          (MRReparse: `mrcrawl reparse`, from the stored
                                      bodies, fetching nothing)

With fetch.parse on (the default) the fetch job parses each page as it arrives and
writes out/L itself, so a layer has no parse job and no doc/: the parse then runs
inside CrawlerDriver's fetch (Nutch's ``fetcher.parse``), and :meth:`ParserDriver.parse`
has nothing to do. Either way ParserDriver decides (:meth:`fused`) and names the
folders: where the fetch writes (:meth:`fetch_output`) and which the crawl makes.
"""
from drivers.folder import layout
from drivers.folder.cycles import layer_name
from jobs.lib import counters as C
from jobs.parse import MRParse
from jobs.reparse import MRReparse


class ParserDriver:
    def __init__(self, crawl):
        self.crawl = crawl

    def folders(self):
        """The folders the crawl makes for the parse: out/, and doc/ for a separate one."""
        return (layout.PAGES,) if self.crawl.conf['fetch']['parse'] else \
            (layout.PAGES, layout.DOC)

    def fused(self, layer):
        """Whether layer *layer*'s fetch parses: fetch.parse is on, and no doc/L of a run
        that fetched it without parsing is there to parse (the setting changed while
        the layer was under way: its fetched pages are parsed, not fetched again)."""
        c = self.crawl
        return c.conf['fetch']['parse'] and not c.fs.exists(c.path(layout.DOC, layer_name(layer)))

    def fetch_output(self, layer, fused=None):
        """Where layer *layer*'s fetch writes: out/L when it parses (*fused*: what
        :meth:`fused` said, if the caller asked already), else doc/L."""
        fused = self.fused(layer) if fused is None else fused
        return self.crawl.path(layout.PAGES if fused else layout.DOC, layer_name(layer))

    def parse(self, layer, steps):
        """doc/L -> out/L, unless the fetch parsed (no doc/L)."""
        c, L = self.crawl, layer_name(layer)
        if c.fs.exists(c.path(layout.DOC, L)):
            c.layer_step(steps, 'parse', 'parse-' + L, MRParse, [c.path(layout.DOC, L)],
                         c.path(layout.PAGES, L), ['--layer', str(layer)])

    def reparse(self, build):
        """Every layer's out/ parsed again from its stored bodies (MRReparse) into
        reparsed/, then swapped in once all layers are done."""
        c = self.crawl
        layers = [n for n in c.fs.listdir(c.path(layout.PAGES)) if n.isdigit()]
        c.progress('reparse: %d layer(s) from the stored pages, as %s' % (len(layers), build))
        # The crawl folder the WARC file names are relative to.
        args = c.task_path_args('--crawl-root', c.out)
        for L in layers:
            step = c.run_step('reparse-%s-%s' % (build, L), MRReparse, [c.path(layout.PAGES, L)],
                              c.path(layout.REPARSED, L), args)
            n = step['counters'].get(C.REPARSE, {})
            c.progress('  layer %s: %d page(s) parsed again, %d without a stored body' % (
                L, n.get(C.REPARSED, 0), n.get(C.NOT_STORED, 0)))
        for L in layers:      # every layer parsed: swap them in
            if c.fs.exists(c.path(layout.REPARSED, L)):
                c.fs.rm(c.path(layout.PAGES, L))
                c.fs.rm(c.path(layout.META, L))    # the old parse's: the update reads out/L
                c.fs.rename(c.path(layout.REPARSED, L), c.path(layout.PAGES, L))
        c.fs.rm(c.path(layout.REPARSED))
