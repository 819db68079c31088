"""Which Hadoop a ``-r hadoop`` run uses: the one the user's environment names.

In this order (the first that gives an answer wins):

hadoop command
    ``MRCRAWL_HADOOP_BIN``; else ``bin/hadoop`` under ``HADOOP_PREFIX``, ``HADOOP_HOME``
    or ``HADOOP_INSTALL`` (mrjob's order, mrjob/fs/hadoop.py); else ``hadoop`` on PATH.
Hadoop's home
    ``HADOOP_PREFIX``, ``HADOOP_HOME``, ``HADOOP_INSTALL``; else the folder above the
    ``bin/`` the command's symlinks lead to (never ``/``, ``/usr``, ``/usr/local``:
    mrjob's rule); else ``/usr/lib/hadoop`` (Bigtop, EMR, Dataproc), ``/opt/hadoop``.
configuration folder
    ``HADOOP_CONF_DIR``; else ``<home>/etc/hadoop`` (the Apache tarball); else
    ``/etc/hadoop/conf`` (Bigtop, EMR, Dataproc). Set in the environment for the hadoop
    command when it was not, so that the command reads the folder named here.
streaming jar
    ``MRCRAWL_STREAMING_JAR``; else the first folder of :func:`streaming_jar_dirs` that
    holds one (mrjob's file name pattern and preference: shallower, shorter name).
WebHDFS address
    ``MRCRAWL_WEBHDFS_URL``; else the configuration folder's ``dfs.namenode.http-address``
    (hdfs-site.xml; a wildcard host is replaced by fs.defaultFS's; with HA, the first
    NameNode's of fs.defaultFS's nameservice); else ``http://<fs.defaultFS host>:9870``;
    else ``http://127.0.0.1:9870``.

Paths a distribution installs to (``/usr/lib/...``, ``/etc/hadoop/conf``, ``/opt``) are
taken under *root* (``/``), so that a test can lay them out in a temporary folder.
The project's test cluster is none of these unless ``hadoop/env.sh`` was sourced (``make
... CLUSTER=test``, ``make test``): it sets MRCRAWL_HADOOP_BIN and the rest.
"""
import functools
import os
import re
import shutil
import stat
import xml.etree.ElementTree as ET
from collections import namedtuple
from urllib.parse import urlparse

from mrjob.hadoop import _BAD_HADOOP_HOMES, _EMR_HADOOP_STREAMING_JAR_DIRS, _HADOOP_STREAMING_JAR_RE

DEFAULT_WEBHDFS_URL = 'http://127.0.0.1:9870'
#: Where Bigtop's packages (and so EMR's and Dataproc's images) and hand installs put
#: Hadoop, tried after the environment names none (relative to the root).
SYSTEM_HOMES = ('usr/lib/hadoop', 'opt/hadoop')
SYSTEM_CONF_DIR = 'etc/hadoop/conf'
#: Folders of a Hadoop home that hold the streaming jar: the Apache tarball's, Bigtop's
#: and Hadoop 1's (contrib/streaming).
HOME_JAR_DIRS = ('share/hadoop/tools/lib', '', 'share/hadoop/mapreduce', 'lib',
                 'contrib/streaming')
#: Bigtop, EMR (4.x and later; mrjob's list has the older AMIs' too), Dataproc.
SYSTEM_JAR_DIRS = ('usr/lib/hadoop-mapreduce', 'usr/lib/hadoop/tools/lib',
                   'usr/lib/hadoop')

Hadoop = namedtuple('Hadoop', 'bin home conf_dir streaming_jar webhdfs_url')


class NoHadoop(Exception):
    """No usable Hadoop: the message says what was looked for, in one line."""


def _executable(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode) and os.access(path, os.X_OK)
    except OSError:
        return False


def _under(root, rel):
    return os.path.join(root, rel)


def _env_homes(env):
    return [env[name] for name in ('HADOOP_PREFIX', 'HADOOP_HOME', 'HADOOP_INSTALL')
            if env.get(name)]


