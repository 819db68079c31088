"""Shared test fixtures: the fixture website on loopback and a crawl helper."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from drivers.fixture_site import FixtureSite  # noqa: E402
from jobs.lib import config  # noqa: E402

#: Settings every test crawl uses: loopback must be allowed, delays short.
TEST_SETTINGS = ['security.allow_private_networks=true', 'politeness.delay=0.2',
                 'fetch.read_timeout=5', 'fetch.connect_timeout=2']


@pytest.fixture
def site():
    with FixtureSite() as s:
        yield s


def test_conf(*extra):
    return config.load(overrides=TEST_SETTINGS + list(extra))


test_conf.__test__ = False


def crawl_site(site, folder, conf, depth, start='/', runner='inline'):
    """Crawl *site* from its path *start* into FOLDER/crawl: (out path, report)."""
    seeds = os.path.join(str(folder), 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write(site.url(start) + '\n')
    out = os.path.join(str(folder), 'crawl')
    from drivers.crawl import Crawl
    report = Crawl(out, conf, runner=runner, depth=depth, progress=lambda m: None).run(seeds)
    return out, report


def at(days):
    """An ISO-8601 UTC time *days* from now (re-crawl times)."""
    from datetime import datetime, timedelta, timezone
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
