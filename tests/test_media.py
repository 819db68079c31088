"""The media store (issue 22, part 1): resources' bytes kept by digest, once, with a
preview each: a Pillow thumbnail of an image, an ffmpeg still of a video. The store on
its own (jobs.lib.media), then a crawl of a gallery page on the fixture site whose
XML points at the stored files."""
import collections
import io
import json
import logging
import os
import threading
import xml.etree.ElementTree as ET

import pytest
from lxml import etree
from PIL import Image

from jobs.lib import counters as C, media, records as R, sites
from tests.helpers import ROOT, crawl_site, png, read_records, read_xml, test_conf

pytestmark = pytest.mark.unit

GALLERY_TOML = os.path.join(ROOT, 'tests', 'data', 'sites', 'gallery.toml')
SCHEMA = os.path.join(ROOT, 'conf', 'page.xsd')
with open(os.path.join(ROOT, 'tests', 'data', 'media', 'trailer.mp4'), 'rb') as _f:
    TRAILER = _f.read()      # 1 s of ffmpeg's test pattern, 96x64, H.264 (2 KB)


def keep(store, data, content_type, url='http://h/f'):
    """Keep *data* as a fetched resource: (its doc, the counters it added)."""
    doc = {'url': url, 'digest': R.digest(data), 'length': len(data),
           'content_type': content_type, 'status': 'fetched'}
    spool = store.spool()
    spool.write(data)
    spool.close()
    counts = collections.Counter()
    store.keep(doc, spool.name, lambda name, n=1: counts.update({name: n}))
    assert not os.path.exists(spool.name)
    return doc, counts


def open_store(tmp_path, *sets):
    return media.Media(test_conf(*sets), str(tmp_path / 'crawl' / 'media'))


def test_an_image_is_stored_once_with_a_thumbnail(tmp_path):
    store = open_store(tmp_path)
    data = png()
    doc, counts = keep(store, data, 'image/png')
    name = media.stored_name(doc['digest'])
    assert doc['stored'] == name and name.startswith('media/')
    with open(tmp_path / 'crawl' / name, 'rb') as f:
        assert f.read() == data
    assert (doc['width'], doc['height']) == (640, 400)
    assert doc['preview'] == name + '.preview.jpg'
    with Image.open(tmp_path / 'crawl' / doc['preview']) as im:
        assert im.format == 'JPEG' and im.size == (320, 200)
    assert counts == {C.MEDIA_STORED: 1, C.MEDIA_STORED_BYTES: len(data),
                      C.PREVIEWS_MADE: 1}
    # The same bytes under another URL: nothing written again, the same names.
    again, counts = keep(store, data, 'image/png', 'http://other/copy.png')
    assert {k: again[k] for k in ('stored', 'preview', 'width', 'height')} == {
        k: doc[k] for k in ('stored', 'preview', 'width', 'height')}
    assert counts == {C.MEDIA_ALREADY_STORED: 1, C.PREVIEWS_REUSED: 1}
    store.close()
    assert not os.path.exists(store.tmp)


