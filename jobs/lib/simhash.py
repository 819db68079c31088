"""SimHash fingerprints and their banding, for near-duplicate detection in MRMerge.

A page's fingerprint is Charikar's SimHash over the word shingles of its text: every
shingle (``shingle_words`` consecutive lower-cased words) is hashed to 64 bits; bit *i*
of the fingerprint is 1 when more shingles have bit *i* set than not. Similar texts get
fingerprints that differ in few bits (Hamming distance), as Manku, Jain and Das Sarma
used it for web pages (WWW 2007: 64 bits, distance <= 3).

Shingle hashes (version ``HASH_VERSION``), all in numpy over the whole page, with no
Python loop over its words: the lower-cased text is read as Unicode code points; word
characters are exactly those of the regular expression ``\\w`` (ASCII from a table, the
page's other distinct characters asked of ``re`` once each); a word's hash is the
splitmix64 finaliser of its polynomial hash ``sum(cp[i] * P**i)`` modulo 2**64 (from
prefix sums and the inverse powers of the odd ``P``: the same value in every process
and on every node); a shingle's hash is the finaliser of
``sum(word_hash[j] * MULTIPLIERS[j])`` modulo 2**64 over its words, so word order counts
and every bit depends on every word. It is several times faster than version 2 (a
BLAKE2b call per distinct word, the words found by ``re.findall``) and version 1
(BLAKE2b per shingle): bench/README.md. A fingerprint carries the version it was made with; MRMerge hashes a text
again when the version differs.

Banding: cut the 64 bits into ``k + 1`` bands. Two fingerprints that differ in at most
``k`` bits agree exactly on at least one band (pigeonhole), so keying every page by
``(band index, band bits)`` brings every such pair into one reduce group, and no
all-pairs comparison is made anywhere. Pairs that meet in a bucket are candidates only:
they are verified on the whole fingerprint.
"""
import functools
import re

import numpy

BITS = 64
_WORD_RE = re.compile(r'\w+', re.UNICODE)


def words(text):
    """Lower-cased words of *text* (Unicode word characters)."""
    return _WORD_RE.findall(text.lower()) if text else []


def simhash(text, shingle_words=3):
    """64-bit SimHash (int) of *text* over shingles of *shingle_words* words."""
    return simhash_hashes(word_hashes(text) if text else (), shingle_words)


def simhash_hashes(w, shingle_words=3):
    """64-bit SimHash (int) from the word hashes *w* (see :func:`word_hashes`).

    A text shorter than one shingle is one shingle. Each shingle counts as often as it
    occurs (term-frequency weights). The per-bit vote runs in numpy: the shingle hashes'
    big-endian bytes are unpacked into a (shingles x 64) bit matrix, most significant
    bit first, and summed per column.
    """
    if not len(w):
        return 0
    hashes = shingle_hashes(w, shingle_words)
    n = len(hashes)
    bits = numpy.unpackbits(hashes.astype('>u8').view(numpy.uint8).reshape(n, 8), axis=1)
    vote = (bits.sum(axis=0, dtype=numpy.int64) * 2 > n).astype(numpy.uint8)
    return int.from_bytes(numpy.packbits(vote).tobytes(), 'big')


#: Version of the shingle hashing, carried in every fingerprint (1 was one BLAKE2b per
#: shingle's text, 2 one BLAKE2b per word).
HASH_VERSION = 3
_MASK = 2 ** 64 - 1
#: Odd 64-bit multipliers, one per word position in a shingle (the golden-ratio
#: increment's successive odd multiples: distinct, well spread bits).
MULTIPLIERS = [((0x9E3779B97F4A7C15 * (2 * j + 1)) | 1) & _MASK for j in range(64)]
#: The odd base of the words' polynomial hash, and its inverse modulo 2**64.
P = 0x100000001B3
P_INV = pow(P, -1, 2 ** 64)
#: ASCII code point -> is a word character (\w).
_ASCII_WORD = numpy.array([bool(_WORD_RE.match(chr(c))) for c in range(128)])
_powers = (numpy.ones(1, numpy.uint64), numpy.ones(1, numpy.uint64))   # P**i, P**-i


def _power_tables(n):
    """(P**i, P**-i) modulo 2**64 for i < n (uint64 arrays, grown by doubling)."""
    global _powers
    if len(_powers[0]) < n:
        size = max(n, 2 * len(_powers[0]))
        pw = numpy.full(size, P, numpy.uint64)
        inv = numpy.full(size, P_INV, numpy.uint64)
        pw[0] = inv[0] = 1
        _powers = (numpy.cumprod(pw, dtype=numpy.uint64),
                   numpy.cumprod(inv, dtype=numpy.uint64))
    return _powers


