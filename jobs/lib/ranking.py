"""How MRGenerate ranks a layer's candidates (pure helpers): the priority each
``generate.strategy`` gives one, and the best N of a stream held in N slots.

A candidate travels as [depth, url, inlinks, topic_inlinks, score, pagerank, extra]
(jobs/generate.py).
"""
import heapq


def priority(cand, strategy, topic_weight=0.0, host_weight=0.0):
    """Sort key of a candidate: the smallest come first. Its first item is minus the
    candidate's value (the url record's ``priority``)."""
    depth, url, inlinks, topic_inlinks, score, pagerank = cand[:6]
    if strategy == 'backlinks':
        value = float(inlinks)
    elif strategy == 'opic':
        value = score or 0.0
    elif strategy == 'pagerank':
        value = pagerank or 0.0
    elif strategy == 'major_site':
        value = host_weight
    else:
        value = 1.0 / (1 + depth)
    if topic_weight and inlinks:
        value *= 1 + topic_weight * topic_inlinks / inlinks
    return (-value, depth, -inlinks, url)


def keep_best(items, cap):
    """(n seen, the *cap* smallest of (key, value) *items*), holding at most *cap*."""
    best, n = [], 0
    for item in items:
        n += 1
        if len(best) < cap:
            heapq.heappush(best, _Neg(item))
        elif item[0] < best[0].item[0]:
            heapq.heapreplace(best, _Neg(item))
    return n, [neg.item for neg in best]


class _Neg:
    """Reverses the order of *item*, so heapq's min-heap keeps the *cap* smallest items."""
    __slots__ = ('item',)

    def __init__(self, item):
        self.item = item

    def __lt__(self, other):
        return other.item[0] < self.item[0]
