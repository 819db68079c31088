"""MRPageRank: PageRank of the crawl's known link graph (strategy ``pagerank``).

Reads ``db`` records (crawldb/NNN: the nodes) and ``page`` records (out/*: the edges,
each fetched page's out-links) and writes ``{"kind": "pagerank", "url", "pagerank"}``
(pagerank/NNN) for every known URL. It is "partial" PageRank: only the graph crawled so
far, recomputed every ``generate.pagerank_every`` layers; MRGenerate joins it by host.

The steps: one that builds each node's out-link list, ``generate.pagerank_iterations``
iterations of rank = (1 - d) + d x sum(rank of in-linking page / its out-degree), and
one that writes the records. Dangling pages (no out-links) keep their rank to
themselves; unfetched URLs have no out-links yet.

Run alone::

    python -m jobs.pagerank --crawl-conf crawl/conf.json crawl/crawldb/002 crawl/out/000 crawl/out/001 crawl/out/002 -o /tmp/pr
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, records as R


class MRPageRank(CrawlJob):
    COUNTER_GROUP = C.PAGERANK

    def steps(self):
        gen = self.conf['generate']
        return ([MRStep(mapper=self.mapper_graph, reducer=self.reducer_node)] +
                [MRStep(mapper=self.mapper_spread, reducer=self.reducer_rank)
                 for _ in range(gen['pagerank_iterations'])] +
                [MRStep(mapper=self.mapper_output)])

    def mapper_graph(self, _, line):
        """db line -> (url, None); fetched page line -> (url, its out-links)."""
        for rec in self.records(line, 'db', 'page'):
            if rec['kind'] == 'db':
                yield rec['url'], None
            elif rec.get('status') == R.FETCH_FETCHED:
                yield rec['url'], [l['url'] for l in rec.get('links', ())]

    def reducer_node(self, url, values):
        """(url, out-link lists) -> (url, [rank 1.0, out-links]) for every known URL."""
        links = set()
        for v in values:
            if v:
                links.update(v)
        self.increment_counter(C.PAGERANK, C.PAGERANK_NODES, 1)
        yield url, [1.0, sorted(links)]

    def mapper_spread(self, url, node):
        """(url, [rank, links]) -> its structure, and a rank share to each out-link."""
        rank, links = node
        yield url, ['node', links]
        if links:
            share = rank / len(links)
            for target in links:
                yield target, ['share', share]
        else:
            yield url, ['share', rank]     # dangling: keep its own rank

    def reducer_rank(self, url, values):
        """(url, structure + shares) -> (url, [new rank, links]) for known URLs only."""
        d = self.conf['generate']['pagerank_damping']
        links, total = None, 0.0
        for kind, v in values:
            if kind == 'node':
                links = v
            else:
                total += v
        if links is not None:        # shares sent to URLs outside crawldb are dropped
            yield url, [(1 - d) + d * total, links]

    def mapper_output(self, url, node):
        yield None, {'kind': 'pagerank', 'url': url, 'pagerank': round(node[0], 6)}


if __name__ == '__main__':
    MRPageRank.run()