def test_threads_fetching_the_same_bytes_store_and_preview_them_once(tmp_path):
    store = open_store(tmp_path)
    data, results = png(), []
    threads = [threading.Thread(target=lambda i=i: results.append(
        keep(store, data, 'image/png', 'http://h%d/logo.png' % i))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    total = collections.Counter()
    for _, counts in results:
        total.update(counts)
    assert (total[C.MEDIA_STORED], total[C.MEDIA_ALREADY_STORED], total[C.PREVIEWS_MADE],
            total[C.PREVIEWS_REUSED]) == (1, 7, 1, 7)
    assert len({(d['stored'], d['preview'], d['width']) for d, _ in results}) == 1
    store.close()


def test_a_video_gets_a_still_from_ffmpeg(tmp_path):
    store = open_store(tmp_path, 'media.preview_size=48')
    doc, counts = keep(store, TRAILER, 'video/mp4')
    with Image.open(tmp_path / 'crawl' / doc['preview']) as im:
        assert im.format == 'JPEG' and im.size == (48, 32)   # 96x64 kept in proportion
    assert 'width' not in doc
    assert counts[C.PREVIEWS_MADE] == 1 and counts[C.MEDIA_STORED] == 1


def test_hostile_or_unreadable_media_cost_their_preview_only(tmp_path):
    store = open_store(tmp_path, 'media.max_pixels=10000')
    # More pixels than allowed: refused before it is decoded.
    big, counts = keep(store, png(200, 100), 'image/png', 'http://h/big.png')
    assert 'preview' not in big and big['stored']
    assert counts[C.previews_failed('too_many_pixels')] == 1
    # Far past the limit: Pillow's own bomb check refuses it while reading the header.
    bomb, counts = keep(store, png(300, 100), 'image/png', 'http://h/bomb.png')
    assert 'preview' not in bomb and \
        counts['previews_failed_decompression_bomb_error_total'] == 1
    # Not an image at all.
    bad, counts = keep(store, b'<html>not an image at all</html>', 'image/jpeg')
    assert 'preview' not in bad and counts[C.previews_failed('UnidentifiedImageError')] == 1
    assert C.previews_failed('UnidentifiedImageError') == \
        'previews_failed_unidentified_image_error_total'
    # A playlist that names a local file, served as a video: ffmpeg may open neither
    # playlists nor other files, so it makes nothing.
    secret = tmp_path / 'secret.mp4'
    secret.write_bytes(TRAILER)
    playlist = ('#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile://%s\n'
                '#EXT-X-ENDLIST\n' % secret).encode()
    hls, counts = keep(store, playlist, 'video/mp4', 'http://h/list.mp4')
    assert 'preview' not in hls and counts[C.previews_failed('ffmpeg')] == 1
    concat = ("ffconcat version 1.0\nfile '%s'\n" % secret).encode()
    listed, counts = keep(store, concat, 'video/mp4', 'http://h/concat.mp4')
    assert 'preview' not in listed and counts[C.previews_failed('ffmpeg')] == 1
    # Neither image nor video: stored, no preview.
    pdf, counts = keep(store, b'%PDF-1.4 ...', 'application/pdf')
    assert pdf['stored'] and counts[C.PREVIEWS_NONE_FOR_TYPE] == 1
    store.close()


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def jpeg_turned(orientation, width=640, height=400):
    """A JPEG stored sideways, with the EXIF Orientation that shows it upright."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    buf = io.BytesIO()
    Image.new('RGB', (width, height), 'red').save(buf, 'JPEG', exif=exif.tobytes())
    return buf.getvalue()


def test_a_thumbnail_is_turned_by_its_exif_orientation(tmp_path):
    store = open_store(tmp_path)
    doc, counts = keep(store, jpeg_turned(6), 'image/jpeg')
    with Image.open(tmp_path / 'crawl' / doc['preview']) as im:
        assert im.size == (200, 320)           # 640x400 turned a quarter
    assert (doc['width'], doc['height']) == (640, 400)    # the stored file's own pixels
    store.close()


def test_a_preview_another_task_made_is_named_not_made_again(tmp_path):
    data = png()
    first = open_store(tmp_path)
    made, _ = keep(first, data, 'image/png')
    first.close()
    second = open_store(tmp_path)     # another task: its own memory of digests
    again, counts = keep(second, data, 'image/png', 'http://other/p.png')
    assert {k: again[k] for k in ('stored', 'preview', 'width', 'height')} == {
        k: made[k] for k in ('stored', 'preview', 'width', 'height')}
    assert counts == {C.MEDIA_ALREADY_STORED: 1, C.PREVIEWS_REUSED: 1}
    second.close()


def test_a_spool_that_cannot_be_written_costs_the_stored_copy_only(tmp_path):
    store = open_store(tmp_path)
    blocker = tmp_path / 'not-a-folder'
    blocker.write_text('x')
    store.tmp = str(blocker)            # the spool folder cannot be made: a full disk
    spool = store.spool()
    spool.write(b'bytes')               # never raises
    spool.close()
    doc = {'url': 'http://h/a.png', 'digest': R.digest(b'bytes'), 'length': 5,
           'content_type': 'image/png', 'status': 'fetched'}
    counts = collections.Counter()
    store.keep(doc, spool.name, lambda name, n=1: counts.update({name: n}))
    assert counts == {C.MEDIA_STORE_FAILED: 1} and 'stored' not in doc
    # A resource whose fetch failed after its first bytes: its spool goes, nothing counted.
    store.tmp = None
    spool = store.spool()
    spool.write(b'part')
    spool.close()
    failed = dict(doc, status='network_error')
    store.keep(failed, spool.name, lambda name, n=1: counts.update({name: n}))
    assert not os.path.exists(spool.name) and 'stored' not in failed
    assert counts == {C.MEDIA_STORE_FAILED: 1}
    store.close()


def test_without_ffmpeg_videos_get_no_preview_and_say_so_once(tmp_path):
    store = open_store(tmp_path, 'media.ffmpeg=no-such-ffmpeg-here')
    said = Lines()
    logging.getLogger('jobs.lib.media').addHandler(said)
    try:
        for i in range(2):
            doc, counts = keep(store, TRAILER + bytes([i]), 'video/mp4')
            assert doc['stored'] and 'preview' not in doc
            assert counts[C.PREVIEWS_UNAVAILABLE] == 1
        image, counts = keep(store, png(), 'image/png')
    finally:
        logging.getLogger('jobs.lib.media').removeHandler(said)
    assert image['preview'] and counts[C.PREVIEWS_MADE] == 1   # images still get theirs
    assert said.lines == [
        "no ffmpeg (media.ffmpeg = 'no-such-ffmpeg-here'): videos get no preview"]
    store.close()


def gallery(site, poster):
    site.overrides.update({
        '/gallery/': ('<!DOCTYPE html><html><head><title>Gallery</title></head><body>'
                      '<h1>Gallery</h1><img class="photo" src="poster.png">'
                      '<img class="photo" src="/gallery/copy.png">'
                      '<video><source src="trailer.mp4"></video></body></html>').encode(),
        '/gallery/poster.png': ('typed', 'image/png', poster),
        '/gallery/copy.png': ('typed', 'image/png', poster),
        '/gallery/trailer.mp4': ('typed', 'video/mp4', TRAILER)})


@pytest.mark.crawl
def test_a_crawl_stores_media_once_and_its_xml_points_at_them(site, tmp_path):
    poster = png()
    gallery(site, poster)
    conf = sites.resolve(test_conf('parse.sites=%s' % json.dumps([GALLERY_TOML]),
                                   'politeness.delay=0.05'))
    # Depth 0: the gallery page is the last layer; its resources come in one more,
    # resources-only layer.
    out, _ = crawl_site(site, tmp_path, conf, depth=0, start='/gallery/')
    hits = collections.Counter(site.paths())
    assert all(hits[p] == 1 for p in ('/gallery/poster.png', '/gallery/copy.png',
                                      '/gallery/trailer.mp4')), hits

    stored = sorted(os.path.relpath(os.path.join(d, n), out)
                    for d, _, names in os.walk(os.path.join(out, 'media')) for n in names)
    image = media.stored_name(R.digest(poster))
    video = media.stored_name(R.digest(TRAILER))
    assert stored == sorted([image, image + '.preview.jpg', video, video + '.preview.jpg'])
    with open(os.path.join(out, 'steps', 'fetch-001.json')) as f:
        fetch = json.load(f)['counters']['fetch']
    assert (fetch['media_stored_total'], fetch['media_already_stored_total'],
            fetch['previews_made_total'], fetch['previews_reused_total']) == (2, 1, 2, 1)

    page_url = site.url('/gallery/')
    merged = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    assert {r['url'][len(site.url('')):]: r['stored'] for r in
            merged[page_url]['resources']} == {'/gallery/poster.png': image,
                                               '/gallery/copy.png': image,
                                               '/gallery/trailer.mp4': video}
    doc = read_xml(os.path.join(out, 'xml'))[page_url]
    etree.XMLSchema(etree.parse(SCHEMA)).assertValid(etree.fromstring(doc.encode()))
    root = ET.fromstring(doc)
    assert root.get('version') == '7'
    res = {r.get('url')[len(site.url('')):]: r.attrib for r in root.iter('resource')}
    assert res['/gallery/poster.png']['preview'] == image + '.preview.jpg'
    assert (res['/gallery/poster.png']['width'], res['/gallery/poster.png']['height']) == (
        '640', '400')
    assert res['/gallery/trailer.mp4']['stored'] == video
    for attrs in res.values():     # every name in the XML opens, relative to the crawl
        with Image.open(os.path.join(out, attrs['preview'])) as im:
            assert im.format == 'JPEG' and max(im.size) <= 320


@pytest.mark.crawl
def test_media_store_off_keeps_digests_only(site, tmp_path):
    gallery(site, png(64, 40))
    conf = sites.resolve(test_conf('parse.sites=%s' % json.dumps([GALLERY_TOML]),
                                   'politeness.delay=0.05', 'media.store=false'))
    out, _ = crawl_site(site, tmp_path, conf, depth=0, start='/gallery/')
    assert not os.path.exists(os.path.join(out, 'media'))
    res = read_records(os.path.join(out, 'out', '001'))
    assert len(res) == 3 and all(r['digest'] and 'stored' not in r for r in res)


def test_the_driver_says_once_when_ffmpeg_is_missing():
    gallery_conf = 'parse.sites=%s' % json.dumps([GALLERY_TOML])
    missing = sites.resolve(test_conf(gallery_conf, 'media.ffmpeg=no-such-ffmpeg-here'))
    assert media.tool_warnings(missing) == [
        "media: no ffmpeg (media.ffmpeg = 'no-such-ffmpeg-here'): videos get no preview, "
        "images do (Debian: apt-get install ffmpeg)"]
    # Nothing to say: ffmpeg is there, or no site names resources, or previews are off.
    assert media.tool_warnings(sites.resolve(test_conf(gallery_conf))) == []
    assert media.tool_warnings(test_conf('media.ffmpeg=no-such-ffmpeg-here')) == []
    assert media.tool_warnings(sites.resolve(test_conf(
        gallery_conf, 'media.ffmpeg=no-such-ffmpeg-here', 'media.previews=false'))) == []


def test_a_rule_without_max_bytes_reads_media_max_bytes(tmp_path):
    toml = tmp_path / 'noc.toml'
    toml.write_text('[site]\nhosts = ["h"]\n[resources.image]\ncss = "img"\nattr = "src"\n'
                    '[resources.video]\ncss = "video source"\nattr = "src"\nmax_bytes = 99\n')
    for sets, expected in (((), 10485760), (('media.max_bytes=4096',), 4096)):
        conf = sites.resolve(test_conf('parse.sites=%s' % json.dumps([str(toml)]), *sets))
        res = conf['sites'][0]['resources']
        assert (res['image']['max_bytes'], res['video']['max_bytes']) == (expected, 99)


def test_media_settings_out_of_range_are_errors():
    from jobs.lib.config import ConfigError
    for setting in ('media.max_bytes=0', 'media.preview_size=0', 'media.max_pixels=-1',
                    'media.preview_seconds=0', 'media.preview_memory_mb=0'):
        with pytest.raises(ConfigError, match=setting.split('=')[0]):
            test_conf(setting)
