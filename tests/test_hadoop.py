"""The same crawl on a real single-node Hadoop (HDFS + YARN + streaming) and on the local runner.

Needs the cluster that ``make hadoop-up`` starts (``make test`` starts and stops it) and the
environment of ``hadoop/env.sh``. If the cluster is not there the test fails, loudly: a
crawler whose Hadoop path is untested is not done.
"""
import json
import os
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET

import pytest

from drivers.fixture_site import FixtureSite
from drivers.hdfs import WebHDFS
from tests.conftest import ROOT, TEST_SETTINGS, read_records, read_xml

pytestmark = pytest.mark.hadoop
DEPTH = 2


def mrcrawl_crawl(seeds, out, runner):
    args = [sys.executable, '-m', 'drivers.cli', 'crawl', '--seeds', str(seeds), '--depth',
            str(DEPTH), '--out', out, '-r', runner]
    for s in TEST_SETTINGS:
        args += ['--set', s]
    res = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, 'crawl -r %s failed:\n%s\n%s' % (runner, res.stdout[-3000:],
                                                                  res.stderr[-5000:])
    return res.stdout


def hdfs_records(fs, folder):
    out = []
    for name in fs.listdir(folder):
        if name.startswith(('_', '.')):
            continue
        out.extend(json.loads(l) for l in fs.read_text(fs.join(folder, name)).splitlines()
                   if l.strip())
    return out


def hdfs_xml(fs, folder):
    docs = {}
    for name in fs.listdir(folder):
        if name.startswith(('_', '.')):
            continue
        for line in fs.read_text(fs.join(folder, name)).splitlines():
            url, _, doc = line.partition('\t')
            assert url not in docs
            docs[url] = doc
    return docs


def test_hadoop_crawl_matches_local_runner(tmp_path):
    for var in ('MRCRAWL_HADOOP_BIN', 'MRCRAWL_STREAMING_JAR', 'MRCRAWL_TASK_PYTHON'):
        assert os.environ.get(var), '%s is not set: run through `make test` (it sources ' \
                                    'hadoop/env.sh and starts the cluster)' % var
    out_uri = 'hdfs:///mrcrawl-it/%s' % uuid.uuid4().hex[:8]
    fs = WebHDFS.from_uri(out_uri)
    try:
        fs.client.status('/')
    except Exception as e:
        pytest.fail('the single-node Hadoop is not reachable over WebHDFS (%s): %s' % (
            fs.client.url, e))

    with FixtureSite() as site:
        seeds = tmp_path / 'seeds.txt'
        seeds.write_text(site.url('/') + '\n')
        local_out = str(tmp_path / 'local')
        mrcrawl_crawl(seeds, local_out, 'local')
        n_local = len(site.requests)
        summary = mrcrawl_crawl(seeds, out_uri, 'hadoop')

    # Same pages in xml/ (read from HDFS as a downstream job would) and same documents.
    local_xml = read_xml(os.path.join(local_out, 'xml'))
    hadoop_xml = hdfs_xml(fs, out_uri + '/xml')
    assert sorted(hadoop_xml) == sorted(local_xml)
    assert len(hadoop_xml) >= 8
    for url, doc in hadoop_xml.items():
        h, l = ET.fromstring(doc), ET.fromstring(local_xml[url])
        assert h.find('title').text == l.find('title').text
        assert [u.text for u in h.find('duplicates')] == [u.text for u in l.find('duplicates')]

    # Same statuses, layer by layer (out/: the fetch parses, fetch.parse).
    for layer in ['%03d' % n for n in range(DEPTH + 1)]:
        local_docs = {d['url']: d['status'] for d in read_records(
            os.path.join(local_out, 'out', layer))}
        hadoop_docs = {d['url']: d['status'] for d in hdfs_records(
            fs, '%s/out/%s' % (out_uri, layer))}
        assert hadoop_docs == local_docs, layer

    # The Hadoop jobs' counters feed the same per-layer summary.
    local_report = json.load(open(os.path.join(local_out, 'report.json')))
    hadoop_report = json.loads(fs.read_text(out_uri + '/report.json'))
    keys = ('urls_in', 'fetched', 'http_error', 'robots_denied', 'new_urls', 'accounted')
    assert [{k: r[k] for k in keys} for r in hadoop_report['layers']] == \
        [{k: r[k] for k in keys} for r in local_report['layers']]
    assert hadoop_report['xml']['documents'] == len(hadoop_xml)
    assert hadoop_report['index']['rows'] == local_report['index']['rows'] > 0
    assert 'crawl summary' in summary
    assert n_local > 0

    # A downstream team's job reads xml/ straight from HDFS (jobs/inverted_index.py
    # imports nothing from mrcrawl; mrjob ships itself).
    res = subprocess.run(
        [sys.executable, '-m', 'jobs.inverted_index', '-r', 'hadoop', '--python-bin',
         os.environ['MRCRAWL_TASK_PYTHON'], '--hadoop-streaming-jar',
         os.environ['MRCRAWL_STREAMING_JAR'], '--hadoop-bin', os.environ['MRCRAWL_HADOOP_BIN'],
         out_uri + '/xml', '--output-dir', out_uri + '/inverted_index'],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    index = hdfs_records(fs, out_uri + '/inverted_index')   # OUT/index is the Parquet index
    assert index, 'empty inverted index'
    terms = {rec['term']: rec for rec in index}
    # "Fixture home" is the title of the seed page: its term points back to it.
    assert any(p['url'].endswith(':%d/' % site.port) for p in terms['fixture']['postings'])
    fs.rm(out_uri)
