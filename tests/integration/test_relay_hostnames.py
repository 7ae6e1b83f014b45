"""Relay and callback URLs with host names (docs/cluster.md "Host names"): a worker resolves them
asynchronously (libevent's evdns: /etc/hosts, then the nameservers of /etc/resolv.conf), tries
each address in order, and resolves again on every reconnect; an unknown name fails with a clear
error and is retried with back-off, nothing else disturbed.

The daemons that resolve run inside `unshare --mount` with a private /etc/hosts and
/etc/resolv.conf bind-mounted over the machine's, so the names are the test's own (not
`localhost`, which is in every hosts file) and no lookup leaves the machine: the private
resolv.conf names only a DNS server on 127.0.0.1 that this test runs, and the unknown names end
in `.invalid` (RFC 6761), which the resolver fails without asking anyone. Every address is a
loopback one. Skipped, with the reason, where unshare or mount is not permitted (it needs root).

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_relay_hostnames
"""

import http.server
import os
import re
import socket
import struct
import subprocess
import tempfile
import threading
import unittest
import urllib.parse

import rilltest
from rilltest import HOST, Rill, ffmpeg_publish, rill_binary, stop_process, wait_until
from test_worker_link import make_relay_media

_unshare_problem = None


def unshare_problem():
    """None when this machine lets a process mount a private /etc/hosts, else why not."""
    global _unshare_problem
    if _unshare_problem is None:
        _unshare_problem = ''
        if not rilltest.have_tool('unshare'):
            _unshare_problem = 'unshare (util-linux) is not installed'
        else:
            with tempfile.NamedTemporaryFile('w', suffix='.hosts') as f:
                f.write('127.0.0.1 probe.rill.test\n')
                f.flush()
                res = rilltest.run(['unshare', '--mount', 'sh', '-c',
                                    'mount --bind "$1" /etc/hosts && grep -q probe.rill.test /etc/hosts', 'sh', f.name],
                                   timeout=10)
                if res.returncode != 0:
                    _unshare_problem = 'cannot bind-mount a private /etc/hosts (unshare --mount needs root): %s' % (
                        res.stderr.strip() or 'exit %d' % res.returncode)
    return _unshare_problem or None


class DnsServer:
    """A DNS server on 127.0.0.1 (UDP) for the names of one test: A records from `names`
    (changeable while it runs), no AAAA records, NXDOMAIN for anything else; counts the queries
    per name (lower case)."""

    def __init__(self, names):
        self.names = dict(names)
        self.queries = {}
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((HOST, 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def set(self, name, address):
        with self.lock:
            self.names[name] = address

    def count(self, name):
        with self.lock:
            return self.queries.get(name, 0)

    def close(self):
        self.stopped.set()
        self.thread.join(2)
        self.sock.close()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                data, peer = self.sock.recvfrom(512)
            except socket.timeout:
                continue
            except OSError:
                return
            answer = self._answer(data)
            if answer:
                self.sock.sendto(answer, peer)

    def _answer(self, q):
        if len(q) < 17:
            return None
        labels, i = [], 12
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode('ascii', 'replace'))
            i += 1 + q[i]
        end = i + 5  # the zero label, QTYPE, QCLASS
        if end > len(q):
            return None
        qtype = struct.unpack('!H', q[i + 1:i + 3])[0]
        name = '.'.join(labels).lower()  # evdns randomizes the case (the 0x20 hack); answered as asked
        with self.lock:
            self.queries[name] = self.queries.get(name, 0) + 1
            address = self.names.get(name)
        rcode = 0 if address else 3
        answers = b''
        if address and qtype == 1:
            answers = b'\xc0\x0c' + struct.pack('!HHIH', 1, 1, 1, 4) + socket.inet_aton(address)
        flags = 0x8180 | (struct.unpack('!H', q[2:4])[0] & 0x0100) | rcode
        head = q[:2] + struct.pack('!HHHHH', flags, 1, 1 if answers else 0, 0, 0)
        return head + q[12:end] + answers


class NamedRill(Rill):
    """A Rill whose processes see `hosts` as /etc/hosts and `resolv` as /etc/resolv.conf (a
    private mount namespace: the machine's files are untouched)."""

    def __init__(self, config, *, hosts, resolv, **kw):
        self.hosts_file, self.resolv_file = hosts, resolv
        super().__init__(config, **kw)

    def _spawn(self):
        env = dict(os.environ)
        env.pop('NOTIFY_SOCKET', None)
        script = ('mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && '
                  'shift 2 && exec "$@"')
        cmd = ['unshare', '--mount', 'sh', '-c', script, 'sh', self.hosts_file, self.resolv_file,
               rill_binary(), '-c', self.config_path] + [str(a) for a in self.args]
        with open(self.stdout_path, 'ab') as out, open(self.stderr_path, 'ab') as err:
            # unshare and sh exec: the pid is the master's.
            self.proc = rilltest._track(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                                         env=env, cwd=self.tmpdir))
        self.returncode = None
        self._known_workers = {}


