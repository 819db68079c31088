"""CPU seconds by role over a window: which processes a crawl's machine time goes to.

    python bench/cpu_by_role.py --seconds 900 --out cpu.json   # start, then run a crawl

Samples /proc every --interval seconds and charges each process's CPU time (user +
system, children not included) to a role read from its command line: the Python tasks
by job script and step role, the task JVMs (YarnChild), ApplicationMasters, the HDFS
and YARN daemons, nginx, the crawl's driver. A process that lives between two samples
is missed, so the totals are a lower bound; the interval keeps that small for tasks.
Stops after --seconds or when --until-file exists.
"""
import argparse
import json
import os
import re
import time

TICK = os.sysconf('SC_CLK_TCK')

DAEMONS = (('NameNode', 'namenode'), ('DataNode', 'datanode'),
           ('ResourceManager', 'resourcemanager'), ('NodeManager', 'nodemanager'),
           ('JobHistoryServer', 'jobhistory'), ('MRAppMaster', 'appmaster'),
           ('YarnChild', 'task-jvm'), ('RunJar', 'hadoop-jar-client'),
           ('Crawl', 'nutch'), ('nutch', 'nutch'))


def role(cmd):
    if not cmd:
        return None
    first = os.path.basename(cmd[0])
    text = ' '.join(cmd)
    if first.startswith('java'):
        for name, r in DAEMONS:
            if name in text:
                return r
        return 'java-other'
    if first.startswith('nginx'):
        return 'nginx'
    if first.startswith('python'):
        script = next((os.path.basename(a) for a in cmd[1:] if a.endswith('.py')), None)
        if script:
            m = re.search(r'--(mapper|reducer|combiner)', text)
            step = re.search(r'--step-num=(\d+)', text)
            if m:
                return 'task:%s:%s%s' % (script, m.group(1), step.group(1) if step else '')
            return 'python:' + script
        if '-m' in cmd and 'drivers' in text or 'mrcrawl' in text:
            return 'driver'
        return 'python-other'
    if first in ('sh', 'bash', 'dash'):
        return None
    return 'other:' + first


def sample():
    out = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as f:
                stat = f.read()
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                cmd = [a.decode('utf-8', 'replace') for a in f.read().split(b'\0') if a]
        except OSError:
            continue
        fields = stat[stat.rindex(')') + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        out[(pid, fields[19])] = (cpu, cmd)       # (pid, start time): pid reuse safe
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--seconds', type=float, default=900)
    p.add_argument('--interval', type=float, default=0.25)
    p.add_argument('--until-file')
    p.add_argument('--out')
    a = p.parse_args()
    first = sample()
    seen, roles = {}, {}
    end = time.monotonic() + a.seconds
    t0 = time.monotonic()
    while time.monotonic() < end and not (a.until_file and os.path.exists(a.until_file)):
        time.sleep(a.interval)
        for key, (cpu, cmd) in sample().items():
            base = first.get(key, (0.0, None))[0]
            seen[key] = (cpu - base, cmd)
    for key, (cpu, cmd) in seen.items():
        r = role(cmd)
        if r and cpu > 0:
            roles[r] = roles.get(r, 0.0) + cpu
    total = sum(roles.values())
    result = {'wall_seconds': round(time.monotonic() - t0, 1), 'cpu_seconds': round(total, 1),
              'by_role': {r: round(s, 1) for r, s in sorted(roles.items(), key=lambda x: -x[1])}}
    text = json.dumps(result, indent=1)
    if a.out:
        with open(a.out, 'w') as f:
            f.write(text + '\n')
    print(text)


if __name__ == '__main__':
    main()
