"""MRInvertedIndex: an example downstream job over xml/ (an inverted index).

It reads xml/ exactly as an indexing team would: lines ``URL<TAB><page .../>``, one XML
document per line (schema conf/page.xsd), from a local folder or HDFS, with nothing of
mrcrawl but this file (no crawl configuration, no records module). Deletion documents
(``<deletion>``, from a re-crawl) are skipped and counted.

Output: one JSON line per term, ``{"term": T, "df": N, "postings": [{"url": U,
"tf": {"title": n, "main_text": n, "anchors": n}}, ...]}``, postings sorted by URL, at
most ``--max-postings`` per term. Terms are lower-cased words of the title, the main
text (the full text when it is empty) and the in-link anchor texts: anchors make a page
findable by what other pages call it.

Run alone::

    python -m jobs.inverted_index crawl/xml -o /tmp/index
    python -m jobs.inverted_index -r hadoop hdfs:///crawl/xml -o hdfs:///tmp/index
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

    def steps(self):
        return [MRStep(mapper=self.mapper_terms, combiner=self.combiner_postings,
                       reducer=self.reducer_postings)]

    def mapper_terms(self, _, line):
        """``URL<TAB>XML`` -> (term, [[url, field, count]])."""
        url, sep, doc = line.partition('\t')
        if not sep:
            self.increment_counter(GROUP, 'malformed_line_total')
            return
        try:
            root = ET.fromstring(doc)
        except ET.ParseError:
            self.increment_counter(GROUP, 'malformed_xml_total')
            return
        if root.tag != 'page':
            self.increment_counter(GROUP, 'skipped_%s_total' % root.tag)
            return
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
            yield word, [[url, field, n]]

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
