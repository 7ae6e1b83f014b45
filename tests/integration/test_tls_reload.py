"""HTTPS for the API on api.tls_listen, and new certificates on reload without dropping TLS
sessions (docs/security.md), with the throwaway CA of test_auth_rtmps.

- ApiHttpsTest: `curl --cacert CA https://…/api/v1/server` answers JSON (ALPN http/1.1), and
  /metrics too; plain HTTP sent to that port fails and harms neither the plain API nor HTTPS;
  `rill -t` names a missing certificate when only api.tls_listen uses it.
- TlsReloadTest: an RTMPS publisher and an HTTPS .flv player stay connected across SIGHUP with new
  certificate files swapped in: the player keeps receiving the publisher's data after the reload,
  and a new connection to each TLS port (RTMPS, HTTPS, API) gets the new certificate, as
  `openssl s_client` shows.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_tls_reload
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import rilltest
from hlsutil import make_gop1_media
from rilltest import Rill, wait_until
from test_auth_rtmps import make_pki

TOOLS = ('ffmpeg', 'openssl', 'curl')


def served_serial(port, cafile):
    """The serial (int) of the leaf certificate `openssl s_client` gets from 127.0.0.1:port, the
    chain verified against `cafile`; None when the handshake or the verification fails."""
    hello = rilltest.run(['openssl', 's_client', '-connect', '127.0.0.1:%d' % port, '-CAfile', cafile,
                          '-verify_return_error', '-servername', '127.0.0.1'], input='', timeout=20)
    if hello.returncode != 0:
        return None
    cert = rilltest.run(['openssl', 'x509', '-noout', '-serial'], input=hello.stdout, timeout=10)
    if cert.returncode != 0 or not cert.stdout.startswith('serial='):
        return None
    return int(cert.stdout.strip().split('=', 1)[1], 16)


class PkiCase(unittest.TestCase):
    def setUp(self):
        self.pki = tempfile.mkdtemp(prefix='rill-pki-')
        self.addCleanup(shutil.rmtree, self.pki, True)
        make_pki(self.pki)
        self.ca = os.path.join(self.pki, 'ca.pem')
        self.cert = os.path.join(self.pki, 'chain.pem')
        self.key = os.path.join(self.pki, 'key.pem')
        self.use_pair(1)
        self.api_tls_port = rilltest.free_port()

    def use_pair(self, i):
        """Installs certificate i (serial 1000 + i) under the configured file names."""
        shutil.copy(os.path.join(self.pki, 'chain%d.pem' % i), self.cert)
        shutil.copy(os.path.join(self.pki, 'key%d.pem' % i), self.key)

    def curl(self, url, *extra, max_time=5):
        """(exit code, HTTP status, stderr) of curl --cacert CA URL; the body goes to self.body."""
        self.body = os.path.join(self.pki, 'body')
        r = rilltest.run(['curl', '-sS', '-v', '--http1.1', '--cacert', self.ca, '--max-time', str(max_time),
                          '-o', self.body, '-w', '%{http_code}', *extra, url], timeout=30)
        return r.returncode, r.stdout.strip(), r.stderr

    def api_https(self, path):
        return 'https://127.0.0.1:%d%s' % (self.api_tls_port, path)


@unittest.skipIf(not all(shutil.which(t) for t in TOOLS), 'needs ' + ', '.join(TOOLS))
class ApiHttpsTest(PkiCase):
    def config(self):
        # No http.tls_listen: the API's HTTPS alone uses http.tls_cert / tls_key.
        return {'http': {'tls_cert': self.cert, 'tls_key': self.key},
                'api': {'tls_listen': ['127.0.0.1:%d' % self.api_tls_port]}}

    def test_api_over_https_and_plain_http_to_it(self):
        with Rill(self.config()) as rill:
            rilltest.wait_port(self.api_tls_port)
            code, status, err = self.curl(self.api_https('/api/v1/server'))
            self.assertEqual((code, status), (0, '200'), err)
            self.assertIn('ALPN: server accepted http/1.1', err)
            with open(self.body) as f:
                self.assertIn('totals', json.load(f))
            code, status, err = self.curl(self.api_https('/metrics'))
            self.assertEqual((code, status), (0, '200'), err)
            with open(self.body) as f:
                self.assertIn('rill_', f.read())

            # Plain HTTP to the TLS port: no answer, and nothing else harmed.
            code, status, err = self.curl('http://127.0.0.1:%d/api/v1/server' % self.api_tls_port)
            self.assertNotEqual(code, 0, 'plain HTTP was answered on the TLS port')
            self.assertNotEqual(status, '200')
            self.assertIn('totals', rilltest.http_get(rill.api_url('/api/v1/server'))[2].decode())
            self.assertEqual(self.curl(self.api_https('/api/v1/server'))[:2], (0, '200'))
            self.assertEqual(served_serial(self.api_tls_port, self.ca), 1001)

    def test_check_names_a_missing_certificate(self):
        rill = Rill(self.config(), start=False)
        self.addCleanup(rill.close)
        rill.write_config(self.config())
        ok = rill.cli('-t', '-c', rill.config_path)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        os.remove(self.cert)
        res = rill.cli('-t', '-c', rill.config_path)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(self.cert, res.stderr)


@unittest.skipIf(not all(shutil.which(t) for t in TOOLS), 'needs ' + ', '.join(TOOLS))
class TlsReloadTest(PkiCase):
    def setUp(self):
        super().setUp()
        self.rtmps_port = rilltest.free_port()
        self.https_port = rilltest.free_port()

    def config(self):
        # Two workers, as in test_reload: new-generation players reach the old generation's
        # stream through the worker link, which is off with one worker (StreamLocator::relaying).
        return {'workers': 2,
                'rtmp': {'tls_listen': ['127.0.0.1:%d' % self.rtmps_port], 'tls_cert': self.cert,
                         'tls_key': self.key},
                'http': {'tls_listen': ['127.0.0.1:%d' % self.https_port], 'tls_cert': self.cert,
                         'tls_key': self.key},
                'api': {'tls_listen': ['127.0.0.1:%d' % self.api_tls_port]}}

    def flv_size(self):
        try:
            return os.path.getsize(self.flv)
        except OSError:
            return 0

    def test_reload_swaps_certificates_and_keeps_tls_sessions(self):
        with Rill(self.config()) as rill:
            rilltest.wait_port(self.rtmps_port)
            offset = rill.log_offset()
            pub = rilltest.ffmpeg_publish('rtmps://127.0.0.1:%d/live/x' % self.rtmps_port, make_gop1_media())
            self.addCleanup(rilltest.stop_process, pub)
            self.assertTrue(rill.wait_for_log(r'publish start: live/x', 15, since=offset),
                            rilltest.process_log(pub) + rill.log_tail())
            # The HTTPS player: curl streaming the .flv to a file until it is stopped.
            self.flv = os.path.join(self.pki, 'x.flv')
            player = subprocess.Popen(['curl', '-sS', '--http1.1', '--cacert', self.ca, '-o', self.flv,
                                       'https://127.0.0.1:%d/live/x.flv' % self.https_port],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.addCleanup(player.stderr.close)
            self.addCleanup(rilltest.stop_process, player)
            self.assertTrue(wait_until(lambda: self.flv_size() > 0, 15), 'the HTTPS player got nothing')
            for port in (self.rtmps_port, self.https_port, self.api_tls_port):
                self.assertEqual(served_serial(port, self.ca), 1001, port)

            self.use_pair(2)
            reload_offset = rill.log_offset()
            self.assertTrue(rill.reload(self.config()), rill.log_tail())
            for port in (self.rtmps_port, self.https_port, self.api_tls_port):
                self.assertTrue(wait_until(lambda: served_serial(port, self.ca) == 1002, 15),
                                'port %d still serves the old certificate' % port)
                # Then every new connection does: the retired workers accept none any more.
                self.assertEqual([served_serial(port, self.ca) for _ in range(4)], [1002] * 4, port)
            # The sessions opened before the reload: the player keeps receiving what the
            # publisher sends, in two windows after the new certificate is served.
            for window in (1, 2):
                before = self.flv_size()
                self.assertTrue(wait_until(lambda: self.flv_size() > before + 4096, 10),
                                'window %d: the HTTPS player stopped receiving after the reload' % window)
            self.assertIsNone(pub.poll(), 'the RTMPS publisher was dropped: ' + rilltest.process_log(pub))
            if player.poll() is not None:
                self.fail('the HTTPS player was dropped: %r' % player.stderr.read())
            self.assertIsNone(rill.wait_for_log(r'publish start: live/x', 0.1, since=reload_offset),
                              'the publisher had to reconnect')
            # A new HTTPS player after the reload plays the same stream, with the new certificate.
            code, status, err = self.curl('https://127.0.0.1:%d/live/x.flv' % self.https_port, max_time=3)
            self.assertEqual(status, '200', err)
            with open(self.body, 'rb') as f:
                self.assertEqual(f.read(3), b'FLV')


if __name__ == '__main__':
    unittest.main()
