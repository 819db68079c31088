"""Secondary resources' bytes and previews: the media part of the raw-body store.

A resource a site rule names (conf/sites ``[resources.NAME]``) is read up to the rule's
``max_bytes``; with ``media.store`` its bytes go to ``OUT/media/``, keyed by their digest
(``media/AB/ABCDEF...``: the base32 of ``sha1:ABCDEF...``), so a file that many pages or
URLs share is stored once, by whichever fetch task has it first. The page's WARC keeps
HTML bodies; a content-addressed folder keeps media, because every task and layer can
tell whether a digest is stored without an index of the crawl, and a downstream job
opens a file by its path.

With ``media.previews``, each stored file gets one preview beside it
(``media/AB/ABCDEF....preview.jpg``, JPEG, at most ``media.preview_size`` pixels on its
longer side): a thumbnail of an image (Pillow, in a forked child with a time and memory
limit, images over ``media.max_pixels`` refused), a still of a video (ffmpeg's thumbnail
filter picks a representative frame among the first ones; only file input and the
demuxers of ``_VIDEO_FORMATS``, so a playlist cannot make ffmpeg read other files or
URLs; time and memory limited). Without ffmpeg a video gets no preview, counted.

Everything here is counted and nothing raises into the fetch: a resource whose store or
preview fails is still a fetched resource with its digest.
"""
import importlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from urllib.parse import urlparse

from jobs.lib import content, counters as C, records as R

log = logging.getLogger(__name__)

#: ffmpeg demuxers a video preview may use: containers, no playlists or concat lists.
_VIDEO_FORMATS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf'
PREVIEW_SUFFIX = '.preview.jpg'


def stored_name(digest):
    """``media/AB/ABCDEF...``: where the bytes of *digest* (``sha1:ABCDEF...``) live,
    relative to the crawl's folder."""
    key = digest.split(':', 1)[-1]
    return 'media/%s/%s' % (key[:2], key)


def kind(content_type):
    """'image', 'video' or None: which preview a content type gets."""
    major = (content_type or '').split('/', 1)[0]
    return major if major in ('image', 'video') else None


def ffmpeg_path(conf):
    """The ffmpeg program media.ffmpeg names, found on PATH, or None."""
    return shutil.which(conf['media']['ffmpeg'])


def tool_warnings(conf):
    """What the crawl's driver says once, at the start, about a tool the settings ask
    for and this machine lacks (the tasks count what it costs)."""
    m = conf['media']
    wants = m['store'] and m['previews'] and any(
        spec.get('resources') for spec in conf.get('sites') or ())
    if wants and ffmpeg_path(conf) is None:
        return ['media: no ffmpeg (media.ffmpeg = %r): videos get no preview, images do '
                '(Debian: apt-get install ffmpeg)' % m['ffmpeg']]
    return []


#: EXIF Orientation -> the turn that shows the image upright (Pillow's exif_transpose).
_TURNS = {2: 0, 3: 3, 4: 1, 5: 5, 6: 4, 7: 6, 8: 2}


def image_preview(src, dst, size, max_pixels):
    """Pillow: a JPEG thumbnail of image *src* at *dst*; (width, height) of *src*."""
    # lazy: Pillow only in crawls that keep media
    from PIL import Image
    Image.MAX_IMAGE_PIXELS = max_pixels    # Pillow refuses what is far beyond it
    with Image.open(src) as im:
        width, height = im.size
        if width * height > max_pixels:
            raise content.ParserError('too_many_pixels')
        orientation = im.getexif().get(0x0112)   # EXIF Orientation, from the header
        im.draft('RGB', (size, size))      # JPEG: decode at a reduced scale
        im.thumbnail((size, size))         # in place: never a full-size copy
        thumb = im
        if orientation in _TURNS:          # turned as ImageOps.exif_transpose would
            thumb = im.transpose(Image.Transpose(_TURNS[orientation]))
        if thumb.mode in ('RGBA', 'LA', 'P'):
            thumb = thumb.convert('RGBA')
            flat = Image.new('RGB', thumb.size, 'white')
            flat.paste(thumb, mask=thumb.getchannel('A'))
            thumb = flat
        elif thumb.mode != 'RGB':
            thumb = thumb.convert('RGB')
        thumb.save(dst, 'JPEG', quality=80)
    return [width, height]


#: What a stored file's record says of it.
_NAMES = ('stored', 'preview', 'width', 'height')