def find_bin(env):
    if env.get('MRCRAWL_HADOOP_BIN'):
        path = env['MRCRAWL_HADOOP_BIN']
        if not _executable(path):
            raise NoHadoop('MRCRAWL_HADOOP_BIN=%s is not an executable file' % path)
        return path
    for home in _env_homes(env):
        path = os.path.join(home, 'bin', 'hadoop')
        if _executable(path):
            return path
    found = shutil.which('hadoop', path=env.get('PATH', ''))
    if found:
        return os.path.abspath(found)
    named = ', '.join('%s=%s' % (n, env[n]) for n in ('HADOOP_PREFIX', 'HADOOP_HOME',
                                                       'HADOOP_INSTALL') if env.get(n))
    raise NoHadoop('no hadoop command: none in %s nor on PATH (set HADOOP_HOME or '
                   'MRCRAWL_HADOOP_BIN; CLUSTER=test for the test cluster)' % (
                       '%s/bin' % named if named else 'HADOOP_HOME/bin'))


def find_home(env, hadoop_bin, root='/'):
    homes = _env_homes(env)
    if homes:
        return homes[0]
    home = os.path.dirname(os.path.dirname(os.path.realpath(hadoop_bin)))
    bad = {os.path.normpath(_under(os.path.realpath(root), b.lstrip('/')))
           for b in _BAD_HADOOP_HOMES}
    if home not in bad and os.path.isdir(home):
        return home
    for rel in SYSTEM_HOMES:
        if os.path.isdir(_under(root, rel)):
            return _under(root, rel)
    return None


def find_conf_dir(env, home, root='/'):
    if env.get('HADOOP_CONF_DIR'):
        return env['HADOOP_CONF_DIR']
    for path in ([os.path.join(home, 'etc', 'hadoop')] if home else []) + \
            [_under(root, SYSTEM_CONF_DIR)]:
        if os.path.isdir(path):
            return path
    return None


def streaming_jar_dirs(env, home, root='/'):
    """Where the streaming jar is looked for, in order."""
    homes = _env_homes(env) + ([home] if home else [])
    if env.get('HADOOP_MAPRED_HOME'):
        homes.append(env['HADOOP_MAPRED_HOME'])
    for h in dict.fromkeys(homes):
        for rel in HOME_JAR_DIRS:
            yield os.path.join(h, rel) if rel else h
    for rel in SYSTEM_JAR_DIRS:
        yield _under(root, rel)
    for path in _EMR_HADOOP_STREAMING_JAR_DIRS:       # mrjob's (EMR's older AMIs too)
        yield _under(root, path.lstrip('/'))


def find_streaming_jar(env, home, root='/'):
    if env.get('MRCRAWL_STREAMING_JAR'):
        path = env['MRCRAWL_STREAMING_JAR']
        if '://' not in path and not os.path.isfile(path):
            raise NoHadoop('MRCRAWL_STREAMING_JAR=%s is not a file' % path)
        return path
    looked = []
    for folder in dict.fromkeys(streaming_jar_dirs(env, home, root)):
        looked.append(folder)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        jars = [os.path.join(folder, n) for n in names if _HADOOP_STREAMING_JAR_RE.match(n)
                and os.path.isfile(os.path.join(folder, n))]
        if jars:
            # mrjob's preference: shallower paths, then shorter names
            return min(jars, key=lambda p: (len(p.split('/')), len(os.path.basename(p)), p))
    raise NoHadoop('no hadoop-streaming jar in %s (set MRCRAWL_STREAMING_JAR)' % (
        ' '.join(f for f in looked if os.path.isdir(f)) or 'HADOOP_HOME'))


# -- the NameNode's HTTP address from the configuration folder -------------------------

_VAR = re.compile(r'\$\{([^}]+)\}')


def read_site(path):
    """{name: value} of a Hadoop ``*-site.xml``; {} if it is missing or unreadable.
    A file with a DOCTYPE is refused (no entity of it is ever expanded)."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError:
        return {}
    if b'<!DOCTYPE' in data or b'<!ENTITY' in data:
        return {}
    try:
        tree = ET.fromstring(data)
    except ET.ParseError:
        return {}
    props = {}
    for prop in tree.iter('property'):
        name, value = prop.findtext('name'), prop.findtext('value')
        if name:
            props[name.strip()] = (value or '').strip()
    return props


def _expand(value, props, env):
    """Hadoop's ${name} in a value: another property, else an environment variable."""
    for _ in range(10):
        new = _VAR.sub(lambda m: props.get(m.group(1), env.get(m.group(1).replace(
            'env.', '', 1), m.group(0))), value)
        if new == value:
            break
        value = new
    return value


