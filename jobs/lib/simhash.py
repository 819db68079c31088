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

import numpy

BITS = 64
_WORD_RE = re.compile(r'\w+', re.UNICODE)


def words(text):
    """Lower-cased words of *text* (Unicode word characters)."""
    return _WORD_RE.findall(text.lower()) if text else []


def simhash(text, shingle_words=3):
    """64-bit SimHash (int) of *text* over shingles of *shingle_words* words."""
    return simhash_words(words(text), shingle_words)


def simhash_words(w, shingle_words=3):
    """64-bit SimHash (int) of the word list *w* (see :func:`words`).

    A text shorter than one shingle is one shingle. Each shingle counts as often as it
    occurs (term-frequency weights). The per-bit vote runs in numpy: the shingles'
    8-byte big-endian digests are unpacked into a (shingles x 64) bit matrix, most
    significant bit first, and summed per column.
    """
    if not w:
        return 0
    n = max(1, len(w) - shingle_words + 1)
    if shingle_words == 3 and len(w) >= 3:
        shingles = map(' '.join, zip(w, w[1:], w[2:]))
    else:
        shingles = (' '.join(w[i:i + shingle_words]) for i in range(n))
    blake2b = hashlib.blake2b
    digests = b''.join([blake2b(s.encode('utf-8'), digest_size=8).digest()
                        for s in shingles])
    bits = numpy.unpackbits(numpy.frombuffer(digests, dtype=numpy.uint8).reshape(n, 8),
                            axis=1)
    vote = (bits.sum(axis=0, dtype=numpy.int64) * 2 > n).astype(numpy.uint8)
    return int.from_bytes(numpy.packbits(vote).tobytes(), 'big')


def fingerprint(text, shingle_words=3):
    """``{'simhash': hex or None, 'words': N, 'shingle_words': k}`` of *text*: what a
    page record carries (PageParser) so that MRMerge need not hash its text again. The
    word count lets the merge apply merge.min_words; *shingle_words* tells it whether
    the value was made with its setting."""
    w = words(text)
    return {'simhash': to_hex(simhash_words(w, shingle_words)) if w else None,
            'words': len(w), 'shingle_words': shingle_words}


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
