"""Tiny helper package for the Hadoop smoke job.

Deliberately NOT installed anywhere: the smoke job ships it to the task nodes
as a zip with mrjob's ``py_files`` option.
"""
import re

_WORD_RE = re.compile(r"[a-z0-9']+")


def words(text):
    return _WORD_RE.findall(text.lower())


def url_host(url):
    """Host of an absolute URL, via ada_url (a third-party C extension that
    reaches the task nodes only through the shipped deps archive)."""
    import ada_url  # imported lazily so a missing dep is reported, not fatal

    return ada_url.URL(url).hostname
