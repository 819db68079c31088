"""HTTPS servers on loopback with the certificates a crawler meets: made by the openssl
command (Debian's) into a folder, each served by its own nginx (tests/nginx.py).

    certs = make_certs(folder)          # {name: (cert, key)} and certs['ca']
    with TLSSite(*certs['good']) as s:  # nginx: https://127.0.0.1:PORT/ answers 200
        s.url('/')

The certificates: ``good`` (127.0.0.1 and localhost, signed by the test CA),
``expired`` (the same, valid for January 2020 only), ``other_host`` (for
other.example only), ``self_signed`` (127.0.0.1, its own issuer) and the CA's own
(``ca``: the PEM a crawl trusts with fetch.ca_bundle).
"""
import os
import subprocess

from tests.nginx import Nginx

CA_CONF = """[ca]
default_ca = test_ca
[test_ca]
database = {dir}/index.txt
new_certs_dir = {dir}
serial = {dir}/serial
default_md = sha256
policy = anything
copy_extensions = copy
unique_subject = no
[anything]
commonName = supplied
"""


def _openssl(*args, cwd):
    subprocess.run(('openssl',) + args, cwd=cwd, check=True, capture_output=True)


def _request(cwd, name, cn, san):
    _openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', name + '.key',
             '-out', name + '.csr', '-subj', '/CN=' + cn, '-addext',
             'subjectAltName=' + san, cwd=cwd)


def make_certs(folder):
    """The certificates above, made in *folder*: {name: (cert path, key path)}."""
    folder = str(folder)
    paths = lambda name: (os.path.join(folder, name + '.pem'),     # noqa: E731
                          os.path.join(folder, name + '.key'))
    _openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-keyout',
             'ca.key', '-out', 'ca.pem', '-subj', '/CN=mrcrawl test CA', cwd=folder)
    with open(os.path.join(folder, 'ca.cnf'), 'w') as f:
        f.write(CA_CONF.format(dir=folder))
    open(os.path.join(folder, 'index.txt'), 'w').close()
    with open(os.path.join(folder, 'serial'), 'w') as f:
        f.write('1000\n')
    signed = {'good': ('127.0.0.1', 'IP:127.0.0.1,DNS:localhost', ()),
              'expired': ('127.0.0.1', 'IP:127.0.0.1,DNS:localhost',
                          ('-startdate', '20200101000000Z', '-enddate', '20200201000000Z')),
              'other_host': ('other.example', 'DNS:other.example', ())}
    for name, (cn, san, dates) in signed.items():
        _request(folder, name, cn, san)
        _openssl('ca', '-config', 'ca.cnf', '-batch', '-notext', '-cert', 'ca.pem',
                 '-keyfile', 'ca.key', '-in', name + '.csr', '-out', name + '.pem',
                 *(dates or ('-days', '30')), cwd=folder)
    _openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-keyout',
             'self_signed.key', '-out', 'self_signed.pem', '-subj', '/CN=127.0.0.1',
             '-addext', 'subjectAltName=IP:127.0.0.1', cwd=folder)
    certs = {name: paths(name) for name in list(signed) + ['self_signed']}
    certs['ca'] = paths('ca')
    return certs


PAGE = b'<html><head><title>Over TLS</title></head><body><p>secret handshake</p>' \
       b'</body></html>'

SERVER = """
server {
    listen 127.0.0.1:PORT ssl%(default)s;
    server_name %(name)s;
    ssl_certificate %(cert)s;
    ssl_certificate_key %(key)s;
    root DIR/www;
}
"""


class TLSSite(Nginx):
    """nginx serving https://127.0.0.1:PORT/ (an index page) with the certificate *cert*
    and its key *key*; *by_name*: {server name: (cert, key)} chosen instead by the name a
    client sends (SNI). ``paths``: the requests that got through the handshake."""

    def __init__(self, cert, key, by_name=None):
        servers = SERVER % {'default': ' default_server', 'name': '_', 'cert': cert,
                            'key': key}
        for name, (c, k) in (by_name or {}).items():
            servers += SERVER % {'default': '', 'name': name, 'cert': c, 'key': k}
        super().__init__(servers, {'www/index.html': PAGE})

    @property
    def paths(self):
        return self.uris()
