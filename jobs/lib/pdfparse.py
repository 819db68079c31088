"""PDF documents (parse.parsers "pdf"): title, text and links, with PDFium.

PDFium (pypdfium2's bindings) is Chrome's PDF engine: C++, fast, and made for hostile
files. It runs sandboxed (jobs.lib.content): a truncated, encrypted or malformed file
raises, a compression bomb meets the memory limit, a slow one the time limit.

- title: the document's Title metadata, else None;
- text: the text of its first ``parse.pdf_max_pages`` pages, whitespace folded, cut at
  ``parse.max_text_chars``;
- links: the URI actions of its link annotations (the PDF's own hyperlinks), then URLs
  written in its text (PDFium's web-link detection), anchor text empty.

Pure helper; nothing here imports mrjob.
"""
import ctypes
import re

from jobs.lib.content import ParserError


class PdfParser:
    name = 'pdf'
    types = ('application/pdf',)
    extensions = ('pdf',)
    sandbox = True

    def parse(self, data, url, limits):
        # lazy: pdfium only in the sandboxed child that parses a PDF
        import pypdfium2 as pdfium
        import pypdfium2.raw as raw
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as e:
            # "Incorrect password", "Data format error"...: PDFium's own words.
            words = re.findall(r'[a-z]+', str(e).lower())
            raise ParserError('pdf_' + '_'.join(words[-2:]))
        try:
            title = (pdf.get_metadata_value('Title') or '').strip() or None
            texts, links, chars = [], [], limits['max_text_chars']
            for i in range(min(len(pdf), limits['pdf_max_pages'])):
                page = pdf[i]
                textpage = page.get_textpage()
                if chars > 0:
                    text = ' '.join(textpage.get_text_range().split())
                    texts.append(text[:chars])
                    chars -= len(text) + 1
                links.extend(_annotation_links(raw, pdf, page))
                links.extend(_text_links(raw, textpage))
                textpage.close()
                page.close()
        finally:
            pdf.close()
        seen, unique = set(), []
        for link in links:
            if link not in seen:
                seen.add(link)
                unique.append({'url': link, 'text': ''})
        return {'title': title, 'text': ' '.join(texts)[:limits['max_text_chars']],
                'links': unique}


def _annotation_links(raw, pdf, page):
    pos, link = ctypes.c_int(0), raw.FPDF_LINK()
    while raw.FPDFLink_Enumerate(page.raw, ctypes.byref(pos), ctypes.byref(link)):
        action = raw.FPDFLink_GetAction(link)
        if not action or raw.FPDFAction_GetType(action) != raw.PDFACTION_URI:
            continue
        n = raw.FPDFAction_GetURIPath(pdf.raw, action, None, 0)
        if n <= 1:
            continue
        buf = ctypes.create_string_buffer(n)
        raw.FPDFAction_GetURIPath(pdf.raw, action, buf, n)
        yield buf.value.decode('latin-1').strip()


def _text_links(raw, textpage):
    weblinks = raw.FPDFLink_LoadWebLinks(textpage.raw)
    if not weblinks:
        return
    try:
        for i in range(raw.FPDFLink_CountWebLinks(weblinks)):
            n = raw.FPDFLink_GetURL(weblinks, i, None, 0)
            if n <= 1:
                continue
            buf = (ctypes.c_ushort * n)()
            raw.FPDFLink_GetURL(weblinks, i, buf, n)
            yield bytes(buf)[:2 * (n - 1)].decode('utf-16-le', 'replace').strip()
    finally:
        raw.FPDFLink_CloseWebLinks(weblinks)