def _remove(path):
    """Remove *path* if it is there (an interrupted task may have removed its folder)."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class _Spool:
    """A resource's bytes on their way to the store: a temporary file, or nothing once a
    write failed (logged once; the resource's fetch goes on)."""

    def __init__(self, file, error=None):
        self.file = file
        self.name = file.name if file is not None else ''
        if error is not None:
            log.warning('media spool: %s: %s', type(error).__name__, error)

    def write(self, chunk):
        if self.file is None:
            return
        try:
            self.file.write(chunk)
        except OSError as e:
            log.warning('media spool: %s: %s', type(e).__name__, e)
            self.close()
            _remove(self.name)
            self.file = None

    def close(self):
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                _remove(self.name)
                self.file = None


class _Flight:
    """One digest's store and preview in this task: done, and the names they gave (None:
    the store failed, and the next fetch of those bytes tries again)."""

    def __init__(self):
        self.done, self.names = threading.Event(), None


class Media:
    """One fetch task's media store: :meth:`spool` a resource's bytes while they are
    read, then :meth:`keep` them. *folder*: OUT/media (a local path, or an hdfs:// URI
    written through WebHDFS at *webhdfs_url* as *user*)."""

    def __init__(self, conf, folder, webhdfs_url=None, user=None):
        m = conf['media']
        self.folder = folder.rstrip('/')
        self.root = os.path.dirname(self.folder)   # the crawl's folder
        self.previews = m['previews']
        self.size, self.max_pixels = m['preview_size'], m['max_pixels']
        self.seconds, self.memory_mb = m['preview_seconds'], m['preview_memory_mb']
        if self.previews:
            # Imported here, once: each thumbnail's forked child inherits Pillow and its
            # format plug-ins instead of importing them again (most of its time).
            importlib.import_module('PIL.Image').init()
        self.ffmpeg_name = m['ffmpeg']
        self.ffmpeg = ffmpeg_path(conf) if self.previews else None
        self.prlimit = shutil.which('prlimit')
        self.tmp = None      # the spool folder, made for the task's first resource
        self.webhdfs = None
        if self.folder.startswith('hdfs://'):
            self.webhdfs, self.clients = (webhdfs_url, user or None), threading.local()
            self.root = os.path.dirname(urlparse(self.folder).path)
        self.warned, self.lock = False, threading.Lock()
        self.flights = {}     # digest -> _Flight: this task's work on those bytes

    def spool(self):
        """Where a resource's bytes go while it is read: a :class:`_Spool`, whose write
        and close never raise (a full disk costs the stored copy, not the fetch)."""
        try:
            with self.lock:
                if self.tmp is None:
                    # In a YARN container its working directory, which YARN removes with
                    # it even when the attempt is killed; else the system's.
                    self.tmp = tempfile.mkdtemp(prefix='mrcrawl-media-',
                                                dir='.' if self.webhdfs else None)
            return _Spool(tempfile.NamedTemporaryFile(dir=self.tmp, delete=False))
        except OSError as e:
            return _Spool(None, e)

    def keep(self, doc, spooled, count):
        """Store the bytes in *spooled* (a closed :meth:`spool` file) under *doc*'s
        digest unless stored already, make its preview, and note both in *doc*
        (``stored``, ``preview``, ``width``, ``height``). Removes *spooled*.

        One thread does a digest's work; the task's others with the same bytes (a logo
        every page of a site names, fetched under each host's URL at once) wait for it
        and take its names."""
        if doc['status'] != R.FETCH_FETCHED or not os.path.exists(spooled):
            # A fetch that failed after its first bytes, or a spool that could not be
            # written (its _Spool logged why): nothing to store.
            _remove(spooled)
            if doc['status'] == R.FETCH_FETCHED:
                count(C.MEDIA_STORE_FAILED)
            return
        with self.lock:
            flight = self.flights.get(doc['digest'])
            first = flight is None
            if first:
                flight = self.flights[doc['digest']] = _Flight()
        if not first and flight.done.wait(self.seconds + 60) and flight.names is not None:
            _remove(spooled)
            doc.update(flight.names)
            count(C.MEDIA_ALREADY_STORED)
            if 'preview' in flight.names:
                count(C.PREVIEWS_REUSED)
            return
        try:
            self._keep(doc, spooled, count)
        finally:
            flight.names = {k: doc[k] for k in _NAMES if k in doc} if 'stored' in doc \
                else None
            flight.done.set()

    def _keep(self, doc, spooled, count):
        try:
            name = stored_name(doc['digest'])
            if self._exists(name):
                count(C.MEDIA_ALREADY_STORED)
            else:
                self._put(spooled, name)
                count(C.MEDIA_STORED)
                count(C.MEDIA_STORED_BYTES, doc['length'])
            doc['stored'] = name
        except Exception as e:    # a store that fails costs the bytes, not the fetch
            count(C.MEDIA_STORE_FAILED)
            log.warning('media store: %s: %s: %s', doc['url'], type(e).__name__, e)
            _remove(spooled)
            return
        try:
            if self.previews:
                self._preview(doc, spooled, name, count)
        except Exception as e:    # the bytes are stored; only the preview is lost
            count(C.previews_failed(type(e).__name__))
            log.warning('media preview: %s: %s: %s', doc['url'], type(e).__name__, e)
        finally:
            _remove(spooled)

    def close(self):
        """Remove the spool folder (a resource whose fetch failed mid-way left its file
        there)."""
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- previews ---------------------------------------------------------------------

    def _preview(self, doc, src, name, count):
        what = kind(doc.get('content_type'))
        if what is None:
            count(C.PREVIEWS_NONE_FOR_TYPE)
            return
        preview = name + PREVIEW_SUFFIX
        if self._exists(preview):
            count(C.PREVIEWS_REUSED)
            doc['preview'] = preview
            if what == 'image':
                self._image(doc, src, None, count)
            return
        dst = src + PREVIEW_SUFFIX
        try:
            made = self._image(doc, src, dst, count) if what == 'image' else \
                self._video(src, dst, count)
            if made:
                self._put(dst, preview)
                doc['preview'] = preview
                count(C.PREVIEWS_MADE)
        finally:
            _remove(dst)

    def _image(self, doc, src, dst, count):
        """Thumbnail *src* into *dst* (None: measure only); True when made."""
        try:
            if dst is None:
                # lazy: Pillow only in crawls that keep media
                from PIL import Image
                with Image.open(src) as im:
                    doc['width'], doc['height'] = im.size
                return False
            doc['width'], doc['height'] = content.sandboxed(
                image_preview, (src, dst, self.size, self.max_pixels), self.seconds,
                self.memory_mb)
            return True
        except content.ParserError as e:    # the child's: timeout, memory, its error
            count(C.previews_failed(str(e) or 'unreadable'))
        except Exception as e:
            count(C.previews_failed(type(e).__name__))
        return False

    def _video(self, src, dst, count):
        if self.ffmpeg is None:
            with self.lock:     # the task's fetch threads share this store
                if not self.warned:
                    log.warning('no ffmpeg (media.ffmpeg = %r): videos get no preview',
                                self.ffmpeg_name)
                    self.warned = True
            count(C.PREVIEWS_UNAVAILABLE)
            return False
        size = self.size
        cmd = [self.ffmpeg, '-nostdin', '-hide_banner', '-loglevel', 'error',
               '-threads', '1', '-protocol_whitelist', 'file',
               '-format_whitelist', _VIDEO_FORMATS, '-i', src,
               '-vf', 'thumbnail=25,scale=%d:%d:force_original_aspect_ratio=decrease'
               % (size, size), '-frames:v', '1', '-f', 'image2', '-c:v', 'mjpeg',
               '-y', dst]
        if self.prlimit:
            cmd = [self.prlimit, '--as=%d' % (self.memory_mb << 20),
                   '--cpu=%d' % self.seconds, '--'] + cmd
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=self.seconds)
        except subprocess.TimeoutExpired:
            count(C.previews_failed('timeout'))
            return False
        if done.returncode != 0 or not os.path.exists(dst) or not os.path.getsize(dst):
            count(C.previews_failed('ffmpeg'))
            return False
        return True

    # -- the store --------------------------------------------------------------------

    @property
    def hdfs(self):
        """This thread's WebHDFS client (a requests session each: the fetch threads
        share the store), or None for a local folder."""
        if self.webhdfs is None:
            return None
        if getattr(self.clients, 'client', None) is None:
            # lazy: only a Hadoop crawl's tasks talk to HDFS
            from hdfs import InsecureClient
            self.clients.client = InsecureClient(self.webhdfs[0], user=self.webhdfs[1])
        return self.clients.client

    def _exists(self, name):
        path = self.root + '/' + name
        if self.hdfs is not None:
            return self.hdfs.status(path, strict=False) is not None
        return os.path.exists(path)

    def _put(self, src, name):
        """Copy local file *src* to *name* under the crawl's folder: to a temporary
        name, then renamed, so a reader never sees half a file; a file another task
        stored meanwhile is the same bytes, and stays."""
        path = self.root + '/' + name
        folder, tmp = os.path.dirname(path), '%s.tmp-%s' % (path, uuid.uuid4().hex[:8])
        hdfs = self.hdfs
        if hdfs is not None:
            hdfs.makedirs(folder)
            with open(src, 'rb') as f:
                hdfs.write(tmp, data=f, overwrite=True)
            if not self._hdfs_rename(hdfs, tmp, path):
                hdfs.delete(tmp)
            return
        os.makedirs(folder, exist_ok=True)
        shutil.copyfile(src, tmp)
        os.replace(tmp, path)

    @staticmethod
    def _hdfs_rename(hdfs, tmp, path):
        """WebHDFS rename; False when *path* exists already (another task's copy). Any
        other failure (permissions, safe mode) raises: nothing was stored."""
        # lazy: only a Hadoop crawl's tasks talk to HDFS
        from hdfs.util import HdfsError
        try:
            hdfs.rename(tmp, path)
            return True
        except HdfsError:
            if hdfs.status(path, strict=False) is None:
                raise
            return False
