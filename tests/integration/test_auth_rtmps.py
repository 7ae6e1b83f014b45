"""RTMPS on rtmp.tls_listen and HTTPS on http.tls_listen (docs/security.md), with a throwaway CA
made by openssl in the test: ffmpeg publishes to rtmps://, ffprobe plays from it, curl --cacert
fetches the .flv and the .m3u8 over HTTPS (ALPN http/1.1); the chain verifies against the CA with TLS
1.2 or later (older versions refused); plain RTMP or a stalled handshake on the TLS port is closed
without harming the publisher; `rill -t` names a mismatched key; after a reload with a new
certificate new connections get it.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_auth_rtmps
"""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

import rilltest
from hlsutil import make_gop1_media, request
from rilltest import Rill, wait_until


def openssl(*args, cwd):
    rilltest.run(['openssl'] + list(args), cwd=cwd, check=True)


def make_pki(d):
    """ca.pem, and two leaf certificates for 127.0.0.1 signed by it (chain1.pem/key1.pem,
    chain2.pem/key2.pem: leaf + CA, the chain as OBS wants it)."""
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
    openssl('req', '-x509', *ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=rill test CA',
            cwd=d)
    with open(os.path.join(d, 'san.cnf'), 'w') as f:
        f.write('subjectAltName=IP:127.0.0.1\n')
    for i in (1, 2):
        openssl('req', *ec, '-keyout', 'key%d.pem' % i, '-out', 'leaf%d.csr' % i, '-subj', '/CN=127.0.0.1', cwd=d)
        openssl('x509', '-req', '-in', 'leaf%d.csr' % i, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', str(1000 + i),
                '-days', '2', '-extfile', 'san.cnf', '-out', 'leaf%d.pem' % i, cwd=d)
        with open(os.path.join(d, 'chain%d.pem' % i), 'w') as out:
            for part in ('leaf%d.pem' % i, 'ca.pem'):
                with open(os.path.join(d, part)) as f:
                    out.write(f.read())


