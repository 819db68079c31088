"""Do two crawls of the same web have the same xml/? (issue 17: the same XML on YARN as
on the local runner, at every point.)

    python bench/compare_xml.py LOCAL_XML_DIR OTHER_XML_DIR [--json OUT]

Each document is compared whole, except what differs between any two runs by nature:
the fetch time (``fetch/@time``) and the WARC pointers (which fetch task's file holds a
record depends on how the layer was split). Standard library only (run.py's Python).
"""
import argparse
import json
import os
import xml.etree.ElementTree as ET


def read_xml(folder):
    """{url: document bytes} of an xml/ folder (a URL twice counts as a difference)."""
    docs, repeated = {}, 0
    for name in sorted(os.listdir(folder)):
        if name.startswith(('.', '_')):
            continue
        with open(os.path.join(folder, name), 'rb') as f:
            for line in f:
                url, _, doc = line.rstrip(b'\n').partition(b'\t')
                repeated += url in docs
                docs[url] = doc
    return docs, repeated


def normal(doc):
    root = ET.fromstring(doc)
    fetch = root.find('fetch')
    if fetch is not None:
        fetch.attrib.pop('time', None)
    for parent in root.iter():
        for child in list(parent):
            if child.tag.startswith('warc'):
                parent.remove(child)
    return ET.tostring(root)


def compare(a_dir, b_dir, examples=5):
    a, a_rep = read_xml(a_dir)
    b, b_rep = read_xml(b_dir)
    common = set(a) & set(b)
    differing = sorted(u for u in common if normal(a[u]) != normal(b[u]))
    return {'documents': [len(a), len(b)], 'only_first': len(set(a) - set(b)),
            'only_second': len(set(b) - set(a)), 'repeated': [a_rep, b_rep],
            'differing': len(differing),
            'differing_examples': [u.decode('utf-8', 'replace') for u in differing[:examples]],
            'same': not (set(a) ^ set(b)) and not differing and not a_rep and not b_rep}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('first')
    p.add_argument('second')
    p.add_argument('--json')
    a = p.parse_args()
    result = compare(a.first, a.second)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result))
    return 0 if result['same'] else 1


if __name__ == '__main__':
    raise SystemExit(main())
