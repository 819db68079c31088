"""MRPlanFetch: plan which fetch list holds which big politeness key (optional step).

Reads ``url`` records (in/NNN) and writes ``plan`` records (plan/NNN):
``{"kind": "plan", "key": KEY, "partition": P, "label": LABEL, "urls": N, "cost": S}``
for every key whose predicted cost (URL count x (delay + expected latency), seconds) is
at least ``fetch.plan_min_share`` of one reducer's fair share; see jobs.lib.plan. MRFetch
reads it with ``--plan`` and sends those keys to their planned reducer.

Run alone::

    python -m jobs.plan_fetch --crawl-conf crawl/conf.json crawl/in/000 -o /tmp/plan
    python -m jobs.fetch --crawl-conf crawl/conf.json --plan /tmp/plan/part-00000 crawl/in/000 -o /tmp/doc
"""
from mrjob.step import MRStep

from jobs.base import CrawlJob
from jobs.lib import counters as C, plan


class MRPlanFetch(CrawlJob):
    """One step: each mapper sums its URLs per key (in-mapper combining: one row per key
    and task, the table is as big as the plan reducer's anyway), one reducer places."""
    COUNTER_GROUP = C.PLAN

    def configure_args(self):
        super().configure_args()
        self.add_passthru_arg('--bins', type=int, default=0,
                              help='Fetch lists to place the keys in (MRFetch --bins). '
                              'Default: 0 (fetch.reducers, or this machine\'s cores).')

    def steps(self):
        return [MRStep(mapper_init=self.mapper_init_sums,
                       mapper=self.mapper_cost_by_key,
                       mapper_final=self.mapper_final_sums,
                       reducer=self.reducer_place,
                       jobconf={'mapreduce.job.reduces': 1})]

    def mapper_init_sums(self):
        self.sums = plan.Sums(self.conf)

    def mapper_cost_by_key(self, _, line):
        """in/ line -> this task's sums per politeness key (nothing emitted yet)."""
        for rec in self.records(line, 'url'):
            self.sums.add(rec)
        return ()

    def mapper_final_sums(self):
        """-> (None, [key, urls, seconds]) per key, for the single planning reducer."""
        for row in self.sums.rows():
            yield None, row

    def reducer_place(self, _, values):
        """All keys' costs -> plan records of the keys worth placing (LPT)."""
        recs, keys = plan.records(values, self.conf, plan.bins_of(self.options.bins,
                                                                  self.conf))
        self.count(C.PLAN_KEYS, keys)
        self.count(C.PLAN_KEYS_PLACED, len(recs))
        for rec in recs:
            yield None, rec


if __name__ == '__main__':
    MRPlanFetch.run()
