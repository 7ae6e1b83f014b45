"""Relays and callbacks outward over TLS (docs/cluster.md "RTMPS relays", docs/security.md
"HTTPS callbacks"), with a throwaway CA made here by openssl.

- RtmpsRelayTest: an origin Rill with RTMPS (certificate for localhost / 127.0.0.1 signed by the
  test CA) and an edge Rill whose origin is rtmps://localhost:PORT/live with the CA file: ffprobe
  plays from the edge; a publish at the edge is pushed over rtmps to the origin. An origin with a
  certificate for another host (a TLS server of this test) is refused: the edge logs the relay URL
  and "certificate verify failed (hostname mismatch)", and nothing plays.
- HttpsCallbackTest: on_publish to an HTTPS backend (Python http.server in ssl) with the CA: the
  callback decides (200 admits, 403 refuses); a backend whose certificate names another host fails
  the callback ("tls: certificate verify failed: hostname mismatch"), and the publish is refused
  (callbacks fail closed).

Loopback only. Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_relays_tls
"""

import http.server
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import unittest

import rilltest
from rilltest import HOST, Rill, ffmpeg_publish, stop_process
from test_auth_rtmps import openssl
from test_worker_link import make_relay_media

TOOLS = ('ffmpeg', 'ffprobe', 'openssl')


def make_pki(d):
    """ca.pem; good.pem/good.key for localhost and 127.0.0.1; wrong.pem/wrong.key for
    wrong.rill.test only, signed by the same CA (so only the host name fails)."""
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
    openssl('req', '-x509', *ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=rill relay CA',
            cwd=d)
    for name, san in (('good', 'DNS:localhost,IP:127.0.0.1'), ('wrong', 'DNS:wrong.rill.test')):
        with open(os.path.join(d, name + '.cnf'), 'w') as f:
            f.write('subjectAltName=%s\n' % san)
        openssl('req', *ec, '-keyout', name + '.key', '-out', name + '.csr', '-subj', '/CN=' + name, cwd=d)
        openssl('x509', '-req', '-in', name + '.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', '7',
                '-days', '2', '-extfile', name + '.cnf', '-out', name + '.pem', cwd=d)


def probe_codecs(url):
    """The codec types ffprobe finds at URL ('' when nothing plays)."""
    res = rilltest.run(['ffprobe', '-v', 'error', '-rw_timeout', '5000000', '-show_entries', 'stream=codec_type',
                        '-of', 'csv=p=0', url], timeout=15)
    return res.stdout


