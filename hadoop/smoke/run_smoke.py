"""Run mr_wc.py on the real single-node Hadoop with mrjob's hadoop runner.

    . hadoop/env.sh && hadoop/up.sh
    .venv/bin/python hadoop/smoke/run_smoke.py [--both-modes] [--no-control] [--keep]

What it checks (exit 1 on any failure):
  * job runs on YARN via hadoop-streaming, input/output on hdfs:///tmp/mrcrawl-smoke/
  * wc_helper (not installed anywhere) reaches the tasks via --py-files (a zip)
  * ada_url + selectolax (not installed for the task python) reach the tasks only via
    --archives deps.tar.gz#deps + --setup 'export PYTHONPATH=$PYTHONPATH:$PWD/deps'
  * tasks run as root with the system python (python_bin), not the submitter's venv
  * counters reach mrjob (runner.counters())
  * control run without the archive: ada_url/selectolax are missing in the tasks
"""
import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
HADOOP_DIR = os.path.dirname(HERE)
BUILD = os.path.join(HADOOP_DIR, ".build", "smoke")
sys.path.insert(0, HERE)

from mr_wc import MRWordCount  # noqa: E402

HDFS_BASE = "hdfs:///tmp/mrcrawl-smoke"
DEPS = ["ada-url", "selectolax"]

INPUT_LINES = [
    '<p>The quick brown fox <a href="https://Example.COM/a?b">jumps</a></p>',
    '<div>over the lazy dog <a href="http://b%C3%BCcher.example/x">the</a></div>',
    "<ul><li>the end</li></ul>",
]
# expected word counts after tag stripping (selectolax) and wc_helper.words()
EXPECTED = {"the": 4, "quick": 1, "fox": 1, "jumps": 1, "dog": 1, "end": 1,
            "host:example.com": 1, "host:xn--bcher-kva.example": 1}


def env(name):
    v = os.environ.get(name)
    if not v:
        sys.exit("run_smoke: $%s not set: source hadoop/env.sh first" % name)
    return v


