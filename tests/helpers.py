"""Helpers the tests share: the test settings, crawling the fixture site, running a job
in-process, reading a job's or a crawl's output, and records and pages to feed them.
Fixtures and the test kinds are in conftest.py; the fixture website itself is
drivers/fixtures/site.py."""
import io
import json
import os
import random
import re
import subprocess
import sys
import urllib.request
from datetime import datetime, timedelta, timezone

from PIL import Image

from drivers.crawl import Crawl
from drivers.merge_driver import merge_step
from drivers.runtime.launch import make_runner
from jobs.anchors import MRAnchors
from jobs.inverted_index import MRInvertedIndex, read_index
from jobs.lib import config, counters as C, records as R
from jobs.lib.fetcher import new_doc
from jobs.lib.parsepage import PageParser
from jobs.merge import MRMerge
from jobs.merge_join import MRMergeJoin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: Settings every test crawl uses: loopback must be allowed, delays short.
TEST_SETTINGS = ['security.allow_private_networks=true', 'politeness.delay=0.2',
                 'fetch.read_timeout=5', 'fetch.connect_timeout=2']


def test_conf(*extra):
    return config.load(overrides=TEST_SETTINGS + list(extra))




test_conf.__test__ = False


def crawl_site(site, folder, conf, depth, start='/', runner='inline'):
    """Crawl *site* from its path *start* into FOLDER/crawl: (out path, report)."""
    seeds = os.path.join(str(folder), 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write(site.url(start) + '\n')
    out = os.path.join(str(folder), 'crawl')
    report = Crawl(out, conf, runner=runner, depth=depth, progress=lambda m: None).run(seeds)
    return out, report


def at(days):
    """An ISO-8601 UTC time *days* from now (re-crawl times)."""
    t = datetime.now(timezone.utc) + timedelta(days=days)
    return t.strftime('%Y-%m-%dT%H:%M:%SZ')


def read_records(folder):
    """All JSON-lines records of a job output folder."""
    out = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(('.', '_')):
            continue
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def current_xml(out):
    """{url: xml text} of a crawl as it stands: xml/ (the base build) with every delta
    OUT/outputs.json lists applied in order, as an indexer applies them."""
    docs = read_xml(os.path.join(out, 'xml'))
    for build in json.load(open(os.path.join(out, 'outputs.json'))).get('deltas', []):
        for url, doc in read_xml(os.path.join(out, 'delta', build, 'xml')).items():
            if doc.startswith('<deletion'):
                docs.pop(url, None)
            else:
                docs[url] = doc
    return docs


def current_merged(out):
    """{url: merged record} of a crawl as it stands: merged/ with the deltas' records."""
    recs = {r['url']: r for r in read_records(os.path.join(out, 'merged'))}
    for build in json.load(open(os.path.join(out, 'outputs.json'))).get('deltas', []):
        for r in read_records(os.path.join(out, 'delta', build, 'records')):
            if r['kind'] == 'deletion':
                recs.pop(r['url'], None)
            else:
                recs[r['url']] = r
    return recs


def read_xml(folder):
    """{url: xml text} from xml/part-*."""
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            for line in f:
                url, _, doc = line.rstrip('\n').partition('\t')
                assert url not in out, 'page %s written twice' % url
                out[url] = doc
    return out


def run_job(job_cls, conf_file, records, *args, raw_lines=()):
    lines = [json.dumps(r) for r in records] + list(raw_lines)
    job = job_cls(['-r', 'inline', '--crawl-conf', conf_file] + list(args))
    job.sandbox(stdin=io.BytesIO(('\n'.join(lines) + '\n').encode()))
    with make_runner(job) as runner:
        runner.run()
        out = [value for _, value in job.parse_output(runner.cat_output())]
        return out, C.merge_steps(runner.counters())


def run_merge(conf_file, records, *args):
    """The merge as the driver runs it: MRMerge over *records* (page records) into
    merge_map records, MRAnchors over the pages and those, then MRMergeJoin over both
    and the pages again. Returns the merged records and the jobs' counters (groups
    merge and merge_join)."""
    maps, counters = run_job(MRMerge, conf_file, records, *args)
    assert all(m['kind'] == 'merge_map' for m in maps)
    pages = [r for r in records if r.get('kind') == 'page']
    anchors, anchor_counters = run_job(MRAnchors, conf_file, pages + maps, *args)
    assert all(a['kind'] == 'anchors' for a in anchors)
    out, join_counters = run_job(MRMergeJoin, conf_file, maps + anchors + pages, *args)
    return out, merge_step(*({'counters': c, 'seconds': 0} for c in (
        counters, anchor_counters, join_counters)))['counters']


def page(url, links=(), status='fetched', depth=0, **kw):
    rec = {'kind': 'page', 'url': url, 'depth': depth, 'layer': depth, 'status': status,
           'http_status': 200, 'final_url': url, 'digest': 'sha1:' + url,
           'fetch_time': '2026-11-30T00:00:00Z', 'links': [{'url': u, 'text': '', 'rel': ''}
                                                          for u in links]}
    rec.update(kw)
    return rec


DELAY = 0.2


def run_job_at_delay(job_cls, tmp_path, records, *settings, args=(), runner='inline'):
    conf = tmp_path / ('conf-%s.json' % job_cls.__name__)
    conf.write_text(json.dumps(test_conf('politeness.delay=%s' % DELAY, *settings)))
    lines = ''.join(json.dumps(r) + '\n' for r in records)
    job = job_cls(['-r', runner, '--crawl-conf', str(conf)] + list(args))
    job.sandbox(stdin=io.BytesIO(lines.encode()))
    with make_runner(job) as runner:
        runner.run()
        out = [v for _, v in job.parse_output(runner.cat_output())]
        counters = C.merge_steps(runner.counters())
    return out, counters


def check_politeness(site, delay=DELAY):
    """From the server's log: requests at least *delay* apart, robots obeyed."""
    times = sorted(r['t'] for r in site.requests)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert not gaps or min(gaps) >= delay * 0.95, (site.host, min(gaps))
    assert '/private/secret.html' not in site.paths()
    assert all(r['ua'].startswith('mrcrawl/') for r in site.requests)


def check_one_doc_each(records, docs, counters):
    assert sorted(r['url'] for r in docs) == sorted(r['url'] for r in records)
    assert all(d['status'] in R.FETCH_STATUSES for d in docs)
    by_status = sum(n for k, n in counters['fetch'].items()
                    if k.startswith('fetch_') and k != 'fetch_bytes_total')
    assert by_status == len(records) == counters['fetch']['urls_in_total']


def outcome(out, base):
    """What a crawl produced, without times: statuses per layer, xml pages, crawldb."""
    def strip(u):
        return u.replace(base, '')
    docs = {}
    for layer in sorted(os.listdir(os.path.join(out, 'out'))):
        for d in read_records(os.path.join(out, 'out', layer)):
            docs[strip(d['url'])] = (layer, d['status'], d['http_status'])
    xml = sorted(strip(u) for u in read_xml(os.path.join(out, 'xml')))
    newest = sorted(os.listdir(os.path.join(out, 'crawldb')))[-1]
    db = sorted((strip(r['url']), r['status'], r['depth'])
                for r in read_records(os.path.join(out, 'crawldb', newest)))
    return docs, xml, db


def run_index(runner, *inputs):
    job = MRInvertedIndex(['-r', runner] + list(inputs))
    with job.make_runner() as r:
        r.run()
        lines = [line.decode() for line in r.cat_output()]
        counters = {}
        for step in r.counters():
            for name, n in step.get('inverted_index', {}).items():
                counters[name] = counters.get(name, 0) + n
    return read_index(lines), counters


def history_jobs(since_ms, until_ms=None):
    """The JobHistoryServer's record of every MapReduce job started between *since_ms* and
    *until_ms*."""
    conf = open(os.path.join(os.environ['HADOOP_CONF_DIR'], 'mapred-site.xml')).read()
    addr = re.search(r'mapreduce.jobhistory.webapp.address</name><value>([^<]+)', conf).group(1)
    base = 'http://%s/ws/v1/history/mapreduce/jobs' % addr
    with urllib.request.urlopen(base, timeout=30) as r:
        jobs = json.load(r)['jobs']['job'] or []
    jobs = jobs if isinstance(jobs, list) else [jobs]     # Jersey: one job is no list
    out = []
    for j in jobs:
        if j['startTime'] >= since_ms and (until_ms is None or j['startTime'] < until_ms):
            with urllib.request.urlopen('%s/%s' % (base, j['id']), timeout=30) as r:
                out.append(json.load(r)['job'])
    return out


def crawl_fixture(site, tmp_path, runner, depth=3, settings=()):
    return crawl_site(site, tmp_path, test_conf(*settings), depth, runner=runner)


def mrcrawl(*args, cwd=None):
    return subprocess.run([sys.executable, '-m', 'drivers.cli'] + list(args), cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=120)


WORDS = ('river harbour orchard winter bread bird forest market school evening light '
         'visitor spring garden library train cook map letter song game colour').split()


def article(seed, n=400):
    rnd = random.Random(seed)
    return ' '.join(rnd.choice(WORDS) + str(rnd.randrange(50)) for _ in range(n))


def flip_words(text, n, seed=1):
    """*text* with *n* words replaced (a date, a session id...)."""
    w = text.split()
    rnd = random.Random(seed)
    for i in rnd.sample(range(len(w)), n):
        w[i] = 'changed%d' % rnd.randrange(10 ** 6)
    return ' '.join(w)


def png(width=640, height=400, mode='RGB'):
    im = Image.new(mode, (width, height))
    im.putdata([((x * 7) % 256, (y * 5) % 256, 90)[:len(mode)] if mode != 'L' else x % 256
                for y in range(height) for x in range(width)])
    buf = io.BytesIO()
    im.save(buf, 'PNG')
    return buf.getvalue()


FETCHED_BASE = 'http://127.0.0.1:1/'


def fetched(path, layer, status, prev=None, **kw):
    """A page record as the fetcher makes it (its key order: what MRCurrent reads
    from the bytes)."""
    rec = {'url': FETCHED_BASE + path, 'depth': 1}
    if prev:
        rec['prev'] = {'digest': 'sha1:' + path, 'fields_checksum': None,
                       'status': prev, 'last_fetch': '2026-12-01T00:00:00Z'}
    doc = new_doc(rec, layer, status, kw.pop('reason', None))
    doc.update(kw, fetch_time='2026-12-01T00:00:0%dZ' % layer, attempts=1)
    del doc['body']       # as in meta/: the text stays in out/
    return PageParser.bare_page(doc)
