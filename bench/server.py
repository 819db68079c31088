"""Run nginx (Debian's nginx-light) over a generated web on loopback addresses.

    with Nginx(web_dir, work_dir, port, access_log) as server: ...

One master process with its own prefix, config, pid file and temp folders under
``work_dir``; one ``listen 127.0.X.Y:port`` per host (loopback only, never 0.0.0.0), the
document root chosen by ``$server_addr``. One worker process: static files from the page
cache cost it microseconds, and the second core stays for the crawlers (its CPU is
measured and reported). The access log is the ground truth of the benchmark:

    $msec $server_addr $host "$request_uri" $status $body_bytes_sent $request_time "$http_user_agent"

Leaving the ``with`` block stops nginx (SIGQUIT, graceful: the log is flushed).
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import time
import urllib.request

NGINX = shutil.which('nginx') or '/usr/sbin/nginx'

CONF = """\
worker_processes 1;
worker_rlimit_nofile {nofile};
daemon off;
master_process on;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
{user}
events {{ worker_connections 4096; }}
http {{
    access_log off;
    log_format bench '$msec $server_addr $host "$request_uri" $status $body_bytes_sent $request_time "$http_user_agent"';
    client_body_temp_path {work}/tmp/body;
    proxy_temp_path {work}/tmp/proxy;
    fastcgi_temp_path {work}/tmp/fastcgi;
    uwsgi_temp_path {work}/tmp/uwsgi;
    scgi_temp_path {work}/tmp/scgi;
    types {{ text/html html; text/plain txt; application/xml xml; image/jpeg jpg; application/javascript js; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 100000;
    open_file_cache max={file_cache} inactive=60s;
    server {{
{listens}
        root {web}/$server_addr;
        index index.html;
        access_log {log} bench buffer=256k flush=1s;
        location / {{ try_files $uri $uri/ =404; }}
{locations}
    }}
}}
"""


class Nginx:
    def __init__(self, web_dir, work_dir, port, access_log, locations=''):
        self.locations = locations     # more of the server block's config
        self.web = os.path.abspath(web_dir)
        self.work = os.path.abspath(work_dir)
        self.port = port
        self.log = os.path.abspath(access_log)
        with open(os.path.join(self.web, 'manifest.json')) as f:
            self.hosts = json.load(f)['hosts']
        self.proc = None

    def __enter__(self):
        os.makedirs(os.path.join(self.work, 'tmp'), exist_ok=True)
        for old in (self.log, os.path.join(self.work, 'error.log')):
            if os.path.exists(old):
                os.remove(old)
        listens = '\n'.join('        listen %s:%d;' % (ip, self.port) for ip in self.hosts)
        # As root, nginx's workers drop to nobody; the generated files are world-readable.
        user = 'user nobody nogroup;' if os.geteuid() == 0 else ''
        conf = os.path.join(self.work, 'nginx.conf')
        # Descriptors: one per listening address, per connection and per file in
        # open_file_cache. At 20,000 (this machine's limit) with a cache of 20,000 the
        # worker ran out mid-crawl: accept() stopped for 0.5 s at a time and open()
        # failures became 404s for pages that exist (error.log: "Too many open files").
        # The worker raises its own limit to the hard one (it cannot go past it once it
        # runs as nobody); the cache stays at a quarter of it.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        nofile = min(65536, hard if hard != resource.RLIM_INFINITY else 65536)
        with open(conf, 'w') as f:
            f.write(CONF.format(work=self.work, web=self.web, log=self.log,
                                listens=listens, user=user, nofile=nofile,
                                locations=self.locations,
                                file_cache=max(256, min(20000, nofile // 4))))
        if os.geteuid() == 0:
            os.chmod(os.path.dirname(self.log), 0o777)   # workers (nobody) write the log
        self.proc = subprocess.Popen([NGINX, '-p', self.work, '-c', conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = 'http://%s:%d/robots.txt' % (self.hosts[0], self.port)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError('nginx exited: %s' % self.proc.stderr.read().decode())
            try:
                urllib.request.urlopen(url, timeout=1).read()
                break
            except urllib.error.HTTPError:
                break   # a 404 is an answer too
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError('nginx did not answer on %s' % url)
                time.sleep(0.05)
        # The probe above is in the log; the analyzer drops it by its user agent.
        return self

    def errors(self):
        """Lines of error.log at level crit or worse (e.g. "Too many open files"): a
        run with any is a broken measurement, reported as such by run.py."""
        try:
            with open(os.path.join(self.work, 'error.log'), errors='replace') as f:
                return sum(1 for line in f if any(
                    lvl in line for lvl in ('[crit]', '[alert]', '[emerg]')))
        except OSError:
            return 0

    def pids(self):
        import psutil
        p = psutil.Process(self.proc.pid)
        return [p.pid] + [c.pid for c in p.children(recursive=True)]

    def cpu_seconds(self):
        import psutil
        total = 0.0
        for pid in self.pids():
            try:
                t = psutil.Process(pid).cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __exit__(self, *exc):
        self.stop()