def sh(*cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def build_deps(task_python):
    """pip install --target deps/, then tar it. Reused if already built."""
    deps_dir = os.path.join(BUILD, "deps")
    tgz = os.path.join(BUILD, "deps.tar.gz")
    pins = ["%s==%s" % (d, metadata.version(d)) for d in DEPS]
    stamp = os.path.join(BUILD, "deps.stamp")
    want = json.dumps(pins)
    if os.path.exists(tgz) and os.path.exists(stamp) and open(stamp).read() == want:
        return tgz
    shutil.rmtree(deps_dir, ignore_errors=True)
    # Use the *task* interpreter's pip so wheels match its ABI (same 3.11 here).
    sh(task_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
       "--no-warn-script-location", "--target", deps_dir, *pins)
    with tarfile.open(tgz, "w:gz") as tf:
        for name in sorted(os.listdir(deps_dir)):
            tf.add(os.path.join(deps_dir, name), arcname=name)
    with open(stamp, "w") as f:
        f.write(want)
    return tgz


def build_helper_zip():
    z = os.path.join(BUILD, "wc_helper.zip")
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(os.path.join(HERE, "wc_helper", "__init__.py"), "wc_helper/__init__.py")
    return z


def write_conf(hadoop_bin, streaming_jar, task_python):
    conf = os.path.join(BUILD, "mrjob.conf")
    with open(conf, "w") as f:
        f.write(
            "runners:\n"
            "  hadoop:\n"
            "    hadoop_bin: %s\n"
            "    hadoop_streaming_jar: %s\n"
            "    python_bin: %s\n"
            "    hadoop_tmp_dir: hdfs:///tmp/mrcrawl-smoke/mrjob-tmp\n"
            % (hadoop_bin, streaming_jar, task_python))
    return conf


def run_job(conf, extra, output, label):
    args = ["-c", conf, "-r", "hadoop", "--output-dir", output] + extra + [
        HDFS_BASE + "/input/"]
    print("\n=== %s: mr_wc.py %s" % (label, " ".join(args)), flush=True)
    job = MRWordCount(args=args)
    t0 = time.time()
    with job.make_runner() as runner:
        runner.run()
        t_job = time.time() - t0
        out = dict(job.parse_output(runner.cat_output()))
        counters = runner.counters()
    t_all = time.time() - t0
    print("=== %s: run() %.1fs, incl. output+cleanup %.1fs" % (label, t_job, t_all))
    return out, counters, t_job


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--both-modes", action="store_true",
                    help="run the shipped job twice: uber mode on and off (the cluster"
                         " default from up.sh is on)")
    ap.add_argument("--no-control", action="store_true",
                    help="skip the control run without the deps archive")
    args = ap.parse_args()
    # show mrjob's progress/diagnostics (job id, map %, counters, probable cause)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    logging.getLogger("mrjob").setLevel(logging.INFO)

    hadoop_bin = env("MRCRAWL_HADOOP_BIN")
    streaming_jar = env("MRCRAWL_STREAMING_JAR")
    task_python = env("MRCRAWL_TASK_PYTHON")
    os.makedirs(BUILD, exist_ok=True)

    # the task python must NOT have the deps (else the proof proves nothing)
    r = subprocess.run([task_python, "-c", "import ada_url"], capture_output=True)
    assert r.returncode != 0, "%s can import ada_url by itself" % task_python
    r = subprocess.run([task_python, "-c", "import selectolax"], capture_output=True)
    assert r.returncode != 0, "%s can import selectolax by itself" % task_python

    t0 = time.time()
    tgz = build_deps(task_python)
    helper = build_helper_zip()
    conf = write_conf(hadoop_bin, streaming_jar, task_python)
    print("deps archive %s (%.1f MB), built/reused in %.1fs" % (
        tgz, os.path.getsize(tgz) / 1e6, time.time() - t0))

    local_in = os.path.join(BUILD, "input.html")
    with open(local_in, "w") as f:
        f.write("\n".join(INPUT_LINES) + "\n")
    sh(hadoop_bin, "fs", "-rm", "-r", "-f", "-skipTrash", HDFS_BASE + "/out-*")
    sh(hadoop_bin, "fs", "-mkdir", "-p", HDFS_BASE + "/input")
    sh(hadoop_bin, "fs", "-put", "-f", local_in, HDFS_BASE + "/input/part-0.html")

    ship = ["--py-files", helper,
            "--archives", tgz + "#deps",
            "--setup", "export PYTHONPATH=$PYTHONPATH:$PWD/deps"]
    failures = []
    timings = {}

    def check(cond, msg):
        print(("  ok   " if cond else "  FAIL ") + msg)
        if not cond:
            failures.append(msg)

    if args.both_modes:
        runs = [("shipped-uber", ship, ["--jobconf", "mapreduce.job.ubertask.enable=true"]),
                ("shipped-no-uber", ship,
                 ["--jobconf", "mapreduce.job.ubertask.enable=false"])]
    else:
        runs = [("shipped", ship, [])]
    if not args.no_control:
        runs.append(("control-no-archive", ["--py-files", helper], []))

    for i, (label, ship_opts, jobconf) in enumerate(runs):
        out, counters, t = run_job(conf, ship_opts + jobconf,
                                   "%s/out-%d" % (HDFS_BASE, i), label)
        timings[label] = t
        smoke = {}
        for step in counters:
            smoke.update(step.get("smoke", {}))
        print("  counters (smoke group):", json.dumps(smoke, sort_keys=True))
        print("  all counter groups:", sorted(g for step in counters for g in step))
        origins = [json.loads(o) for o in out.pop("__origin__", [])]
        for o in origins:
            print("  task origin:", json.dumps(o, sort_keys=True))
        check(len(origins) >= 1, "%s: tasks reported their module origins" % label)
        check(all(o["python"] == task_python for o in origins),
              "%s: tasks ran %s" % (label, task_python))
        check(all(o["uid"] == 0 for o in origins), "%s: tasks ran as root" % label)
        check(all(o["wc_helper"] and "/deps/" not in o["wc_helper"] for o in origins),
              "%s: wc_helper imported from the py_files zip" % label)
        check(all(o["mrjob"] and "/.venv/" not in o["mrjob"] for o in origins),
              "%s: mrjob imported from the bootstrapped mrjob.zip, not the venv" % label)
        check(smoke.get("lines") == len(INPUT_LINES),
              "%s: counter smoke.lines == %d (got %s)" % (label, len(INPUT_LINES),
                                                           smoke.get("lines")))
        if label.startswith("shipped"):
            check(all(o["ada_url"] and "/deps/ada_url/" in o["ada_url"] for o in origins),
                  "%s: ada_url imported from the shipped archive" % label)
            check(all(o["selectolax"] and "/deps/selectolax/" in o["selectolax"]
                      for o in origins),
                  "%s: selectolax imported from the shipped archive" % label)
            check(smoke.get("ada_url_from_archive", 0) >= 1
                  and not smoke.get("ada_url_missing"),
                  "%s: counter ada_url_from_archive" % label)
            got = {k: out.get(k) for k in EXPECTED}
            check(got == EXPECTED, "%s: word counts %s" % (label, got))
        else:
            check(all(o["ada_url"] is None and o["selectolax"] is None for o in origins),
                  "%s: without the archive, ada_url/selectolax are NOT importable" % label)
            check(smoke.get("ada_url_missing", 0) >= 1,
                  "%s: counter ada_url_missing" % label)

    print("\ntimings (runner.run(), s):", json.dumps(
        {k: round(v, 1) for k, v in timings.items()}))
    if failures:
        print("SMOKE FAILED: %d check(s)" % len(failures))
        return 1
    print("SMOKE OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