@functools.lru_cache(maxsize=16)
def _webhdfs_from_conf(conf_dir, stamp, env_items):
    env = dict(env_items)
    props = read_site(os.path.join(conf_dir, 'core-site.xml'))
    props.update(read_site(os.path.join(conf_dir, 'hdfs-site.xml')))
    default_fs = urlparse(_expand(props.get('fs.defaultFS') or
                                  props.get('fs.default.name') or '', props, env))
    fs_host = default_fs.hostname if default_fs.scheme == 'hdfs' else None
    keys = ['dfs.namenode.http-address']
    nameservices = [n.strip() for n in props.get('dfs.nameservices', '').split(',')]
    if fs_host and default_fs.netloc in nameservices:
        # HA (or federation): fs.defaultFS names a nameservice, not a host. Its first
        # NameNode's address: MRCRAWL_WEBHDFS_URL must name the active one if it is not.
        ns = default_fs.netloc
        keys = ['dfs.namenode.http-address.%s.%s' % (ns, nn.strip()) for nn in
                props.get('dfs.ha.namenodes.%s' % ns, '').split(',') if nn.strip()] + \
            ['dfs.namenode.http-address.%s' % ns]
        fs_host = None
    for key in keys:
        http = _expand(props.get(key, ''), props, env)
        host, _, port = http.rpartition(':')
        if host in ('', '0.0.0.0', '[::]', '::') and fs_host:
            host = fs_host
        if host and host not in ('0.0.0.0', '[::]', '::') and port.isdigit():
            return 'http://%s:%s' % (host, port)
    if fs_host:
        return 'http://%s:9870' % fs_host
    return None


def webhdfs_url(env, conf_dir):
    """The NameNode's HTTP URL (see the module's docstring)."""
    if env.get('MRCRAWL_WEBHDFS_URL'):
        return env['MRCRAWL_WEBHDFS_URL']
    if conf_dir:
        stamp = tuple(_mtime(os.path.join(conf_dir, n)) for n in ('core-site.xml',
                                                                    'hdfs-site.xml'))
        url = _webhdfs_from_conf(conf_dir, stamp, tuple(sorted(env.items())))
        if url:
            return url
    return DEFAULT_WEBHDFS_URL


def rm_webapp_url(conf_dir, env=None):
    """The ResourceManager's web address (yarn.resourcemanager.webapp.address, else its
    hostname and port 8088) from *conf_dir*'s yarn-site.xml, or None."""
    env = os.environ if env is None else env
    props = read_site(os.path.join(conf_dir, 'yarn-site.xml')) if conf_dir else {}
    addr = _expand(props.get('yarn.resourcemanager.webapp.address', ''), props, env)
    host, _, port = addr.rpartition(':')
    rm_host = _expand(props.get('yarn.resourcemanager.hostname', ''), props, env)
    if host in ('', '0.0.0.0') and rm_host:
        host = rm_host
    if host and port.isdigit():
        return 'http://%s:%s' % (host, port)
    return 'http://%s:8088' % rm_host if rm_host else None


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def conf_dir_of(env=None, root='/'):
    """The configuration folder without needing the hadoop command (HADOOP_CONF_DIR,
    else the home's etc/hadoop, else /etc/hadoop/conf): for the WebHDFS address of a
    run that starts no Hadoop job (an hdfs:// folder read by the local runner)."""
    env = os.environ if env is None else env
    home = next(iter(_env_homes(env)), None)
    if home is None:
        try:
            home = find_home(env, find_bin(env), root)
        except NoHadoop:
            home = None
    return find_conf_dir(env, home, root)


def locate(env=None, root='/'):
    """The Hadoop a ``-r hadoop`` run uses, or :class:`NoHadoop`."""
    env = os.environ if env is None else env
    hadoop_bin = find_bin(env)
    home = find_home(env, hadoop_bin, root)
    conf_dir = find_conf_dir(env, home, root)
    jar = find_streaming_jar(env, home, root)
    return Hadoop(hadoop_bin, home, conf_dir, jar, webhdfs_url(env, conf_dir))


def describe(h):
    """The one line a hadoop run prints."""
    return 'hadoop: %s (conf %s), streaming jar %s, webhdfs %s' % (
        h.bin, h.conf_dir or "Hadoop's default", h.streaming_jar, h.webhdfs_url)
