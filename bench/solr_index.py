"""How fast ``mrcrawl index`` fills a Solr, against Solr's own pace on this machine.

    .venv/bin/python bench/solr_index.py [--crawl bench/work/out-cpu1x-mrcrawl] [-r local]

1. starts the test Solr (solr/up.sh) and deletes the crawl's documents;
2. times ``mrcrawl index CRAWL --solr URL -r RUNNER`` (a full post: the base);
3. deletes them again and times the trivial client: the same documents (made by the same
   jobs.lib.solr.document, before the clock starts) posted by one Python process in
   batches of solr.batch_docs, then one commit. That is Solr's own ingest pace with
   nothing of mrcrawl's around it: the MapReduce job, the task processes, the records'
   reading and the documents' making;
4. times a rerun with nothing new (OUT/solr.json says the Solr is up to date);
5. writes bench/results/solr_index.json.

The crawl is any finished crawl folder; the default is bench/run.py's cpu1x crawl
(20,100 pages of a loopback web): run ``make bench-quick`` or bench/run.py cpu1x first.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

import requests

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, ROOT)

from jobs.lib import config, solr  # noqa: E402

URL = 'http://127.0.0.1:8983/solr/mrcrawl'


def delete_crawl(out):
    p = solr.Poster(URL, config.load()['solr'], lambda n, k: None, print)
    p.delete_query('crawl:' + solr.quoted(out))
    p.commit()
    if os.path.exists(os.path.join(out, 'solr.json')):
        os.remove(os.path.join(out, 'solr.json'))
    return p


def index(out, runner):
    start = time.monotonic()
    res = subprocess.run([os.path.join(ROOT, '.venv', 'bin', 'mrcrawl'), 'index', out,
                          '--solr', URL, '-r', runner], capture_output=True, text=True)
    if res.returncode:
        sys.exit('mrcrawl index failed:\n%s%s' % (res.stdout, res.stderr))
    return time.monotonic() - start, res.stdout


def trivial_client(out, poster):
    """Post the crawl's documents from one process, timed from the first request."""
    conf = json.load(open(os.path.join(out, 'conf.json')))
    types, batch = solr.site_types(conf), config.load()['solr']['batch_docs']
    docs = []
    for path in sorted(glob.glob(os.path.join(out, 'merged', 'part-*'))):
        with open(path) as f:
            docs += [solr.document(json.loads(line), '001', out, types) for line in f]
    bodies = [json.dumps(docs[i:i + batch]).encode() for i in range(0, len(docs), batch)]
    session = requests.Session()
    start = time.monotonic()
    for body in bodies:
        resp = session.post(URL + '/update', data=body,
                            headers={'Content-Type': 'application/json'}, timeout=300)
        resp.raise_for_status()
    poster.commit()
    return time.monotonic() - start, len(docs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--crawl', default=os.path.join(BENCH, 'work', 'out-cpu1x-mrcrawl'))
    ap.add_argument('-r', '--runner', default='local')
    args = ap.parse_args()
    out = os.path.abspath(args.crawl)
    subprocess.run(['bash', os.path.join(ROOT, 'solr', 'up.sh')], check=True)
    delete_crawl(out)
    seconds, printed = index(out, args.runner)
    found = int(printed.rsplit('solr ', 1)[1].split(': ', 1)[1].split()[0])
    poster = delete_crawl(out)
    client, docs = trivial_client(out, poster)
    index(out, args.runner)                 # the crawl's record back, then a rerun
    again, _ = index(out, args.runner)
    result = {'crawl': out, 'runner': args.runner, 'documents': found,
              'mrcrawl_index_seconds': round(seconds, 2),
              'mrcrawl_docs_per_second': round(found / seconds, 1),
              'trivial_client_seconds': round(client, 2),
              'trivial_client_docs_per_second': round(docs / client, 1),
              'ratio_to_trivial_client': round(seconds / client, 2),
              'rerun_nothing_new_seconds': round(again, 2),
              'at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}
    path = os.path.join(BENCH, 'results', 'solr_index.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == '__main__':
    main()