class Backend:
    """An HTTP callback backend on 127.0.0.1 that allows everything and records the calls."""

    def __init__(self):
        self.calls = []
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0)).decode()
                form = {k: v[-1] for k, v in urllib.parse.parse_qs(body).items()}
                form['_host'] = self.headers.get('Host')
                backend.calls.append(form)
                self.send_response(200)
                self.send_header('Content-Length', '2')
                self.end_headers()
                self.wfile.write(b'ok')

        self.server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def probe_codecs(url):
    """The codec types ffprobe finds at URL ('' when nothing plays)."""
    res = rilltest.run(['ffprobe', '-v', 'error', '-rw_timeout', '8000000', '-show_entries', 'stream=codec_type',
                        '-of', 'csv=p=0', url], timeout=20)
    return res.stdout


class HostNameTest(unittest.TestCase):
    def setUp(self):
        why = unshare_problem()
        if why:
            self.skipTest(why)
        rilltest.require_tool('ffmpeg')
        rilltest.require_tool('ffprobe')
        self.media = make_relay_media()
        self.dns = DnsServer({})
        self.addCleanup(self.dns.close)
        tmp = tempfile.mkdtemp(prefix='rill-names-')
        self.addCleanup(lambda: [os.unlink(os.path.join(tmp, f)) for f in os.listdir(tmp)] and os.rmdir(tmp))
        # origin and hooks: 127.0.0.2 first, where nothing listens (refused), then 127.0.0.1.
        self.hosts = os.path.join(tmp, 'hosts')
        with open(self.hosts, 'w') as f:
            f.write('127.0.0.1 localhost\n127.0.0.2 origin.rill.test hooks.rill.test\n'
                    '127.0.0.1 origin.rill.test hooks.rill.test target.rill.test\n')
        self.resolv = os.path.join(tmp, 'resolv.conf')
        with open(self.resolv, 'w') as f:
            f.write('nameserver 127.0.0.1:%d\noptions timeout:1 attempts:1\n' % self.dns.port)

    def start(self, config, name):
        r = Rill(config, name=name)
        self.addCleanup(r.close)
        return r

    def start_named(self, config, name):
        r = NamedRill(config, hosts=self.hosts, resolv=self.resolv, name=name)
        self.addCleanup(r.close)
        return r

    def publish(self, url):
        p = ffmpeg_publish(url, media=self.media)
        self.addCleanup(stop_process, p)
        return p

    def test_edge_plays_an_origin_named_in_hosts(self):
        origin = self.start({'log': {'level': 'info'}}, 'named-origin')
        self.publish(origin.rtmp_url('cam'))
        self.assertTrue(origin.wait_for_log(r'publishing live/cam', 15))
        edge = self.start_named({'apps': {'live': {'edge': {
            'origins': ['rtmp://origin.rill.test:%d/live' % origin.rtmp_port], 'connect_timeout': '2s'}}}},
            'named-edge')
        codecs = probe_codecs(edge.http_url('/live/cam.flv'))
        self.assertIn('video', codecs, edge.log_text()[-3000:])
        self.assertIn('audio', codecs)
        # The first address was refused, the second taken: both named in the log.
        self.assertRegex(edge.log_text(), r'origin\.rill\.test:%d.* 127\.0\.0\.1 .*127\.0\.0\.2: Connection refused'
                         % origin.rtmp_port)
        self.assertEqual(self.dns.count('origin.rill.test'), 0, 'a name in /etc/hosts needs no DNS query')

    def test_push_relay_to_a_host_name(self):
        target = self.start({'log': {'level': 'info'}}, 'named-target')
        pusher = self.start_named({'apps': {'live': {'push': [
            {'url': 'rtmp://target.rill.test:%d/live' % target.rtmp_port, 'reconnect': '300ms'}]}}}, 'named-pusher')
        self.publish(pusher.rtmp_url('cam'))
        self.assertTrue(target.wait_for_log(r'publishing live/cam', 15), pusher.log_text()[-3000:])
        self.assertIn('audio', probe_codecs(target.http_url('/live/cam.flv')))

    def test_callback_url_with_a_host_name(self):
        backend = Backend()
        self.addCleanup(backend.close)
        url = 'http://hooks.rill.test:%d/auth' % backend.port
        r = self.start_named({'apps': {'live': {'auth': {'publish': 'callback'},
                                                'callbacks': {'on_publish': url, 'timeout': '2s'}}}}, 'named-callbacks')
        self.publish(r.rtmp_url('cam'))
        self.assertTrue(r.wait_for_log(r'publishing live/cam', 15), r.log_text()[-3000:])
        # Asked once: 127.0.0.2 refused the connection (nothing was sent), 127.0.0.1 answered.
        calls = [c for c in backend.calls if c.get('call') == 'publish']
        self.assertEqual(len(calls), 1, backend.calls)
        self.assertEqual(calls[0]['name'], 'cam')
        self.assertEqual(calls[0]['_host'], 'hooks.rill.test:%d' % backend.port)

    def test_static_pull_resolves_again_on_every_reconnect(self):
        origin = self.start({'log': {'level': 'info'}}, 'moving-origin')
        self.publish(origin.rtmp_url('cam'))
        self.assertTrue(origin.wait_for_log(r'publishing live/cam', 15))
        # The DNS server first answers an address where nothing listens; the pull fails and
        # retries; the next answer is the origin's, and only a new lookup can learn it.
        self.dns.set('moving.rill.test', '127.0.0.2')
        r = self.start_named({'apps': {'live': {'pull': [
            {'url': 'rtmp://moving.rill.test:%d/live/cam' % origin.rtmp_port}]}}}, 'moving-puller')
        self.assertTrue(r.wait_for_log(r'pull live/cam: every source failed', 10), r.log_text()[-3000:])
        self.assertGreaterEqual(self.dns.count('moving.rill.test'), 1)
        self.assertRegex(r.log_text(), r'moving\.rill\.test:%d.*127\.0\.0\.2: Connection refused' % origin.rtmp_port)
        self.dns.set('moving.rill.test', '127.0.0.1')
        self.assertTrue(r.wait_for_log(r'pull live/cam up', 15), r.log_text()[-3000:])
        self.assertGreaterEqual(self.dns.count('moving.rill.test'), 2)
        self.assertIn('video', probe_codecs(r.http_url('/live/cam.flv')))

    def test_unknown_name_fails_clearly_and_retries(self):
        r = self.start_named({'apps': {'live': {'pull': [{'url': 'rtmp://nowhere.invalid:1935/live/far'}]}}},
                             'unknown-name')
        self.publish(r.rtmp_url('cam'))
        rounds = wait_until(lambda: len(re.findall(r'pull live/far: every source failed, next round in (\d+) ms',
                                                   r.log_text())) >= 3 and r.log_text(), 10)
        self.assertTrue(rounds, r.log_text()[-3000:])
        delays = [int(d) for d in re.findall(r'pull live/far: every source failed, next round in (\d+) ms', rounds)]
        self.assertEqual(delays[:3], [500, 1000, 2000], 'back-off')
        self.assertRegex(rounds, r'rtmp://nowhere\.invalid:1935/live/far failed .*nowhere\.invalid.*(unknown|no such)')
        self.assertEqual(self.dns.count('nowhere.invalid'), 0, 'an .invalid name is never asked for (RFC 6761)')
        # Nothing else disturbed: the local stream plays meanwhile.
        self.assertIn('video', probe_codecs(r.http_url('/live/cam.flv')))


class ConfigCheckTest(unittest.TestCase):
    def test_rill_t_takes_host_names_without_resolving_them(self):
        # .invalid names never resolve: `rill -t` passes only because it does not try.
        with tempfile.TemporaryDirectory(prefix='rill-names-t-') as tmp:
            path = os.path.join(tmp, 'rill.yaml')
            with open(path, 'w') as f:
                f.write(rilltest.to_yaml({'apps': {
                    'edge': {'edge': {'origins': ['rtmp://origin.invalid:1935/live', 'rtmp://[::1]/live']}},
                    'live': {'push': [{'url': 'rtmp://backup.invalid/live'}],
                             'pull': [{'url': 'rtmp://camera.invalid/live/cam1'}],
                             'callbacks': {'on_publish': 'http://hooks.invalid:8080/auth'}}}}))
            res = rilltest.rill_cli('-t', '-c', path)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)


if __name__ == '__main__':
    unittest.main()
