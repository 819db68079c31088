"""Secrets in settings: written as references, read where the request is made.

A password, a cookie or a credential header never sits in the settings themselves,
which a crawl writes to OUT/conf.json and report.json. It is written as a reference:

    ${NAME}             the environment variable NAME
    ${file:/abs/path}   the file's contents, surrounding white space stripped

The references stay in the settings; :func:`expand` replaces them in the task that
sends the request. :func:`check` (the driver, at start) says in one line what is
missing where the driver runs.
"""
import os
import re

_REF_RE = re.compile(r'\$\{(file:(/[^}]*)|[A-Za-z_][A-Za-z0-9_]*)\}')


class SecretError(ValueError):
    """A reference that cannot be read: the message names it, never its value."""


def references(text):
    """The references in *text*: ``NAME`` or ``file:/path`` strings, in order."""
    return [m.group(1) for m in _REF_RE.finditer(text)]


def is_reference(text):
    """Is *text* made of references only (no literal secret)?"""
    return bool(text) and _REF_RE.sub('', text) == ''


def masked(text):
    """*text* with each reference replaced by a token of letters and digits (so that a
    URL holding ``${file:/path}`` still parses as one), and a function that puts the
    references back into a part of it."""
    refs = []

    def token(m):
        refs.append(m.group(0))
        return 'mrcrawlref%dx' % (len(refs) - 1)

    text = _REF_RE.sub(token, text)
    return text, lambda part: re.sub(r'mrcrawlref(\d+)x', lambda m: refs[int(m.group(1))],
                                     part)


def _value(ref):
    if ref.startswith('file:'):
        try:
            with open(ref[5:], encoding='utf-8') as f:
                return f.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise SecretError('${%s}: cannot read the file (%s)' % (ref, e.strerror or e))
    value = os.environ.get(ref)
    if value is None:
        raise SecretError('${%s}: the environment variable is not set' % ref)
    return value


def expand(text):
    """*text* with its references replaced by their values (SecretError if one is
    missing)."""
    return _REF_RE.sub(lambda m: _value(m.group(1)), text)


def check(text, where):
    """Raise SecretError naming *where* (a setting) when a reference of *text* cannot be
    read here."""
    try:
        expand(text)
    except SecretError as e:
        raise SecretError('%s: %s' % (where, e)) from None
