"""Run one job of a finished crawl on HDFS again, on YARN, with other settings, and show
where its time went (map and reduce tasks from the JobHistoryServer).

    . hadoop/env.sh && .venv/bin/python bench/yarn_job.py \
        --crawl hdfs:///bench/out-cpu1x-mrcrawl-yarn --job xml \
        [--set hadoop.split_max_bytes=0] [--repeat 2]

The job reads the crawl's own folders (its conf.json, with --set applied on top) and
writes under hdfs:///bench/yarn-job-<job>, removed first. It runs the way the driver
runs it (drivers/crawl.py Crawl.run_step with the hadoop runner): so a setting such as
hadoop.split_max_bytes or hadoop.uber_max_bytes is measured on the same input, back to
back. Prints one line per run: client wall seconds, the job's wall, submit to start, map
and reduce task seconds, uber or not.
"""
import argparse
import json
import sys
import time

from yarn_anatomy import JHS, ROOT, as_list, rest     # the JobHistoryServer's REST API

sys.path.insert(0, ROOT)

JOBS = JHS + '/ws/v1/history/mapreduce/jobs'


def jobs_since(ms):
    found = as_list((rest(JOBS).get('jobs') or {}).get('job') or [])
    return sorted((j for j in found if j['startTime'] >= ms), key=lambda j: j['startTime'])


def describe(job):
    tasks = as_list(rest('%s/%s/tasks' % (JOBS, job['id']))['tasks']['task'])
    detail = rest('%s/%s' % (JOBS, job['id']))['job']
    return {'job': job['name'], 'wall': round((job['finishTime'] - job['startTime']) / 1e3, 1),
            'submit_to_start': round((detail['startTime'] - detail['submitTime']) / 1e3, 1),
            'maps': [round(t['elapsedTime'] / 1e3, 1) for t in tasks if t['type'] == 'MAP'],
            'reduces': [round(t['elapsedTime'] / 1e3, 1) for t in tasks
                        if t['type'] == 'REDUCE'],
            'uber': detail.get('uberized')}


def job_spec(name, src, fs):
    from jobs.html_to_xml import MRHtmlToXml
    from jobs.index_rows import MRIndexRows
    from jobs.merge import MRMerge
    from jobs.merge_join import MRMergeJoin
    from jobs.optimize import MROptimize
    layers = sorted(n for n in fs.listdir(src + '/out') if n.isdigit())
    outs = [src + '/out/' + n for n in layers]
    last = layers[-1]
    db = sorted(n for n in fs.listdir(src + '/crawldb') if n.isdigit() and n < last)[-1]
    return {'merge': (MRMerge, outs, []),
            'mergejoin': (MRMergeJoin, [src + '/merge_map'] + outs, ['--build', '001']),
            'indexrows': (MRIndexRows, outs + [src + '/merge_map'], []),
            'xml': (MRHtmlToXml, [src + '/merged'], []),
            'optimize': (MROptimize, [src + '/crawldb/' + db, src + '/out/' + last],
                         ['--layer', str(int(last))])}[name]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--crawl', required=True, help='a finished crawl folder on HDFS')
    ap.add_argument('--job', required=True,
                    choices=('merge', 'mergejoin', 'indexrows', 'xml', 'optimize'))
    ap.add_argument('--set', action='append', default=[], metavar='SECTION.KEY=VALUE')
    ap.add_argument('--repeat', type=int, default=1)
    args = ap.parse_args()
    from drivers.runtime import fs as fslib
    from drivers.crawl import Crawl
    from jobs.lib import config
    src = args.crawl.rstrip('/')
    fs = fslib.for_path(src)
    stored = json.loads(fs.read_text(src + '/conf.json'))
    # The crawl's settings over today's defaults (settings added since it ran keep their
    # default), then --set over both.
    conf = config.load(overrides=args.set)
    given = {item.partition('=')[0] for item in args.set}
    for section, values in stored.items():
        if not isinstance(values, dict):
            conf[section] = values
            continue
        for key, value in values.items():
            if key in conf.get(section, {}) and '%s.%s' % (section, key) not in given:
                conf[section][key] = value
    job_cls, inputs, extra = job_spec(args.job, src, fs)
    for _ in range(args.repeat):
        out = 'hdfs:///bench/yarn-job-' + args.job
        fs.rm(out)
        crawl = Crawl(out, conf, runner='hadoop', progress=lambda m: None)
        crawl.prepare()
        since = int(time.time() * 1000)
        start = time.monotonic()
        crawl.run_step(args.job, job_cls, inputs, crawl.path(args.job), extra,
                       runner='hadoop')
        wall = round(time.monotonic() - start, 1)
        print(json.dumps({'client_wall': wall, 'settings': args.set,
                          'jobs': [describe(j) for j in jobs_since(since)]}), flush=True)
        fs.rm(out)


if __name__ == '__main__':
    main()
