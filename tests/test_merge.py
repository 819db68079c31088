"""MRMerge's near duplicates (SimHash banding), rel=canonical folding and anchors;
jobs.lib.simhash on its own."""
import pytest
import random

from hypothesis import given, settings, strategies as st

from jobs.lib import simhash
from tests.helpers import article, flip_words, page, run_merge

pytestmark = pytest.mark.job


@pytest.mark.unit
def test_simhash_is_stable_and_close_for_close_texts():
    """Over 100 articles: two of 400 words changed (6 of 398 shingles) move the
    fingerprint by a few bits (the median is 3: half such pairs fall within the merge's
    default distance, like one BLAKE2b per shingle gave: 0.534 of 1,500 pairs both
    ways); unrelated articles are far apart."""
    a = article(1)
    assert simhash.simhash(a) == simhash.simhash(a)
    near, far = [], []
    for seed in range(1, 101):
        a = article(seed)
        near.append(simhash.distance(simhash.simhash(a), simhash.simhash(flip_words(a, 2, seed))))
        far.append(simhash.distance(simhash.simhash(a), simhash.simhash(article(seed + 1000))))
    near.sort()
    assert near[50] <= 4 and near[-1] <= 12 and sum(d <= 3 for d in near) >= 35, near
    assert min(far) >= 16 and sum(far) / len(far) > 28, far


