"""Topical focus: a page's relevance to a weighted keyword/regex profile.

The profile is ``topic.terms``, a list of strings ``TERM`` or ``TERM=WEIGHT``
(weight 1 when omitted; negative weights push a page off topic): a plain term matches
as a whole word or phrase, case-insensitively; ``re:PATTERN`` is a regular expression
(case-insensitive). The relevance of a page is

    sum over terms of  weight * log2(1 + title_weight * hits_in_title + hits_in_text)

so the first mentions count most and a long page cannot win by repetition alone. A
page is on topic when its relevance is at least ``topic.min_score``. No terms: no
topical focus (every page is neither on nor off topic).
"""
import math
import re

from jobs.lib.choices import CHOICES

LINK_POLICIES = CHOICES['topic.off_topic_links']


class TopicError(ValueError):
    """A topic setting is invalid; the message names the key."""


def parse_term(text):
    """``'re:crawl(er|ing)=2.5'`` -> (compiled regex, 2.5)."""
    term, weight = text, 1.0
    head, sep, tail = text.rpartition('=')
    if sep and head:
        try:
            weight = float(tail)
            term = head
        except ValueError:
            pass
    if term.startswith('re:'):
        pattern = term[3:]
    else:
        words = term.split()
        if not words:
            raise TopicError('topic.terms: empty term in %r' % text)
        pattern = r'(?<!\w)' + r'\s+'.join(re.escape(w) for w in words) + r'(?!\w)'
    try:
        return re.compile(pattern, re.I), weight
    except re.error as e:
        raise TopicError('topic.terms: bad regular expression in %r: %s' % (text, e))


class Profile:
    """A compiled topic profile."""

    def __init__(self, terms, min_score=1.0, title_weight=2.0, off_topic_links='follow',
                 depth_penalty=1):
        self.terms = [parse_term(t) for t in terms]
        self.min_score = min_score
        self.title_weight = title_weight
        if off_topic_links not in LINK_POLICIES:
            raise TopicError('topic.off_topic_links must be one of %s, got %r' % (
                ', '.join(LINK_POLICIES), off_topic_links))
        self.off_topic_links = off_topic_links
        self.depth_penalty = depth_penalty

    @classmethod
    def from_conf(cls, section):
        """The profile of a resolved ``[topic]`` section, or None when it has no terms."""
        if not section or not section.get('terms'):
            return None
        return cls(section['terms'], section['min_score'], section['title_weight'],
                   section['off_topic_links'], section['off_topic_depth_penalty'])

    def score(self, title, text):
        """Relevance of a page from its title and visible text."""
        title = title or ''
        text = text or ''
        total = 0.0
        for rx, weight in self.terms:
            hits = self.title_weight * len(rx.findall(title)) + len(rx.findall(text))
            if hits:
                total += weight * math.log2(1 + hits)
        return total