class WrongHostTlsServer:
    """A TLS server on 127.0.0.1 with the wrong host's certificate: it handshakes (the client
    refuses) and closes."""

    def __init__(self, pki):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(pki, 'wrong.pem'), os.path.join(pki, 'wrong.key'))
        self.sock = socket.create_server((HOST, 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.handshakes = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.handshakes += 1
            conn.settimeout(2)
            try:
                with self.ctx.wrap_socket(conn, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self):
        self.stopped.set()
        self.thread.join(2)
        self.sock.close()


class PkiCase(unittest.TestCase):
    def setUp(self):
        for tool in TOOLS:
            rilltest.require_tool(tool)
        self.pki = tempfile.mkdtemp(prefix='rill-relay-pki-')
        self.addCleanup(shutil.rmtree, self.pki, True)
        make_pki(self.pki)
        self.ca = os.path.join(self.pki, 'ca.pem')
        self.media = make_relay_media()

    def start(self, config, name):
        r = Rill(config, name=name)
        self.addCleanup(r.close)
        return r

    def publish(self, url):
        p = ffmpeg_publish(url, media=self.media)
        self.addCleanup(stop_process, p)
        return p


class RtmpsRelayTest(PkiCase):
    def test_edge_pull_push_and_wrong_host(self):
        tls_port = rilltest.free_port()
        origin = self.start({'rtmp': {'tls_listen': ['127.0.0.1:%d' % tls_port],
                                      'tls_cert': os.path.join(self.pki, 'good.pem'),
                                      'tls_key': os.path.join(self.pki, 'good.key')}}, 'tls-origin')
        rilltest.wait_port(tls_port)
        wrong = WrongHostTlsServer(self.pki)
        self.addCleanup(wrong.close)
        edge = self.start({'apps': {
            'live': {'edge': {'origins': ['rtmps://localhost:%d/live' % tls_port], 'tls_ca_file': self.ca,
                              'connect_timeout': '2s', 'publish': 'local'}},
            'out': {'push': [{'url': 'rtmps://localhost:%d/live' % tls_port, 'tls_ca_file': self.ca,
                              'reconnect': '500ms'}]},
            'bad': {'edge': {'origins': ['rtmps://localhost:%d/live' % wrong.port], 'tls_ca_file': self.ca,
                             'connect_timeout': '2s'}}}}, 'tls-edge')

        # Pull: the origin's stream plays from the edge, fetched over RTMPS.
        self.publish(origin.rtmp_url('cam'))
        self.assertTrue(origin.wait_for_log(r'publish start: live/cam', 15), origin.log_tail())
        codecs = probe_codecs(edge.rtmp_url('cam'))
        self.assertIn('video', codecs, edge.log_tail())
        self.assertIn('audio', codecs)

        # Push: a publish at the edge's `out` app reaches the origin over RTMPS.
        offset = origin.log_offset()
        self.publish(edge.rtmp_url('pushed', app='out'))
        self.assertTrue(origin.wait_for_log(r'publish start: live/pushed', 15, since=offset),
                        edge.log_tail() + origin.log_tail())

        # The wrong host's certificate: refused, with the URL and OpenSSL's reason; nothing plays.
        offset = edge.log_offset()
        self.assertEqual(probe_codecs(edge.rtmp_url('cam', app='bad')), '')
        self.assertTrue(edge.wait_for_log(
            r'rtmps://localhost:%d/live/cam failed \(tls handshake: certificate verify failed '
            r'\(hostname mismatch\)\)' % wrong.port, 5, since=offset), edge.log_since(offset))
        self.assertGreater(wrong.handshakes, 0)

    def test_check_accepts_rtmps_and_names_a_missing_ca_file(self):
        rill = Rill(start=False)
        self.addCleanup(rill.close)
        config = {'apps': {'live': {'pull': [{'url': 'rtmps://origin.example.com/live/a', 'tls_ca_file': self.ca}],
                                    'push': [{'url': 'rtmps://backup.example.com:8443/live', 'tls_verify': False}]}}}
        rill.write_config(config)
        ok = rill.cli('-t', '-c', rill.config_path)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        os.remove(self.ca)
        res = rill.cli('-t', '-c', rill.config_path)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn('cannot read tls_ca_file ' + self.ca, res.stderr + res.stdout)


class HttpsBackend:
    """on_publish over HTTPS: 200 for `ok*` names, 403 for the rest; `cert` names the pair."""

    def __init__(self, pki, cert):
        names = []
        self.names = names

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0)).decode()
                name = dict(kv.split('=', 1) for kv in body.split('&') if '=' in kv).get('name', '')
                names.append(name)
                self.send_response(200 if name.startswith('ok') else 403)
                self.send_header('Content-Length', '0')
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(pki, cert + '.pem'), os.path.join(pki, cert + '.key'))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = 'https://localhost:%d/auth' % self.port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class HttpsCallbackTest(PkiCase):
    def publish_outcome(self, rill, app, name, pattern):
        offset = rill.log_offset()
        p = ffmpeg_publish(rill.rtmp_url(name, app=app), media=self.media, loop=False)
        self.addCleanup(stop_process, p)
        self.assertTrue(rill.wait_for_log(pattern, 10, since=offset), rill.log_since(offset))
        return p

    def test_https_callback_decides_and_wrong_host_fails(self):
        good = HttpsBackend(self.pki, 'good')
        self.addCleanup(good.close)
        wrong = HttpsBackend(self.pki, 'wrong')
        self.addCleanup(wrong.close)
        rill = self.start({'apps': {
            'live': {'callbacks': {'on_publish': good.url, 'tls_ca_file': self.ca, 'timeout': '2s'}},
            'bad': {'callbacks': {'on_publish': wrong.url, 'tls_ca_file': self.ca, 'timeout': '2s'}}}},
            'tls-callbacks')
        self.publish_outcome(rill, 'live', 'ok1', r'publish start: live/ok1')
        refused = self.publish_outcome(rill, 'live', 'deny', r'live/deny over rtmp refused by callback: '
                                       r'callback answered 403')
        self.assertIn('deny', good.names)
        self.publish_outcome(rill, 'bad', 'ok2', r'bad/ok2 over rtmp refused by callback: callback failed: '
                             r'cannot connect to localhost:%d: .*tls: certificate verify failed: hostname mismatch'
                             % wrong.port)
        self.assertNotIn('ok2', wrong.names)
        try:
            refused.wait(10)
        except subprocess.TimeoutExpired:
            self.fail('the refused publisher was not disconnected')


if __name__ == '__main__':
    unittest.main()