def tls_serial(port, cafile, **ctx_opts):
    """Handshakes with 127.0.0.1:port verifying against `cafile`: (TLS version, leaf serial)."""
    ctx = ssl.create_default_context(cafile=cafile)
    for k, v in ctx_opts.items():
        setattr(ctx, k, v)
    with socket.create_connection((rilltest.HOST, port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname='127.0.0.1') as s:
            return s.version(), s.getpeercert()['serialNumber']


@unittest.skipIf(not all(shutil.which(t) for t in ('ffmpeg', 'ffprobe', 'openssl', 'curl')),
                 'needs ffmpeg, ffprobe, openssl, curl')
class RtmpsTest(unittest.TestCase):
    def setUp(self):
        self.pki = tempfile.mkdtemp(prefix='rill-pki-')
        self.addCleanup(shutil.rmtree, self.pki, True)
        make_pki(self.pki)
        self.tls_port = rilltest.free_port()
        self.https_port = rilltest.free_port()
        self.cert = os.path.join(self.pki, 'chain.pem')
        self.key = os.path.join(self.pki, 'key.pem')
        shutil.copy(os.path.join(self.pki, 'chain1.pem'), self.cert)
        shutil.copy(os.path.join(self.pki, 'key1.pem'), self.key)
        self.ca = os.path.join(self.pki, 'ca.pem')

    def config(self):
        return {'rtmp': {'tls_listen': ['127.0.0.1:%d' % self.tls_port], 'tls_cert': self.cert, 'tls_key': self.key,
                         'handshake_timeout': '2s'},
                'http': {'tls_listen': ['127.0.0.1:%d' % self.https_port], 'tls_cert': self.cert, 'tls_key': self.key},
                'apps': {'live': {'hls': {'enabled': True, 'fragment': '1s'}}}}

    def curl(self, path, max_bytes):
        """curl --cacert over HTTPS: (exit code, HTTP status, first bytes of the body, negotiated ALPN seen)."""
        out = os.path.join(self.pki, 'body')
        r = rilltest.run(['curl', '-sS', '-v', '--http1.1', '--cacert', self.ca, '--max-time', '5', '-o', out,
                          '-w', '%{http_code}', 'https://127.0.0.1:%d%s' % (self.https_port, path)], timeout=30)
        with open(out, 'rb') as f:
            body = f.read(max_bytes)
        return r.returncode, r.stdout.strip(), body, 'ALPN: server accepted http/1.1' in r.stderr

    def test_rtmps_publish_play_bad_clients_and_reload(self):
        with Rill(self.config()) as rill:
            rilltest.wait_port(self.tls_port)
            url = 'rtmps://127.0.0.1:%d/live/x' % self.tls_port
            offset = rill.log_offset()
            pub = rilltest.ffmpeg_publish(url, make_gop1_media())
            self.addCleanup(rilltest.stop_process, pub)
            self.assertTrue(rill.wait_for_log(r'publish start: live/x', 15, since=offset),
                            rilltest.process_log(pub) + rill.log_tail())
            probe = rilltest.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name', '-of', 'csv=p=0',
                                  url], timeout=30)
            self.assertIn('h264', probe.stdout, probe.stderr)

            # HTTPS: HTTP-FLV (cut by --max-time: exit 28 with the stream's first bytes) and HLS.
            code, status, body, alpn = self.curl('/live/x.flv', 16)
            self.assertEqual((status, body[:3]), ('200', b'FLV'), code)
            self.assertTrue(alpn, 'no ALPN http/1.1')
            pl = wait_until(lambda: (lambda r: r if r[1] == '200' else None)(self.curl('/live/x.m3u8', 4096)), 15)
            self.assertTrue(pl, self.curl('/live/x.m3u8', 4096))
            self.assertEqual(pl[0], 0)
            self.assertTrue(pl[2].startswith(b'#EXTM3U'), pl[2])
            # A segment over HTTPS: the bytes plain HTTP gives (a large body goes by sendfile only
            # on plain connections: TLS encrypts what it reads from memory, http_file_bodies.h).
            seg = [line for line in pl[2].decode().splitlines() if line and not line.startswith('#')][-1]
            code, status, tls_body, _ = self.curl('/live/' + seg, 1 << 24)
            plain = request(rill.http_port, 'GET', '/live/' + seg)
            self.assertEqual((code, status, plain[0]), (0, '200', 200))
            self.assertGreater(len(tls_body), 16 * 1024)
            self.assertEqual(tls_body, plain[2])
            self.assertEqual(tls_serial(self.https_port, self.ca)[0][:5], 'TLSv1')

            version, serial = tls_serial(self.tls_port, self.ca)  # the whole chain verifies
            self.assertIn(version, ('TLSv1.2', 'TLSv1.3'))
            self.assertEqual(int(serial, 16), 1001)
            with self.assertRaises((ssl.SSLError, ConnectionError)):
                tls_serial(self.tls_port, self.ca, minimum_version=ssl.TLSVersion.TLSv1,
                           maximum_version=ssl.TLSVersion.TLSv1_1)

            # Plain RTMP to the TLS port: closed at once.
            with socket.create_connection((rilltest.HOST, self.tls_port), timeout=10) as s:
                s.sendall(b'\x03' + bytes(1536))
                try:
                    self.assertNotEqual(s.recv(1)[:1], b'\x03')
                except ConnectionResetError:
                    pass
            # A client that stalls in the handshake: closed by handshake_timeout.
            stalled = socket.create_connection((rilltest.HOST, self.tls_port), timeout=15)
            self.addCleanup(stalled.close)
            stalled.sendall(b'\x16\x03\x01\x00')  # the start of a ClientHello, then nothing
            start = time.monotonic()
            try:
                self.assertEqual(stalled.recv(1), b'')
            except ConnectionResetError:
                pass
            self.assertLess(time.monotonic() - start, 10)

            self.assertIsNone(pub.poll(), 'the publisher was harmed by the bad clients')
            # A new certificate on reload: new connections get it and RTMPS publishing works on
            # (open sessions across a reload: test_tls_reload).
            rilltest.stop_process(pub)
            shutil.copy(os.path.join(self.pki, 'chain2.pem'), self.cert)
            shutil.copy(os.path.join(self.pki, 'key2.pem'), self.key)
            self.assertTrue(rill.reload(self.config()))
            self.assertTrue(wait_until(lambda: int(tls_serial(self.tls_port, self.ca)[1], 16) == 1002, 15))
            offset = rill.log_offset()
            again = rilltest.ffmpeg_publish(url, make_gop1_media())
            self.addCleanup(rilltest.stop_process, again)
            self.assertTrue(rill.wait_for_log(r'publish start: live/x', 15, since=offset), rill.log_tail())

    def test_check_names_a_mismatched_key(self):
        rill = Rill(self.config(), start=False)
        self.addCleanup(rill.close)
        rill.write_config(self.config())
        ok = rill.cli('-t', '-c', rill.config_path)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        shutil.copy(os.path.join(self.pki, 'key2.pem'), self.key)  # key of the other certificate
        res = rill.cli('-t', '-c', rill.config_path)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(self.key, res.stderr)
        self.assertIn('does not match', res.stderr)
        os.remove(self.cert)
        res = rill.cli('-t', '-c', rill.config_path)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(self.cert, res.stderr)


if __name__ == '__main__':
    unittest.main()
