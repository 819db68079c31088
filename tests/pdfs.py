"""Small PDF files written byte by byte for the tests: pages of text, URI links, and
the hostile kinds (truncated, encrypted, a compression bomb, many pages)."""
import zlib


def _escape(text):
    return text.replace('\\', '\\\\').replace('(', '\\(').replace(')', '\\)')


def make_pdf(pages, title=None, links=(), encrypted=False, bomb_mb=0):
    """A PDF whose page i shows the text pages[i] (Helvetica) and whose first page has a
    link annotation per URL of *links*. *encrypted*: a standard security handler whose
    password nobody knows. *bomb_mb*: the first page's content stream inflates to that
    many MB of spaces (a few hundred KB in the file)."""
    objs = {1: b'<< /Type /Catalog /Pages 2 0 R >>',
            3: b'<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'}
    kids, n = [], 4
    for i, text in enumerate(pages):
        page, content = n, n + 1
        n += 2
        annots = b''
        if i == 0 and links:
            refs = []
            for url in links:
                objs[n] = (b'<< /Type /Annot /Subtype /Link /Rect [72 600 300 620] '
                           b'/Border [0 0 0] /A << /S /URI /URI (' + url.encode() + b') >> >>')
                refs.append(b'%d 0 R' % n)
                n += 1
            annots = b' /Annots [' + b' '.join(refs) + b']'
        objs[page] = (b'<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources '
                      b'<< /Font << /F1 3 0 R >> >> /Contents %d 0 R' % content + annots + b' >>')
        stream = b'BT /F1 12 Tf 72 720 Td (' + _escape(text).encode('latin-1') + b') Tj ET'
        if i == 0 and bomb_mb:
            z = zlib.compressobj(9)
            data = z.compress(stream + b'\n')
            chunk = b' ' * (1 << 20)
            for _ in range(bomb_mb):
                data += z.compress(chunk)
            data += z.flush()
            objs[content] = b'<< /Length %d /Filter /FlateDecode >>\nstream\n' % len(data) + \
                data + b'\nendstream'
        else:
            objs[content] = b'<< /Length %d >>\nstream\n' % len(stream) + stream + \
                b'\nendstream'
        kids.append(b'%d 0 R' % page)
    objs[2] = b'<< /Type /Pages /Kids [' + b' '.join(kids) + b'] /Count %d >>' % len(kids)
    trailer_extra = b''
    if title is not None:
        objs[n] = b'<< /Title (' + _escape(title).encode('latin-1') + b') >>'
        trailer_extra += b' /Info %d 0 R' % n
        n += 1
    if encrypted:
        objs[n] = (b'<< /Filter /Standard /V 1 /R 2 /O <' + b'41' * 32 + b'> /U <' +
                   b'42' * 32 + b'> /P -4 >>')
        trailer_extra += b' /Encrypt %d 0 R /ID [<0123456789abcdef> <0123456789abcdef>]' % n
        n += 1
    out = bytearray(b'%PDF-1.4\n%\xe2\xe3\xcf\xd3\n')
    offsets = {}
    for num in sorted(objs):
        offsets[num] = len(out)
        out += b'%d 0 obj\n' % num + objs[num] + b'\nendobj\n'
    xref = len(out)
    out += b'xref\n0 %d\n0000000000 65535 f \n' % (n)
    for num in range(1, n):
        out += b'%010d 00000 n \n' % offsets[num]
    out += b'trailer\n<< /Size %d /Root 1 0 R' % n + trailer_extra + \
        b' >>\nstartxref\n%d\n%%%%EOF\n' % xref
    return bytes(out)
