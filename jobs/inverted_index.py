"""MRInvertedIndex: an example downstream job over xml/ (an inverted index).

It reads xml/ exactly as an indexing team would: lines ``URL<TAB><page .../>``, one XML
document per line (schema conf/page.xsd), from a local folder or HDFS, with nothing of
mrcrawl but this file (no crawl configuration, no records module). Deletion documents
(``<deletion>``, from a cycle's delta) are skipped and counted when building.

Output: one JSON line per term, ``{"term": T, "df": N, "postings": [{"url": U,
"tf": {"title": n, "main_text": n, "anchors": n}}, ...]}``, postings sorted by URL, at
most ``--max-postings`` per term. Terms are lower-cased words of the title, the main
text (the full text when it is empty) and the in-link anchor texts: anchors make a page
findable by what other pages call it.

Applying a crawl cycle's delta (``--apply-delta``): the inputs are an index this job
wrote and the cycle's delta/CCC/xml. Every URL the delta names loses its old postings;
a page of the delta brings its new ones, a ``<deletion>`` none. A first step keys the
base postings and the delta's documents by URL, a second builds the term lines again;
the base index plus each cycle's delta, applied in turn, equals an index built from
the last xml/.

Run alone::

    python -m jobs.inverted_index crawl/xml -o /tmp/index
    python -m jobs.inverted_index -r hadoop hdfs:///crawl/xml -o hdfs:///tmp/index
    python -m jobs.inverted_index --apply-delta /tmp/index crawl/delta/002/xml -o /tmp/index2
"""
import json
import re
import xml.etree.ElementTree as ET

from mrjob.job import MRJob
from mrjob.protocol import JSONValueProtocol, RawValueProtocol
from mrjob.step import MRStep

WORD_RE = re.compile(r'\w+', re.UNICODE)
FIELDS = ('title', 'main_text', 'anchors')
GROUP = 'inverted_index'


class MRInvertedIndex(MRJob):
    INPUT_PROTOCOL = RawValueProtocol
    OUTPUT_PROTOCOL = JSONValueProtocol

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--max-postings', type=int, default=100000,
                              help='Postings kept per term. Default: %(default)s')
        self.add_passthru_arg('--apply-delta', action='store_true',
                              help='The inputs are an index this job wrote and a crawl '
                                   'cycle\'s delta xml: apply the delta. Default: off.')

    def steps(self):
        if self.options.apply_delta:
            return [MRStep(mapper=self.mapper_by_url, reducer=self.reducer_apply),
                    MRStep(combiner=self.combiner_postings, reducer=self.reducer_postings)]
        return [MRStep(mapper=self.mapper_terms, combiner=self.combiner_postings,
                       reducer=self.reducer_postings)]

    def parse(self, line):
        """``URL<TAB>XML`` -> (url, root element), or None when malformed (counted)."""
        url, sep, doc = line.partition('\t')
        if not sep:
            self.increment_counter(GROUP, 'malformed_line_total')
            return None
        try:
            return url, ET.fromstring(doc)
        except ET.ParseError:
            self.increment_counter(GROUP, 'malformed_xml_total')
            return None

    def mapper_terms(self, _, line):
        """``URL<TAB>XML`` -> (term, [[url, field, count]])."""
        parsed = self.parse(line)
        if parsed is None:
            return
        url, root = parsed
        if root.tag != 'page':
            self.increment_counter(GROUP, 'skipped_%s_total' % root.tag)
            return
        for term, posting in self.terms(url, root):
            yield term, [posting]

    def mapper_by_url(self, _, line):
        """An index line -> (url, ['old', term, tf]) per posting; a delta document ->
        (url, ['new', postings]) for a page, (url, ['del']) for a deletion."""
        if line.startswith('{'):
            entry = json.loads(line)
            for p in entry['postings']:
                yield p['url'], ['old', entry['term'], p['tf']]
            return
        parsed = self.parse(line)
        if parsed is None:
            return
        url, root = parsed
        if root.tag == 'page':
            yield url, ['new', list(self.terms(url, root))]
        else:
            self.increment_counter(GROUP, 'applied_%s_total' % root.tag)
            yield url, ['del']

    def reducer_apply(self, url, values):
        """(url, its old postings and delta document) -> (term, [[url, field, n]])."""
        old, new, touched = [], [], False
        for v in values:
            if v[0] == 'old':
                old.append(v)
            else:
                touched = True
                if v[0] == 'new':
                    new = v[1]
        if touched:
            for term, posting in new:
                yield term, [posting]
            return
        for _, term, tf in old:
            yield term, [[url, field, n] for field, n in sorted(tf.items())]

    def terms(self, url, root):
        """A page's (term, [url, field, count]) pairs."""
        self.increment_counter(GROUP, 'documents_total')
        texts = {'title': root.findtext('title') or '',
                 'main_text': root.findtext('main_text') or root.findtext('text') or '',
                 'anchors': ' '.join(a.text or '' for a in root.iterfind('anchors/anchor'))}
        counts = {}
        for field in FIELDS:
            for word in WORD_RE.findall(texts[field].lower()):
                key = (word, field)
                counts[key] = counts.get(key, 0) + 1
        for (word, field), n in counts.items():
            yield word, [url, field, n]

    def combiner_postings(self, term, lists):
        """Concatenate a task's postings of one term (fewer records to shuffle)."""
        yield term, [p for lst in lists for p in lst]

    def reducer_postings(self, term, lists):
        """(term, postings) -> one index line."""
        by_url = {}
        for lst in lists:
            for url, field, n in lst:
                tf = by_url.setdefault(url, {})
                tf[field] = tf.get(field, 0) + n
        urls = sorted(by_url)
        if len(urls) > self.options.max_postings:
            self.increment_counter(GROUP, 'postings_over_cap_total',
                                   len(urls) - self.options.max_postings)
            urls = urls[:self.options.max_postings]
        self.increment_counter(GROUP, 'terms_total')
        yield None, {'term': term, 'df': len(by_url),
                     'postings': [{'url': u, 'tf': by_url[u]} for u in urls]}


def read_index(lines):
    """{term: entry} from the job's output lines (for tests and small tools)."""
    out = {}
    for line in lines:
        if not line.strip():
            continue
        entry = json.loads(line)
        out[entry['term']] = entry
    return out


if __name__ == '__main__':
    MRInvertedIndex.run()
