"""HLS over persistent connections: several requests on one TCP connection (HTTP/1.1 by
default, HTTP/1.0 with "Connection: keep-alive"), each body byte-exact with what a fresh
connection gets; pipelined requests answered in order (RFC 9112 §9.3.2); a request body (plain or
chunked, after "Expect: 100-continue") read before the next request on the same connection. All of
it twice: with http.sendfile on (a segment leaves by sendfile from a memory file written once,
src/http/http_file_bodies.cpp) and off (from the segment's shared buffer, head and body in one
send).

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_hls_keepalive
"""

import socket
import sys
import time
import unittest

import rilltest
from hlsutil import get_playlist, hls_config, make_gop1_media, request
from rilltest import Rill, wait_until

HOST = rilltest.HOST
MIN_SEGMENT_BYTES = 16 * 1024  # several TCP segments: a body that is not written in one piece


def read_response(sock, head_only=False, timeout=10):
    """One response from `sock`: (status, headers dict with lower-case names, body). The body is
    Content-Length bytes (none for HEAD)."""
    sock.settimeout(timeout)
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError('connection closed before a response head (%r)' % data[:200])
        data += chunk
        if len(data) > 65536:
            raise AssertionError('response head over 64 KiB')
    head, rest = data.split(b'\r\n\r\n', 1)
    lines = head.decode('latin-1').split('\r\n')
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(':')
        headers[name.strip().lower()] = value.strip()
    length = 0 if head_only else int(headers.get('content-length', '0'))
    deadline = time.monotonic() + timeout
    while len(rest) < length and time.monotonic() < deadline:
        chunk = sock.recv(min(1 << 20, length - len(rest)))
        if not chunk:
            break
        rest += chunk
    if len(rest) != length:
        raise AssertionError('body: %d of %d bytes, then more or a close' % (len(rest), length))
    return status, headers, rest


def send_request(sock, method, path, version='HTTP/1.1', extra=''):
    sock.sendall(('%s %s %s\r\nHost: %s\r\nUser-Agent: keepalive-test\r\n%s\r\n'
                  % (method, path, version, HOST, extra)).encode())