def reference_simhash(text, shingle_words):
    """Charikar's SimHash spelled out bit by bit in Python integers, as the module's
    docstring defines it: the words of ``re.findall(r'\\w+', text.lower())``; a word's
    hash the splitmix64 finaliser of its polynomial hash sum(ord(c) * P**i); a
    shingle's hash the finaliser of the sum of its word hashes times the position
    multipliers (all mod 2**64)."""
    mask = 2 ** 64 - 1

    def mix(z):
        z ^= z >> 30
        z = (z * 0xBF58476D1CE4E5B9) & mask
        z ^= z >> 27
        z = (z * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    def word_hash(word):
        return mix(sum(ord(c) * pow(0x100000001B3, i, 2 ** 64) for i, c in enumerate(word))
                   & mask)

    w = simhash.words(text)
    if not w:
        return 0
    k = min(shingle_words, len(w))
    shingles = [w[i:i + k] for i in range(len(w) - k + 1)]
    hashes = [mix(sum(word_hash(word) * (((0x9E3779B97F4A7C15 * (2 * j + 1)) | 1) & mask)
                      for j, word in enumerate(sh)) & mask)
              for sh in shingles]
    return sum(1 << bit for bit in range(64)
               if 2 * sum((h >> bit) & 1 for h in hashes) > len(hashes))


@pytest.mark.unit
def test_simhash_equals_the_bit_by_bit_definition():
    """The numpy vote gives the same fingerprint as the definition, for every shingle
    width, short texts (fewer words than a shingle), ties, Unicode and case."""
    texts = [article(s, n) for s, n in ((1, 400), (2, 7), (3, 1), (4, 2), (5, 3))]
    texts += ['', '  !!  ', 'Été Ünïcode ÉTÉ été 東京 東京', 'a b', 'a b a b a b',
              'don\u2019t \u00abstop\u00bb \u2014 na\u00efve_caf\u00e9 x\u00b2 \u0130stanbul',
              'lone \ud800 surrogate', '\u0661\u0662 \U0001d400bc \u00a0nbsp']
    for text in texts:
        for k in (1, 2, 3, 4, 8):
            assert simhash.simhash(text, k) == reference_simhash(text, k), (text[:40], k)
    fp = simhash.fingerprint(texts[0], 3)
    assert fp == {'simhash': simhash.to_hex(reference_simhash(texts[0], 3)), 'words': 400,
                  'shingle_words': 3, 'hash': simhash.HASH_VERSION}
    assert simhash.fingerprint('', 3) == {'simhash': None, 'words': 0, 'shingle_words': 3,
                                          'hash': simhash.HASH_VERSION}
    # Word order counts: the same words in another order are other shingles.
    assert simhash.simhash('a b c d e f', 3) != simhash.simhash('f e d c b a', 3)


@pytest.mark.unit
def test_bands_cover_the_bits_and_find_every_pair_within_k():
    for k in (0, 3, 5, 63):
        bounds = simhash.band_bounds(k)
        assert len(bounds) == k + 1 and sum(w for _, w in bounds) == 64
    rnd = random.Random(3)
    for _ in range(2000):
        a = rnd.getrandbits(64)
        b = a
        for bit in rnd.sample(range(64), rnd.randrange(4)):
            b ^= 1 << bit
        assert simhash.distance(a, b) <= 3
        assert simhash.first_common_band(a, b, 3) is not None   # pigeonhole
    assert simhash.first_common_band(0, (1 << 64) - 1, 3) is None


@pytest.mark.unit
def test_the_first_common_band_is_the_first_equal_band_key():
    rnd = random.Random(5)
    for k in (0, 1, 3, 7):
        for _ in range(3000):
            a = rnd.getrandbits(64)
            b = a ^ (rnd.getrandbits(64) & rnd.getrandbits(64) & rnd.getrandbits(64))
            same = [i for (i, x), (_, y) in zip(simhash.bands(a, k), simhash.bands(b, k))
                    if x == y]
            assert simhash.first_common_band(a, b, k) == (same[0] if same else None)


def text_page(url, text, **kw):
    return page(url, digest='sha1:' + url, text=text, **kw)


def test_near_duplicates_fold_into_one_canonical_by_the_documented_order(conf_file):
    a = article(10, 1500)
    texts = {'http://h/long-name-copy': flip_words(a, 1, seed=5),
             'http://h/story': a,
             'https://h/story-b': flip_words(a, 1, seed=6)}    # https wins
    fps = [simhash.simhash(t) for t in texts.values()]
    assert max(simhash.distance(x, y) for x in fps for y in fps) <= 3
    pages = [text_page(u, t) for u, t in texts.items()]
    pages += [text_page('http://h/other', article(11)), text_page('http://h/short', 'few')]
    out, counters = run_merge(conf_file, pages)
    by_url = {r['url']: r for r in out}
    assert set(by_url) == {'https://h/story-b', 'http://h/other', 'http://h/short'}
    best = by_url['https://h/story-b']
    assert best['duplicates'] == ['http://h/long-name-copy', 'http://h/story']
    assert best['near_duplicates'] == best['duplicates']
    assert len(best['simhash']) == 16 and by_url['http://h/short']['simhash'] is None
    m = counters['merge']
    assert m['near_duplicates_total'] == 2 and m['merged_pages_total'] == 3
    assert m['near_skipped_short_total'] == 1
    assert m['near_hashed_in_merge_total'] == 5     # these pages carry no fingerprint
    assert m['near_candidate_pairs_total'] >= 3
    assert 'exact_duplicates_total' not in m


def test_merge_takes_the_fingerprint_the_parse_made_for_its_shingle_width(conf_file):
    """A page's ``fingerprint`` made with merge.shingle_words and this hash version is
    used as it is (its word count decides merge.min_words); one made with another width
    or an older hash (no ``hash``: one BLAKE2b per shingle) is hashed again."""
    a, b, c = article(30), article(31), article(32)
    stored = {'simhash': 'ffffffffffffffff', 'words': 400, 'shingle_words': 3,
              'hash': simhash.HASH_VERSION}
    old = {k: v for k, v in stored.items() if k != 'hash'}
    pages = [text_page('http://h/kept', a, fingerprint=stored),
             text_page('http://h/rehashed', b, fingerprint=dict(stored, shingle_words=2)),
             text_page('http://h/old-hash', c, fingerprint=old),
             text_page('http://h/few', a, fingerprint=dict(stored, words=49))]
    out, counters = run_merge(conf_file, pages)
    by_url = {r['url']: r for r in out}
    assert by_url['http://h/kept']['simhash'] == 'ffffffffffffffff'
    assert by_url['http://h/rehashed']['simhash'] == simhash.to_hex(simhash.simhash(b))
    assert by_url['http://h/old-hash']['simhash'] == simhash.to_hex(simhash.simhash(c))
    assert by_url['http://h/few']['simhash'] is None       # 49 < merge.min_words
    assert not any('fingerprint' in r for r in out)
    assert counters['merge']['near_hashed_in_merge_total'] == 2


def test_a_chain_of_near_duplicates_folds_as_a_star(conf_file, tmp_path):
    """b~m and m~c but b is not near c: m folds into b, c (whose only better near
    duplicate m is folded) stays a page of its own, counted."""
    import json
    conf = json.load(open(conf_file))
    conf['merge']['max_hamming_distance'] = 4
    k4 = tmp_path / 'k4.json'
    k4.write_text(json.dumps(conf))

    def chain(seed):
        """Texts b, m, c with b~m, m~c and b not near c, or None for this seed."""
        a = article(seed)
        texts = {'https://h/b': flip_words(a, 2, seed=seed), 'http://h/longer-c': a,
                 'http://h/m': flip_words(a, 1, seed=seed + 1)}
        fp = {u: simhash.simhash(t) for u, t in texts.items()}
        if simhash.distance(fp['https://h/b'], fp['http://h/m']) <= 4 and \
                simhash.distance(fp['http://h/m'], fp['http://h/longer-c']) <= 4 and \
                simhash.distance(fp['https://h/b'], fp['http://h/longer-c']) > 4:
            return texts
        return None
    # The first seed whose texts form such a chain (the hash decides which one).
    texts = next(t for t in map(chain, range(1, 500)) if t is not None)
    out, counters = run_merge(str(k4), [text_page(u, t) for u, t in texts.items()])
    by_url = {r['url']: r for r in out}
    assert set(by_url) == {'https://h/b', 'http://h/longer-c'}
    assert by_url['https://h/b']['duplicates'] == ['http://h/m']
    assert by_url['http://h/longer-c']['duplicates'] == []
    assert counters['merge']['near_chain_unfolded_total'] == 1


def test_near_duplicates_off_and_relevance_first(conf_file, tmp_path):
    a = article(20)
    pages = [text_page('https://h/a', a), text_page('http://h/b', flip_words(a, 1),
                                                     relevance=3.5)]
    out, _ = run_merge(conf_file, pages)
    assert [r['url'] for r in out] == ['http://h/b']        # the higher score wins
    import json
    conf = json.load(open(conf_file))
    conf['merge']['near_duplicates'] = False
    off = tmp_path / 'off.json'
    off.write_text(json.dumps(conf))
    out, counters = run_merge(str(off), pages)
    assert sorted(r['url'] for r in out) == ['http://h/b', 'https://h/a']
    assert 'near_duplicates_total' not in counters['merge']


def test_a_full_bucket_is_cut_and_counted(conf_file, tmp_path):
    import json
    conf = json.load(open(conf_file))
    conf['merge']['max_bucket_pages'] = 2
    capped = tmp_path / 'capped.json'
    capped.write_text(json.dumps(conf))
    a = article(30)
    pages = [text_page('http://h/%d' % i, a + ' tail%d' % i) for i in range(4)]
    out, counters = run_merge(str(capped), pages)
    m = counters['merge']
    assert m['near_bucket_overflow_total'] >= 2
    # No page is lost: every URL is a merged page or one's duplicate.
    urls = {r['url'] for r in out} | {u for r in out for u in r['duplicates']}
    assert urls == {'http://h/%d' % i for i in range(4)}


def test_rel_canonical_folds_into_the_named_fetched_page(conf_file):
    pages = [page('http://h/print', canonical='http://h/article', digest='P'),
             page('http://h/article', digest='A'),
             page('http://h/lost', canonical='http://h/never-fetched', digest='L'),
             page('http://h/r', final_url='http://h/moved', canonical='http://h/article',
                  digest='M')]
    out, counters = run_merge(conf_file, pages)
    by_url = {r['url']: r for r in out}
    assert set(by_url) == {'http://h/article', 'http://h/lost'}
    art = by_url['http://h/article']
    assert art['duplicates'] == ['http://h/moved', 'http://h/print', 'http://h/r']
    assert art['canonical_duplicates'] == ['http://h/moved', 'http://h/print']
    assert counters['merge']['canonical_duplicates_total'] == 2
    assert counters['merge']['canonical_target_not_fetched_total'] == 1


def test_anchors_join_the_page_and_its_duplicates(conf_file):
    """The merge inverts the links of out/* (Nutch's invertlinks): a page's anchors are
    those of links to it and to every URL folded into it, de-duplicated; anchors to a
    URL that is no page are counted."""
    def linking(url, *targets):
        rec = page(url)
        rec['links'] = [{'url': t, 'text': text, 'rel': ''} for t, text in targets]
        return rec
    pages = [page('http://h/t', digest='D'), page('http://h/copy', digest='D'),
             linking('http://h/x', ('http://h/t', 'the target'), ('http://h/t', 'the target')),
             linking('http://h/y', ('http://h/copy', 'a copy'), ('http://h/nowhere', 'gone'))]
    out, counters = run_merge(conf_file, pages)
    by_url = {r['url']: r for r in out}
    assert set(by_url) == {'http://h/t', 'http://h/x', 'http://h/y'}
    assert by_url['http://h/t']['anchors'] == [{'from': 'http://h/x', 'text': 'the target'},
                                               {'from': 'http://h/y', 'text': 'a copy'}]
    assert counters['merge']['anchors_joined_total'] == 2
    assert counters['merge']['anchor_targets_not_pages_total'] == 1
    assert counters['merge']['inlinks_total'] == 4


def test_anchors_follow_a_later_redirect_and_the_fold_and_leave_the_group_out(conf_file,
                                                                              tmp_path):
    """MRAnchors: anchors to a URL that redirected to another key's page (a
    ``redirected`` record; the target fetched later under its own URL) reach that page,
    and go on to the leader it was folded into; anchors from a URL of the group itself
    are not the page's; merge.max_anchors caps what is kept, counted."""
    import json

    def linking(url, *targets, **kw):
        rec = page(url, **kw)
        rec['links'] = [{'url': t, 'text': text, 'rel': ''} for t, text in targets]
        return rec
    pages = [page('http://g/old', status='redirected', final_url='http://g/new',
                  digest=None),
             linking('http://g/new', ('http://h/n', 'my twin'), digest='D', depth=1),
             linking('http://h/n', ('http://other/z', 'z'), digest='D'),
             linking('http://h/a', ('http://g/old', 'old name'), ('http://h/n', 'n'),
                     ('http://other/z', 'zz')),
             linking('http://h/b', ('http://other/z', 'zzz')),
             page('http://other/z')]
    out, counters = run_merge(conf_file, pages)
    by_url = {r['url']: r for r in out}
    assert by_url['http://h/n']['duplicates'] == ['http://g/new']
    assert by_url['http://h/n']['anchors'] == [{'from': 'http://h/a', 'text': 'n'},
                                               {'from': 'http://h/a', 'text': 'old name'}]
    assert counters['merge']['inlinks_redirected_total'] == 1
    assert len(by_url['http://other/z']['anchors']) == 3
    conf = json.load(open(conf_file))
    conf['merge']['max_anchors'] = 2
    capped = tmp_path / 'capped.json'
    capped.write_text(json.dumps(conf))
    out, counters = run_merge(str(capped), pages)
    z = {r['url']: r for r in out}['http://other/z']
    assert [a['text'] for a in z['anchors']] == ['zz', 'zzz']     # sorted by from, text
    assert counters['merge']['anchors_over_cap_total'] == 1
    assert counters['merge']['anchors_joined_total'] == 4


def resource(url, parent, name, status='fetched', **kw):
    rec = page(url, status=status, depth=1, resource_of=parent, resource_name=name,
               content_type='video/mp4', length=1000, http_status=200, reason=None,
               digest='sha1:' + url if status == 'fetched' else None, links=[])
    rec.update(kw)
    return rec


def test_resources_join_their_parent_or_its_leader_and_are_never_pages(conf_file):
    named = [{'name': 'video', 'url': 'http://cdn/v.mp4', 'max_bytes': 10 ** 7},
             {'name': 'poster', 'url': 'http://cdn/p.jpg', 'max_bytes': 10 ** 6},
             {'name': 'thumb', 'url': 'http://cdn/t.jpg', 'max_bytes': 10 ** 6}]
    pages = [page('http://h/p', digest='D', title='old', resources=named),
             page('http://h/p', digest='D', title='new', resources=named, layer=1,
                  fetch_time='2026-11-30T01:00:00Z', body='<html>', raw_body='PGh0bWw+'),
             page('http://h/p-copy', digest='D', title='copy'),     # folds into /p
             resource('http://cdn/v.mp4', 'http://h/p', 'video', length=5),
             resource('http://cdn/v.mp4', 'http://h/p', 'video', length=7,
                      fetch_time='2026-11-30T02:00:00Z'),
             resource('http://cdn/p.jpg', 'http://h/p', 'poster', status='http_error',
                      content_type=None, length=0, http_status=404, reason='http_404'),
             resource('http://cdn/d.png', 'http://h/p-copy', 'image',
                      content_type='image/png', length=3),
             resource('http://cdn/x.mp4', 'http://h/never-fetched', 'video')]
    out, counters = run_merge(conf_file, pages)
    assert [r['url'] for r in out] == ['http://h/p']
    merged = out[0]
    assert merged['title'] == 'new' and merged['layer'] == 1     # the latest fetch
    assert 'body' not in merged and 'raw_body' not in merged
    assert merged['duplicates'] == ['http://h/p-copy']
    assert merged['resources'] == [
        {'name': 'image', 'url': 'http://cdn/d.png', 'status': 'fetched',
         'content_type': 'image/png', 'length': 3, 'truncated': None,
         'digest': 'sha1:http://cdn/d.png', 'http_status': 200, 'reason': None},
        {'name': 'poster', 'url': 'http://cdn/p.jpg', 'status': 'http_error',
         'content_type': None, 'length': 0, 'truncated': None, 'digest': None,
         'http_status': 404, 'reason': 'http_404'},
        {'name': 'video', 'url': 'http://cdn/v.mp4', 'status': 'fetched',
         'content_type': 'video/mp4', 'length': 7, 'truncated': None,
         'digest': 'sha1:http://cdn/v.mp4', 'http_status': 200, 'reason': None},
        {'name': 'thumb', 'url': 'http://cdn/t.jpg', 'status': None, 'content_type': None,
         'length': None, 'truncated': None, 'digest': None, 'http_status': None,
         'reason': 'not_fetched'}]
    m, j = counters['merge'], counters['merge_join']
    assert m['resources_attached_total'] == 3
    assert m['resources_parent_not_a_page_total'] == 1
    assert m['exact_duplicates_total'] == 1 and m['merged_pages_total'] == 1
    assert 'skipped_not_fetched_total' not in m            # resources are not "not pages"
    assert j['merged_written_total'] == 1
    assert j['fetches_not_kept_total'] == 2                 # old /p, /p-copy
    assert j['not_merge_candidates_total'] == 5             # the resource records
    assert j['resources_not_fetched_total'] == 1


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=('Cs',)), max_size=60)
       | st.text(alphabet='ab _.\u00e9\u2019\u00b2\u0130', max_size=30))
def test_word_hashes_find_exactly_the_regex_words(text):
    """The numpy word split gives the words of re.findall(r'\\w+', text.lower()), with
    one hash per word, equal for equal words, as the reference computes them."""
    hashes = simhash.word_hashes(text)
    w = simhash.words(text)
    assert len(hashes) == len(w)
    by_word = {}
    for word, h in zip(w, hashes.tolist()):
        assert by_word.setdefault(word, h) == h
    assert simhash.simhash(text, 2) == reference_simhash(text, 2)
