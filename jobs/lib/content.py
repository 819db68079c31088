"""Content types as plug-ins: a parser turns one content type's bytes into a page's fields.

HTML is parsed by jobs.lib.parsepage itself; every other type the crawl reads has a
parser named in ``parse.parsers``: a built-in name (``text``, ``pdf``) or
``"package.module:Class"`` for one of your own. A parser is a class with::

    name = 'pdf'                    # counters: content_pdf_total, content_pdf_error_*
    types = ('application/pdf',)    # the MIME types it reads: their bodies are kept
    extensions = ('pdf',)           # links ending so pass filter.deny_extensions
    sandbox = True                  # parse in a child process with the time and memory
                                    # limits below (for C libraries fed hostile bytes)

    def parse(self, data, url, limits):   # bytes, the page's URL, conf['parse']
        return {'title': str or None, 'text': str,
                'links': [{'url': absolute or relative, 'text': anchor text}]}

A parser raises for a document it cannot read: the page keeps its fetch metadata and
names the error (``parse_error``), as an HTML parse failure does. So a new type needs no
edit in parsepage.py, the fetch or the link filter: registering it is enough.

Sandboxed parsers run in a forked child per document, limited to
``parse.parser_seconds`` of wall time and ``parse.parser_memory_mb`` of address space
beyond the task's own: a compression bomb or a pathological file costs that document,
never the task.

Pure helper; nothing here imports mrjob.
"""
import faulthandler
import importlib
import os
import resource
import select
import signal
import time

import orjson

from jobs.lib import encoding

BUILTIN = {'text': 'jobs.lib.content:TextParser', 'pdf': 'jobs.lib.pdfparse:PdfParser'}


class ParserError(Exception):
    """A document its parser could not read (the message says why, in a few words)."""


class TextParser:
    """text/plain: the decoded text, whitespace folded; no title, no links (as Nutch's
    parse-text)."""
    name = 'text'
    types = ('text/plain',)
    extensions = ('txt',)
    sandbox = False

    def parse(self, data, url, limits):
        text, _ = encoding.decode(data, 'text/plain')
        return {'title': None, 'text': ' '.join(text.split())[:limits['max_text_chars']],
                'links': []}


def load(name):
    """The parser class *name* names (a BUILTIN name or ``module:Class``); ValueError
    with the reason when it cannot be loaded or lacks the interface."""
    target = BUILTIN.get(name, name)
    module, _, attr = target.partition(':')
    if not module or not attr:
        raise ValueError('%r is neither a built-in parser (%s) nor "module:Class"' % (
            name, ', '.join(sorted(BUILTIN))))
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError('cannot load parser %r: %s' % (name, e))
    for field in ('name', 'types', 'extensions', 'parse'):
        if not hasattr(cls, field):
            raise ValueError('parser %r has no %r' % (name, field))
    return cls


class Registry:
    """The parsers of ``parse.parsers``, by MIME type."""

    _cache = {}

    def __init__(self, names):
        self.parsers = [load(n)() for n in names]
        self.by_type = {}
        for p in self.parsers:
            for t in p.types:
                self.by_type.setdefault(t.lower(), p)

    @classmethod
    def for_conf(cls, conf):
        names = tuple(conf['parse']['parsers'])
        if names not in cls._cache:
            cls._cache[names] = cls(names)
        return cls._cache[names]

    def types(self):
        return tuple(self.by_type)

    def extensions(self):
        return frozenset(e.lower().lstrip('.') for p in self.parsers for e in p.extensions)

    def parse(self, parser, data, url, limits):
        """*parser*'s fields of *data*, sandboxed if it asks to be: ParserError when the
        document cannot be read (its parser raised, ran out of time or memory)."""
        if not getattr(parser, 'sandbox', False):
            try:
                return parser.parse(data, url, limits)
            except ParserError:
                raise
            except Exception as e:
                raise ParserError(type(e).__name__)
        return sandboxed(parser.parse, (data, url, limits), limits['parser_seconds'],
                         limits['parser_memory_mb'])


def _virtual_bytes():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[0]) * os.sysconf('SC_PAGE_SIZE')


def _max_fd():
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return limit if limit != resource.RLIM_INFINITY else 1 << 16


def sandboxed(fn, args, seconds, memory_mb):
    """``fn(*args)`` in a forked child allowed *seconds* and *memory_mb* MB of address
    space beyond this process's; its JSON-able result, or ParserError('timeout' |
    'memory' | 'died_sigabrt'... | the exception's name)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the child: never returns
        status = 0
        try:
            # Only the pipe to the parent stays open: a child forked by one fetch thread
            # must not hold another thread's pipe (that thread would wait for its EOF
            # until this child ends) or any socket of the task.
            os.closerange(3, w)
            os.closerange(w + 1, _max_fd())
            # A parser that aborts here is an outcome the parent reports, not a crash
            # to dump on the task's stderr.
            faulthandler.disable()
            limit = _virtual_bytes() + (int(memory_mb) << 20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.alarm(int(seconds) + 2)         # a backstop if the parent is gone
            try:
                out = orjson.dumps({'ok': fn(*args)})
            except MemoryError:
                out = orjson.dumps({'error': 'memory'})
            except ParserError as e:
                out = orjson.dumps({'error': str(e) or 'unreadable'})
            except Exception as e:
                out = orjson.dumps({'error': type(e).__name__})
            view = memoryview(out)
            while view:
                view = view[os.write(w, view):]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(w)
    chunks, deadline, timed_out = [], time.monotonic() + seconds, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                timed_out = True
                break
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        raise ParserError('timeout')
    try:
        result = orjson.loads(b''.join(chunks))
    except orjson.JSONDecodeError:
        # No answer: the child died (a library that aborts when the memory limit makes
        # an allocation fail, or crashes on the file).
        raise ParserError('died_%s' % signal.Signals(os.WTERMSIG(status)).name.lower()
                          if os.WIFSIGNALED(status) else 'died')
    if 'error' in result:
        raise ParserError(result['error'])
    return result['ok']
