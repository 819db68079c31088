"""SimHash fingerprints and their banding, for near-duplicate detection in MRMerge.

A page's fingerprint is Charikar's SimHash over the word shingles of its text: every
shingle (``shingle_words`` consecutive lower-cased words) is hashed to 64 bits
(BLAKE2b, so the value is the same in every process and on every node); bit *i* of the
fingerprint is 1 when more shingles have bit *i* set than not. Similar texts get
fingerprints that differ in few bits (Hamming distance), as Manku, Jain and Das Sarma
used it for web pages (WWW 2007: 64 bits, distance <= 3).

Banding: cut the 64 bits into ``k + 1`` bands. Two fingerprints that differ in at most
``k`` bits agree exactly on at least one band (pigeonhole), so keying every page by
``(band index, band bits)`` brings every such pair into one reduce group, and no
all-pairs comparison is made anywhere. Pairs that meet in a bucket are candidates only:
they are verified on the whole fingerprint.
"""
import hashlib
import re

BITS = 64
_WORD_RE = re.compile(r'\w+', re.UNICODE)


def words(text):
    """Lower-cased words of *text* (Unicode word characters)."""
    return _WORD_RE.findall(text.lower()) if text else []


def _hash64(shingle):
    return int.from_bytes(hashlib.blake2b(shingle.encode('utf-8'), digest_size=8).digest(),
                          'big')


def simhash(text, shingle_words=3):
    """64-bit SimHash (int) of *text* over shingles of *shingle_words* words.

    A text shorter than one shingle is one shingle. Each shingle counts as often as it
    occurs (term-frequency weights). The per-bit vote is counted on the hashes' binary
    strings, joined: slicing every 64th character is a C loop, not 64 Python loops.
    """
    w = words(text)
    if not w:
        return 0
    n = max(1, len(w) - shingle_words + 1)
    hashes = [_hash64(' '.join(w[i:i + shingle_words])) for i in range(n)]
    joined = ''.join(format(h, '064b') for h in hashes)
    half = len(hashes) / 2
    value = 0
    for i in range(BITS):     # character i of each 64-char string is bit 63 - i
        if joined[i::BITS].count('1') > half:
            value |= 1 << (BITS - 1 - i)
    return value


def distance(a, b):
    """Hamming distance of two fingerprints."""
    return (a ^ b).bit_count()


def to_hex(value):
    """A fingerprint as 16 hex digits (JSON numbers lose precision past 2**53 elsewhere)."""
    return '%016x' % value


def from_hex(text):
    return int(text, 16)


def band_bounds(max_distance):
    """``[(shift, width), ...]``: the ``max_distance + 1`` bands covering the 64 bits."""
    n = max_distance + 1
    if not 1 <= n <= BITS:
        raise ValueError('max_distance must be 0..%d, got %r' % (BITS - 1, max_distance))
    base, extra = divmod(BITS, n)
    bounds, shift = [], 0
    for i in range(n):
        width = base + (1 if i < extra else 0)
        bounds.append((shift, width))
        shift += width
    return bounds


def bands(value, max_distance):
    """``[(band index, band bits), ...]`` of a fingerprint: its keys for the shuffle."""
    return [(i, (value >> shift) & ((1 << width) - 1))
            for i, (shift, width) in enumerate(band_bounds(max_distance))]


def first_common_band(a, b, max_distance):
    """Index of the first band where *a* and *b* agree, or None.

    A verified pair meets in every band it shares; only the bucket of the first one
    reports it, so each pair is found once without a de-duplication step.
    """
    for (i, x), (_, y) in zip(bands(a, max_distance), bands(b, max_distance)):
        if x == y:
            return i
    return None
