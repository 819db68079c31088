"""Balancing fetch lists by predicted cost (pure helpers for MRPlanFetch and MRFetch).

Hash partitioning spreads politeness keys evenly by *number*, but a layer takes as
long as its slowest reducer, and one key costs about URL count x (delay + latency)
seconds, so two big hosts hashed together double the layer's time. MRPlanFetch counts
URLs per key over the whole layer and places the big keys with LPT (largest first, on
the least-loaded reducer); small keys, whose sum is spread evenly by hashing anyway,
are left to the hash and counted as an even base load on every reducer.

How a key reaches its planned reducer: MRFetch writes the shuffle key as plain text
``LABEL KEY`` and, on Hadoop, partitions with ``KeyFieldBasedPartitioner -k1,1`` and
``mapreduce.map.output.key.field.separator`` = space, i.e. by the hash of LABEL alone.
:func:`label_for` picks a LABEL whose hash lands on the wanted reducer, computing the
hash exactly as that partitioner does (:func:`kfbp_partition`). Keys without a label
(no space) hash over the whole key, as before.

mrjob's inline and local runners ignore partitioners and the reduce count: they sort
the map output by key and cut it into about 2 x CPU byte-sized splits at key
boundaries, so there the balance is by bytes (about URL count) and the labels only
keep each planned bin contiguous. Both paths keep one key in one reducer call.
"""
import heapq

LABEL_PREFIX = 'p'


def kfbp_hash(text):
    """Hadoop KeyFieldBasedPartitioner's hash of one key field (Java int arithmetic)."""
    h = 0
    for b in text.encode('utf-8'):
        if b > 127:
            b -= 256                      # Java bytes are signed
        h = (31 * h + b) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kfbp_partition(key, n):
    """The reducer Hadoop gives the text key *key* (fields split by spaces, ``-k1,1``)."""
    if not key:
        return 0
    return (kfbp_hash(key.split(' ', 1)[0]) & 0x7FFFFFFF) % n


_LABELS = {}


def label_for(partition, n):
    """The shortest ``p<number>`` label that KeyFieldBasedPartitioner sends to *partition*."""
    if (partition, n) not in _LABELS:
        i = 0
        while True:
            label = '%s%d' % (LABEL_PREFIX, i)
            if kfbp_partition(label, n) == partition:
                _LABELS[(partition, n)] = label
                break
            i += 1
    return _LABELS[(partition, n)]


def place(costs, n, min_share=0.01):
    """``{key: partition}`` for the keys worth placing, and the predicted load per reducer.

    *costs* maps each politeness key to its predicted seconds. Keys costing at least
    *min_share* of a fair share (total / n) are placed largest first on the reducer with
    the least load, on top of an even base load for the small keys left to hashing.
    """
    total = sum(costs.values())
    if not costs or n < 1:
        return {}, [0.0] * max(n, 0)
    threshold = min_share * total / n
    big = sorted(((c, k) for k, c in costs.items() if c >= threshold), reverse=True)
    small_total = total - sum(c for c, _ in big)
    heap = [(small_total / n, p) for p in range(n)]
    heapq.heapify(heap)
    placed = {}
    for cost, key in big:
        load, p = heapq.heappop(heap)
        placed[key] = p
        heapq.heappush(heap, (load + cost, p))
    loads = [0.0] * n
    for load, p in heap:
        loads[p] = load
    return placed, loads
