"""Benchmark: the main-text extractors (parse.main_text_extractor), CPU and quality.

    .venv/bin/python bench/main_text.py [--docs DIR] [--sample N] [--json FILE]
                                        [--web bench/work/web-cpu1x]

Quality needs pages whose main content is known: the python3-doc manual (found or
installed as bench/parse_speed.py does) marks it, on every page, as ``div[role=main]``
(Sphinx). Each extractor's output is scored by words (lower-cased ``\\w+``, counted
with multiplicity) against that element's text: precision, recall and F1 per page,
then the mean and median over the sample; pages whose reference is empty are left
out. CPU seconds are this process's (one core), per page, for
``jobs.lib.maintext.main_text`` as the parse task calls it.

With --web, the same CPU figure on the benchmark's synthetic pages (no quality score:
they have no marked main content). Exit status 0; prints SKIP when the manual is
missing and cannot be installed.
"""
import argparse
import collections
import glob
import json
import os
import random
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parse_speed import install, load_pages, locate  # noqa: E402
from jobs.lib import maintext  # noqa: E402
from selectolax.lexbor import LexborHTMLParser  # noqa: E402

WORD = re.compile(r'\w+')


def words(text):
    return collections.Counter(WORD.findall(text.lower()))


def score(got, ref):
    g, r = words(got), words(ref)
    tp = sum((g & r).values())
    p = tp / max(1, sum(g.values()))
    rc = tp / max(1, sum(r.values()))
    return p, rc, (2 * p * rc / (p + rc) if p + rc else 0.0)


def cpu_per_page(extractor, pages):
    maintext.main_text(pages[0], None, extractor)     # imports and warm-up
    t = time.process_time()
    out = [maintext.main_text(p, None, extractor) for p in pages]
    return (time.process_time() - t) / len(pages), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--docs', default=None)
    ap.add_argument('--sample', type=int, default=300)
    ap.add_argument('--seed', type=int, default=2)
    ap.add_argument('--web', default=None)
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    root = locate(args.docs)
    if root is None:
        reason = install()
        root = locate(args.docs)
        if root is None:
            print('SKIP: python3-doc not found (%s)' % (reason or 'not installed'))
            return 0
    pages = [text for _, text, _ in load_pages(root)]
    random.seed(args.seed)
    pages = random.sample(pages, min(args.sample, len(pages)))
    refs = []
    for text in pages:
        node = LexborHTMLParser(text).css_first('div[role=main]')
        refs.append(node.text(separator=' ') if node is not None else '')
    result = {'docs': root, 'pages': len(pages), 'extractors': {}}
    web = None
    if args.web:
        files = sorted(glob.glob(os.path.join(args.web, '*', '*', '*.html')))
        random.seed(args.seed)
        web = [open(f, encoding='utf-8').read()
               for f in random.sample(files, min(args.sample, len(files)))]
    for name in maintext.EXTRACTORS:
        cpu, outs = cpu_per_page(name, pages)
        scored = [(score(o, r), page) for o, r, page in zip(outs, refs, pages) if r.strip()]
        p, r, f = zip(*(s for s, _ in scored))
        entry = {'ms_per_page': round(cpu * 1000, 2),
                 'precision_mean': round(statistics.mean(p), 3),
                 'recall_mean': round(statistics.mean(r), 3),
                 'f1_mean': round(statistics.mean(f), 3),
                 'f1_median': round(statistics.median(f), 3),
                 'pages_scored': len(scored),
                 'pages_f1_below_0.5': sum(1 for x in f if x < 0.5),
                 'empty_outputs': sum(1 for o in outs if not o)}
        if web:
            entry['bench_web_ms_per_page'] = round(cpu_per_page(name, web)[0] * 1000, 3)
        result['extractors'][name] = entry
        print('%-12s %s' % (name, json.dumps(entry)), flush=True)
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
