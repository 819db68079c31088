"""How a request goes out: which proxy it goes through (fetch.proxy, the hosts of
fetch.proxy_bypass, and a site's own ``proxy``, which wins for its pages), and what a
site's ``[request]`` table adds to it (credentials, headers, cookies: :meth:`extras`).

A proxy is an HTTP (or HTTPS) proxy, which is asked for http URLs by absolute URI and
for https ones through a CONNECT tunnel, or a SOCKS5 one (jobs.lib.netpolicy); either
way TLS and its verification stay end to end. Its password is a reference (``http://crawler:${PROXY_PASSWORD}@proxy:3128``:
jobs.lib.secretref), read when the first request goes out. The address policy
(jobs.lib.netpolicy) still applies to the page's host, resolved here before each
request; the proxy's own address is the operator's choice and is not checked.

A site's credentials, headers and cookies go only to URLs of that site (each redirect
hop is matched again), over https, or over http where the site says ``over_http``;
:class:`jobs.lib.httpio.KeySession` withholds them from an origin whose certificate
failed. Their secrets are references too, read once per task.
"""
import collections
import ipaddress
import urllib.parse

import requests.auth

from jobs.lib import secretref, urls
from jobs.lib.sites import SiteIndex


def secret_settings(conf):
    """(setting, value) of every setting that may hold secret references: what the
    driver checks it can read before a crawl starts (jobs.lib.secretref.check)."""
    found = [('fetch.proxy', conf['fetch']['proxy'])]
    for site in conf.get('sites') or ():
        if site.get('proxy'):
            found.append(('%s: site.proxy' % site['file'], site['proxy']))
        req = site.get('request') or {}
        found += [('%s: request.%s' % (site['file'], key), value) for key, value in
                  [('password', req.get('password') or '')]
                  + [('headers.' + k, v) for k, v in (req.get('headers') or {}).items()]
                  + [('cookies.' + k, v) for k, v in (req.get('cookies') or {}).items()]]
    return [(where, text) for where, text in found if secretref.references(text)]


def bypassed(host, patterns):
    """Does *host* match one of *patterns*: a host name, ``.example.com`` (that domain
    and its subdomains), an IP address or an IP network (``10.0.0.0/8``)?"""
    host = host.lower().strip('[]')
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    for p in patterns:
        p = p.lower()
        if '/' in p and ip is not None:
            if ip in ipaddress.ip_network(p, strict=False):
                return True
        elif p.startswith('.'):
            if host == p[1:] or host.endswith(p):
                return True
        elif host == p.strip('[]'):
            return True
    return False


#: What a site adds to a request: headers (dict, a Cookie header for its cookies), auth
#: ((user, password) for HTTP basic, requests' HTTPDigestAuth for digest, or None),
#: over_http (bool: also over plain http).
Extras = collections.namedtuple('Extras', 'headers auth over_http')


class Routes:
    """The proxies and site extras of a crawl's resolved settings: :meth:`proxy` and
    :meth:`extras` of a URL. ``secret_headers``: lower-case names of the request headers
    that carry a secret, left out of what is kept for the WARC."""

    def __init__(self, conf):
        self.default = conf['fetch']['proxy']
        self.bypass = conf['fetch']['proxy_bypass']
        sites = conf.get('sites') or ()
        # Every site when one sets either: a page belongs to the first that matches it.
        self.sites = SiteIndex(sites if any(s.get('proxy') is not None or s.get('request')
                                            for s in sites) else ())
        self.secret_headers = frozenset(
            ['authorization', 'proxy-authorization', 'cookie'] +
            [k.lower() for s in sites for k, v in
             ((s.get('request') or {}).get('headers') or {}).items()
             if secretref.references(v)])
        self._expanded, self._extras = {}, {}

    def __bool__(self):
        return bool(self.default or self.sites.sites)

    def extras(self, url):
        """The Extras of *url*'s site (references read), or None when it adds nothing."""
        site = self.sites.match(url) if self.sites.sites else None
        req = site.spec.get('request') if site is not None else None
        if not req:
            return None
        if site.name not in self._extras:
            headers = {k: secretref.expand(v) for k, v in req['headers'].items()}
            if req['cookies']:
                headers['Cookie'] = '; '.join('%s=%s' % (k, secretref.expand(v))
                                              for k, v in req['cookies'].items())
            auth = None if req['user'] is None else (req['user'],
                                                     secretref.expand(req['password']))
            if auth and req.get('auth') == 'digest':    # the 401's challenge answered
                auth = requests.auth.HTTPDigestAuth(*auth)
            self._extras[site.name] = Extras(headers, auth, req['over_http'])
        return self._extras[site.name]

    def proxy(self, url):
        """The proxy URL (references expanded) a request for *url* goes through, or None
        to go direct."""
        site = self.sites.match(url) if self.sites.sites else None
        chosen = site.spec['proxy'] if site is not None and site.spec.get('proxy') \
            is not None else self.default
        if not chosen or bypassed(urls.hostname(url) or '', self.bypass):
            return None
        if chosen not in self._expanded:
            self._expanded[chosen] = _with_password(chosen)
        return self._expanded[chosen]


def _with_password(proxy):
    """*proxy* with its password's references read and percent-encoded (a password may
    hold ``@`` or ``:``)."""
    plain, unmask = secretref.masked(proxy)
    parts = urllib.parse.urlsplit(plain)
    if parts.password is None:
        return proxy
    password = urllib.parse.quote(secretref.expand(unmask(parts.password)), safe='')
    netloc = '%s:%s@%s' % (parts.username, password, parts.netloc.rpartition('@')[2])
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