def closed_by_peer(sock, timeout=10):
    """True when the server closes the connection within `timeout` (it sends nothing more)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b''
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


class HlsKeepAliveTest(unittest.TestCase):
    SENDFILE = True  # http.sendfile: segments leave by sendfile from a memory file

    @classmethod
    def setUpClass(cls):
        config = hls_config()
        config['http'] = {'sendfile': cls.SENDFILE}
        cls.rill = Rill(config)
        cls.pub = None
        try:
            offset = cls.rill.log_offset()
            cls.pub = rilltest.ffmpeg_publish(cls.rill.rtmp_url('test'), make_gop1_media())
            if not cls.rill.wait_for_log(r'publish start: live/test', 15, since=offset):
                raise AssertionError('publisher did not start\n%s' % rilltest.process_log(cls.pub))
            cls.playlist = wait_until(lambda: (lambda p: p if p and len(p.segments) >= 2 else None)(
                get_playlist(cls.rill.http_port)), 20, 0.05)
            if not cls.playlist:
                raise AssertionError('no playlist with 2 segments\n%s' % cls.rill.log_tail())
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        rilltest.stop_process(cls.pub)
        try:
            cls.rill.running() and cls.rill.stop()
        finally:
            cls.rill.close(failed=sys.exc_info()[0] is not None)  # keeps the logs of a failed stop

    def connect(self):
        sock = socket.create_connection((HOST, self.rill.http_port), timeout=10)
        self.addCleanup(sock.close)
        return sock

    def fresh(self, path):
        status, headers, body = request(self.rill.http_port, 'GET', path)
        self.assertEqual(status, 200, path)
        return body, headers

    def segment_paths(self):
        return ['/live/' + s['uri'] for s in self.playlist.segments[-2:]]

    def test_http11_many_requests_on_one_connection(self):
        sock = self.connect()
        for path in self.segment_paths() * 2:
            send_request(sock, 'GET', path)
            status, headers, body = read_response(sock)
            self.assertEqual(status, 200, path)
            self.assertNotEqual(headers.get('connection', '').lower(), 'close')
            self.assertGreater(len(body), MIN_SEGMENT_BYTES, 'segment too small to test a large body')
            fresh_body, _ = self.fresh(path)
            self.assertEqual(body, fresh_body, '%s differs between keep-alive and a fresh connection' % path)
            self.assertEqual(body[0], 0x47, 'a TS segment starts with a sync byte')
        # A HEAD on the same connection: the length, no body; the next GET still parses.
        path = self.segment_paths()[0]
        send_request(sock, 'HEAD', path)
        status, headers, _ = read_response(sock, head_only=True)
        self.assertEqual(status, 200)
        self.assertEqual(int(headers['content-length']), len(self.fresh(path)[0]))
        # The playlist, twice: live, so it may change between fetches; each keep-alive answer
        # equals a fresh fetch taken just before or just after it.
        for _ in range(2):
            before, _ = self.fresh('/live/test.m3u8')
            send_request(sock, 'GET', '/live/test.m3u8')
            status, headers, body = read_response(sock)
            after, _ = self.fresh('/live/test.m3u8')
            self.assertEqual(status, 200)
            self.assertIn(body, (before, after))
            self.assertTrue(body.startswith(b'#EXTM3U'))

    def memory_files(self):
        """The workers' descriptors of HLS bodies kept as memory files: {(pid, fd)}."""
        return {(pid, fd) for pid in self.rill.worker_pids()
                for fd, target in rilltest.fd_targets(pid).items() if 'memfd:rill-body' in target}

    def test_a_segment_is_sent_from_one_memory_file(self):
        """http.sendfile on: the first response of a segment writes it into a memory file (seen in
        /proc as memfd:rill-body), later responses send that file again, byte-exact; off: none."""
        path = self.segment_paths()[-1]
        first, headers = self.fresh(path)
        self.assertEqual(len(first), int(headers['content-length']))
        files = self.memory_files()
        if not self.SENDFILE:
            self.assertEqual(files, set(), 'http.sendfile is off, yet the worker made memory files')
            return
        self.assertTrue(files, 'no memfd:rill-body descriptor in the worker after a segment')
        for _ in range(3):
            self.assertEqual(self.fresh(path)[0], first)
        self.assertEqual(self.memory_files(), files, 'the same segment was written into another memory file')

    def test_http10_keep_alive_when_asked(self):
        sock = self.connect()
        for path in self.segment_paths() + ['/live/test.m3u8']:
            send_request(sock, 'GET', path, 'HTTP/1.0', 'Connection: keep-alive\r\n')
            status, headers, body = read_response(sock)
            self.assertEqual(status, 200, path)
            self.assertEqual(headers.get('connection', '').lower(), 'keep-alive', path)
            if path.endswith('.ts'):
                self.assertEqual(body, self.fresh(path)[0], path)

    def test_http10_without_keep_alive_closes(self):
        sock = self.connect()
        path = self.segment_paths()[0]
        send_request(sock, 'GET', path, 'HTTP/1.0')
        status, _, body = read_response(sock)
        self.assertEqual(status, 200)
        self.assertEqual(body, self.fresh(path)[0])
        self.assertTrue(closed_by_peer(sock), 'an HTTP/1.0 connection without keep-alive is closed')

    def test_pipelined_requests_are_answered_in_order(self):
        sock = self.connect()
        seg = self.segment_paths()[0]
        reqs = [('GET', seg), ('GET', '/live/test.m3u8'), ('GET', '/live/nothing/1.ts'), ('HEAD', seg), ('GET', seg)]
        sock.sendall(b''.join(('%s %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (m, p, HOST)).encode() for m, p in reqs))
        want_seg = self.fresh(seg)[0]
        # The answers arrive back to back: split them by their Content-Length.
        sock.settimeout(10)
        data = b''
        got = []
        for m, _ in reqs:
            while b'\r\n\r\n' not in data:
                chunk = sock.recv(1 << 20)
                self.assertTrue(chunk, 'closed after %d answers' % len(got))
                data += chunk
            head, data = data.split(b'\r\n\r\n', 1)
            lines = head.decode('latin-1').split('\r\n')
            headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(':') for x in lines[1:])}
            length = 0 if m == 'HEAD' else int(headers['content-length'])
            while len(data) < length:
                chunk = sock.recv(1 << 20)
                self.assertTrue(chunk, 'closed in answer %d' % (len(got) + 1))
                data += chunk
            got.append((int(lines[0].split()[1]), headers, data[:length]))
            data = data[length:]
        self.assertEqual([g[0] for g in got], [200, 200, 404, 200, 200])
        self.assertEqual(got[0][2], want_seg)
        self.assertTrue(got[1][2].startswith(b'#EXTM3U'))
        self.assertEqual(int(got[3][1]['content-length']), len(want_seg))
        self.assertEqual(got[4][2], want_seg)

    def test_request_bodies_are_read_before_the_next_request(self):
        sock = self.connect()
        # A body on a stream path: 405 once it is read; the connection goes on.
        sock.sendall(('POST /live/test.m3u8 HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello' % HOST).encode())
        status, headers, _ = read_response(sock)
        self.assertEqual(status, 405)
        self.assertIn('GET', headers.get('allow', ''))
        # Chunked, announced with Expect: 100-continue: the interim answer, then the final one.
        sock.sendall(('POST /live/test.m3u8 HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n'
                      'Expect: 100-continue\r\n\r\n' % HOST).encode())
        sock.settimeout(10)
        interim = b''
        while b'\r\n\r\n' not in interim:
            interim += sock.recv(1)
        self.assertTrue(interim.startswith(b'HTTP/1.1 100 '), interim)
        sock.sendall(b'5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n')
        status, _, _ = read_response(sock)
        self.assertEqual(status, 405)
        send_request(sock, 'GET', '/live/test.m3u8')
        status, _, body = read_response(sock)
        self.assertEqual(status, 200)
        self.assertTrue(body.startswith(b'#EXTM3U'))

    def test_a_body_over_the_limit_is_refused_and_closed(self):
        sock = self.connect()
        sock.sendall(('POST /live/test.m3u8 HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000000\r\n\r\n' % HOST).encode())
        status, headers, body = read_response(sock)
        self.assertEqual(status, 413)
        self.assertIn(b'http.max_body_size', body)
        self.assertEqual(headers.get('connection', '').lower(), 'close')
        self.assertTrue(closed_by_peer(sock))

    def test_connection_close_is_honoured(self):
        sock = self.connect()
        send_request(sock, 'GET', '/live/test.m3u8', extra='Connection: close\r\n')
        status, _, _ = read_response(sock)
        self.assertEqual(status, 200)
        self.assertTrue(closed_by_peer(sock), 'Connection: close ends the connection after the response')


class HlsKeepAliveFromMemoryTest(HlsKeepAliveTest):
    """The same exchanges with http.sendfile off: bodies leave from the segment's buffer."""
    SENDFILE = False


if __name__ == '__main__':
    unittest.main()