def _mix(z):
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    z = z ^ (z >> numpy.uint64(30))
    z = z * numpy.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> numpy.uint64(27))
    z = z * numpy.uint64(0x94D049BB133111EB)
    return z ^ (z >> numpy.uint64(31))


def word_hashes(text):
    """uint64 array: the hash of each word of *text* (the words of :func:`words`, in
    order), computed without a Python loop over them."""
    low = text.lower()
    cp = numpy.frombuffer(low.encode('utf-32-le', 'surrogatepass'), dtype=numpy.uint32)
    if not len(cp):
        return numpy.zeros(0, numpy.uint64)
    ascii_ = cp < 128
    is_word = numpy.zeros(len(cp) + 2, dtype=bool)
    inner = is_word[1:-1]
    inner[ascii_] = _ASCII_WORD[cp[ascii_]]
    if not ascii_.all():
        other = cp[~ascii_]
        wordy = [c for c in numpy.unique(other).tolist() if _WORD_RE.match(chr(c))]
        inner[~ascii_] = numpy.isin(other, wordy)
    edges = numpy.flatnonzero(is_word[1:] != is_word[:-1])   # starts, ends alternate
    starts, ends = edges[0::2], edges[1::2]
    if not len(starts):
        return numpy.zeros(0, numpy.uint64)
    pw, inv = _power_tables(len(cp) + 1)
    with numpy.errstate(over='ignore'):
        prefix = numpy.zeros(len(cp) + 1, numpy.uint64)
        numpy.cumsum(cp.astype(numpy.uint64) * pw[:len(cp)], out=prefix[1:])
        return _mix((prefix[ends] - prefix[starts]) * inv[starts])


def shingle_hashes(w, shingle_words=3):
    """uint64 array: the hash of each shingle, from the word hashes *w* (non-empty)."""
    k = min(shingle_words, len(w))
    n = len(w) - k + 1
    with numpy.errstate(over='ignore'):
        acc = w[:n] * numpy.uint64(MULTIPLIERS[0])
        for j in range(1, k):
            acc = acc + w[j:j + n] * numpy.uint64(MULTIPLIERS[j])
        return _mix(acc)


def fingerprint(text, shingle_words=3):
    """``{'simhash': hex or None, 'words': N, 'shingle_words': k, 'hash': v}`` of *text*:
    what a page record carries (PageParser) so that MRMerge need not hash its text
    again. The word count lets the merge apply merge.min_words; *shingle_words* and the
    hash version tell it whether the value was made the way it would make it."""
    w = word_hashes(text) if text else ()
    return {'simhash': to_hex(simhash_hashes(w, shingle_words)) if len(w) else None,
            'words': len(w), 'shingle_words': shingle_words, 'hash': HASH_VERSION}


def current(fp, shingle_words):
    """Was the fingerprint *fp* made with *shingle_words* and this hash version?"""
    return bool(fp) and fp.get('shingle_words') == shingle_words \
        and fp.get('hash') == HASH_VERSION


def distance(a, b):
    """Hamming distance of two fingerprints."""
    return (a ^ b).bit_count()


def to_hex(value):
    """A fingerprint as 16 hex digits (JSON numbers lose precision past 2**53 elsewhere)."""
    return '%016x' % value


def from_hex(text):
    return int(text, 16)


@functools.lru_cache(maxsize=None)
def band_bounds(max_distance):
    """``((shift, width), ...)``: the ``max_distance + 1`` bands covering the 64 bits."""
    n = max_distance + 1
    if not 1 <= n <= BITS:
        raise ValueError('max_distance must be 0..%d, got %r' % (BITS - 1, max_distance))
    base, extra = divmod(BITS, n)
    bounds, shift = [], 0
    for i in range(n):
        width = base + (1 if i < extra else 0)
        bounds.append((shift, width))
        shift += width
    return tuple(bounds)


@functools.lru_cache(maxsize=None)
def _band_masks(max_distance):
    """``((index, shift, mask), ...)`` of :func:`band_bounds`: what the hot loops use."""
    return tuple((i, shift, (1 << width) - 1)
                 for i, (shift, width) in enumerate(band_bounds(max_distance)))


def bands(value, max_distance):
    """``[(band index, band bits), ...]`` of a fingerprint: its keys for the shuffle."""
    return [(i, (value >> shift) & mask) for i, shift, mask in _band_masks(max_distance)]


def first_common_band(a, b, max_distance):
    """Index of the first band where *a* and *b* agree, or None.

    A verified pair meets in every band it shares; only the bucket of the first one
    reports it, so each pair is found once without a de-duplication step. Two
    fingerprints agree on a band where their XOR has no bit set.
    """
    differ = a ^ b
    for i, shift, mask in _band_masks(max_distance):
        if not (differ >> shift) & mask:
            return i
    return None
