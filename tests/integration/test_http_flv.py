"""HTTP server and HTTP-FLV playback, against the real daemon with real clients.

One daemon serves the whole file (apps: ``live`` with the defaults, ``idle`` with a 2 s
publisher_idle_timeout, ``tight`` with small output-queue bounds, an access log in a temp dir);
every test publishes its own stream with ffmpeg, so that no test depends on another's timing.

Clients are ffprobe/ffmpeg and raw sockets (a small incremental HTTP + chunked + FLV parser
below), so that every byte of the framing is checked.
"""

import json
import os
import re
import select
import selectors
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

from rilltest import (HOST, Rill, ffmpeg_publish, make_test_media, process_log, require_tool, run,
                      stop_process, wait_until)

HTTP_TIMEOUT_S = 5  # http.timeout of the daemon under test: bounds every "hang"
IDLE_TIMEOUT_S = 2  # apps.idle.publisher_idle_timeout
# A player that stops reading is cut once the server's kernel send buffer (autotuned up to
# net.ipv4.tcp_wmem's maximum, several MB on loopback) and then the queue (3 s) are full: about
# 20 s of a 750 kbps stream here.
SLOW_DEADLINE_S = 40


# -------------------------------------------------------------------------------------------
# An incremental HTTP/1.x response parser that de-chunks the body and parses FLV tags.

class FlvResponse:
    """Feed it the bytes of one HTTP response; it parses the status line and headers, the
    body (chunked or close-delimited) and the FLV stream inside (signature, tags, previous
    tag sizes). `error` is set on the first framing problem."""

    def __init__(self, head_request=False):
        self.head_request = head_request
        self.raw = bytearray()
        self.state = 'headers'       # headers -> body -> done
        self.version = None
        self.status = None
        self.reason = None
        self.headers = {}            # lower-case name -> value (last one wins)
        self.header_list = []
        self.chunked = False
        self.cstate = 'size'         # size | data | crlf | trailer | done
        self.chunk_left = 0
        self.chunks = 0
        self.terminated = False      # the chunked terminator 0\r\n\r\n arrived
        self.after_end = 0           # bytes after the end of the response
        self.body_bytes = 0
        self.flv = bytearray()
        self.fpos = 0
        self.signature_ok = None
        self.flv_flags = None
        self.tags = {8: 0, 9: 0, 18: 0}
        self.other_tags = 0
        self.first_video = None      # first two data bytes of the first video tag
        self.keyframes = 0
        self.error = None

    @property
    def video_tags(self):
        return self.tags[9]

    @property
    def audio_tags(self):
        return self.tags[8]

    def feed(self, data):
        self.raw += data
        if self.state == 'headers':
            end = self.raw.find(b'\r\n\r\n')
            if end < 0:
                if len(self.raw) > 64 * 1024:
                    self._fail('response header block larger than 64 KiB')
                return
            head = bytes(self.raw[:end]).decode('latin-1')
            del self.raw[:end + 4]
            lines = head.split('\r\n')
            m = re.match(r'^HTTP/(\d\.\d) (\d{3})(?: (.*))?$', lines[0])
            if not m:
                self._fail('bad status line %r' % lines[0])
                return
            self.version, self.status, self.reason = m.group(1), int(m.group(2)), m.group(3) or ''
            for line in lines[1:]:
                name, _, value = line.partition(':')
                self.headers[name.strip().lower()] = value.strip()
                self.header_list.append((name.strip(), value.strip()))
            self.chunked = 'chunked' in self.headers.get('transfer-encoding', '').lower()
            no_body = self.head_request or self.status in (204, 304) or 100 <= self.status < 200
            self.state = 'done' if no_body else 'body'
            if not no_body and not self.chunked and 'content-length' in self.headers:
                self.content_left = int(self.headers['content-length'])
                self.state = 'body-length'
                if self.content_left == 0:
                    self.state = 'done'
        if self.state == 'body':
            if self.chunked:
                self._dechunk()
            else:
                self._body(self.raw)
                self.raw.clear()
        elif self.state == 'body-length':
            n = min(self.content_left, len(self.raw))
            self._body(self.raw[:n])
            del self.raw[:n]
            self.content_left -= n
            if self.content_left == 0:
                self.state = 'done'
        if self.state == 'done' and self.raw:
            self.after_end += len(self.raw)
            self.raw.clear()

    @property
    def complete(self):
        """The whole response arrived (for a close-delimited body: never, until EOF)."""
        return self.state == 'done'

    def _fail(self, why):
        if self.error is None:
            self.error = why

    def _dechunk(self):
        raw = self.raw
        while True:
            if self.cstate == 'size':
                i = raw.find(b'\r\n')
                if i < 0:
                    if len(raw) > 1024:
                        self._fail('chunk size line longer than 1 KiB')
                    return
                line = bytes(raw[:i]).split(b';')[0].strip()
                del raw[:i + 2]
                try:
                    size = int(line, 16)
                except ValueError:
                    self._fail('bad chunk size line %r' % line[:40])
                    self.cstate = 'done'
                    return
                if size == 0:
                    self.cstate = 'trailer'
                else:
                    self.chunk_left = size
                    self.chunks += 1
                    self.cstate = 'data'
            elif self.cstate == 'data':
                n = min(self.chunk_left, len(raw))
                if n == 0:
                    return
                self._body(raw[:n])
                del raw[:n]
                self.chunk_left -= n
                if self.chunk_left == 0:
                    self.cstate = 'crlf'
            elif self.cstate == 'crlf':
                if len(raw) < 2:
                    return
                if raw[:2] != b'\r\n':
                    self._fail('chunk data not followed by CRLF')
                del raw[:2]
                self.cstate = 'size'
            elif self.cstate == 'trailer':
                i = raw.find(b'\r\n')
                if i < 0:
                    return
                del raw[:i + 2]
                if i == 0:
                    self.terminated = True
                    self.cstate = 'done'
                    self.state = 'done'
            else:
                return

    def _body(self, data):
        self.body_bytes += len(data)
        if self.signature_ok is False:
            return
        self.flv += data
        flv = self.flv
        pos = self.fpos
        if self.signature_ok is None:
            if len(flv) < 13:
                return
            self.signature_ok = flv[:3] == b'FLV' and flv[3] == 1
            if not self.signature_ok:
                self._fail('body does not start with an FLV signature: %r' % bytes(flv[:16]))
                return
            self.flv_flags = flv[4]
            pos = int.from_bytes(flv[5:9], 'big') + 4
        while len(flv) - pos >= 11:
            tag_type = flv[pos] & 0x1f
            size = int.from_bytes(flv[pos + 1:pos + 4], 'big')
            total = 11 + size + 4
            if len(flv) - pos < total:
                break
            prev = int.from_bytes(flv[pos + 11 + size:pos + total], 'big')
            if prev != 11 + size:
                self._fail('previous tag size %d != %d after a type %d tag' % (prev, 11 + size, tag_type))
            if tag_type in self.tags:
                self.tags[tag_type] += 1
            else:
                self.other_tags += 1
                self._fail('unknown FLV tag type %d' % tag_type)
            if tag_type == 9 and size >= 2:
                if self.first_video is None:
                    self.first_video = bytes(flv[pos + 11:pos + 13])
                if flv[pos + 11] >> 4 == 1 and flv[pos + 12] == 1:
                    self.keyframes += 1
            pos += total
        if pos > (1 << 20):
            del flv[:pos]
            pos = 0
        self.fpos = pos


# -------------------------------------------------------------------------------------------
# Raw-socket clients

def request_bytes(method, path, version='1.1', headers=()):
    lines = ['%s %s HTTP/%s' % (method, path, version)]
    if version == '1.1':
        lines.append('Host: %s' % HOST)
    lines.extend('%s: %s' % h for h in headers)
    return ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')


class FlvClient:
    """One raw-socket HTTP client reading one (usually endless) response."""

    def __init__(self, port, path='/live/test.flv', version='1.1', method='GET', headers=(), rcvbuf=None,
                 raw_request=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Root may pass net.core.rmem_max (SO_RCVBUFFORCE): a large buffer that is really large.
            force = getattr(socket, 'SO_RCVBUFFORCE', 33)
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, force, rcvbuf)
            except OSError:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(5)
        self.sock.connect((HOST, port))
        self.local_port = self.sock.getsockname()[1]
        self.resp = FlvResponse(head_request=(method == 'HEAD'))
        self.sent_at = time.monotonic()
        self.recv_times = []          # monotonic time of every recv() that brought bytes
        self.eof = False
        self.eof_at = None
        self.reset = False
        self.first_byte_at = None
        self.sock.sendall(raw_request if raw_request is not None else request_bytes(method, path, version, headers))
        self.sock.setblocking(False)

    def fileno(self):
        return self.sock.fileno()

    def on_readable(self):
        """Read what is there; False once the connection is gone."""
        if self.eof:
            return False
        try:
            data = self.sock.recv(256 * 1024)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            self.reset = True
            data = b''
        now = time.monotonic()
        if not data:
            self.eof = True
            self.eof_at = now
            return False
        if self.first_byte_at is None:
            self.first_byte_at = now
        self.recv_times.append(now)
        self.resp.feed(data)
        return True

    def pump(self, seconds):
        """Read for `seconds` (or until the connection ends)."""
        deadline = time.monotonic() + seconds
        while not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([self.sock], [], [], min(left, 0.2))
            if r:
                self.on_readable()

    def pump_until(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                break
            r, _, _ = select.select([self.sock], [], [], min(left, 0.1))
            if r:
                self.on_readable()
        return predicate()

    def max_gap(self, since=None, until=None):
        """Largest silence between two recv()s carrying data (and up to `until`)."""
        times = [t for t in self.recv_times if since is None or t >= since]
        if until is not None:
            times.append(until)
        if len(times) < 2:
            return float('inf')
        return max(b - a for a, b in zip(times, times[1:]))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def describe(self):
        r = self.resp
        return ('status=%s headers=%s body=%d chunks=%d video=%d audio=%d eof=%s reset=%s terminated=%s error=%s' % (
            r.status, r.header_list, r.body_bytes, r.chunks, r.video_tags, r.audio_tags, self.eof, self.reset,
            r.terminated, r.error))


class Watcher(threading.Thread):
    """A healthy FLV player in a thread: keeps reading until stop(); then max_gap() tells the
    longest silence it saw."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.client = FlvClient(port, path)
        self._stop_event = threading.Event()
        self.stopped_at = None

    def run(self):
        c = self.client
        while not self._stop_event.is_set() and not c.eof:
            r, _, _ = select.select([c.sock], [], [], 0.05)
            if r:
                c.on_readable()

    def stop(self):
        self._stop_event.set()
        self.join(5)
        self.stopped_at = time.monotonic()
        return self

    def close(self):
        if self.is_alive():
            self.stop()
        self.client.close()

    def max_gap(self):
        c = self.client
        if not c.recv_times:
            return float('inf')
        end = c.eof_at if c.eof else (self.stopped_at or time.monotonic())
        return c.max_gap(since=c.recv_times[0], until=end)


class Exchange:
    def __init__(self):
        self.status = None
        self.reason = None
        self.headers = {}
        self.closed = False     # the server closed the connection (FIN or RST)
        self.reset = False
        self.send_error = None
        self.elapsed = None
        self.timed_out = False

    def __repr__(self):
        what = ('%s %s' % (self.status, self.reason)) if self.status else 'no response'
        return '<%s; closed=%s reset=%s send_error=%s %.3fs%s>' % (
            what, self.closed, self.reset, self.send_error, self.elapsed or 0, ' TIMEOUT' if self.timed_out else '')


def http_exchange(port, data, timeout=HTTP_TIMEOUT_S + 3, head=False, linger=0.0):
    """Send raw bytes, read one response (complete by Content-Length or by the connection's
    end) and report what happened. `linger`: keep reading that long after a complete response,
    to see whether anything follows."""
    ex = Exchange()
    resp = FlvResponse(head_request=head)
    t0 = time.monotonic()
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError as e:  # the server may close while a huge request is still being sent
            ex.send_error = e.__class__.__name__
        deadline = t0 + timeout
        done_at = None
        while True:
            now = time.monotonic()
            if resp.complete and done_at is None:
                done_at = now
            if done_at is not None and now >= done_at + linger:
                break
            if now >= deadline:
                ex.timed_out = True
                break
            s.settimeout(max(0.01, min(deadline, (done_at or deadline) + linger) - now))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                ex.closed = ex.reset = True
                break
            if not chunk:
                ex.closed = True
                break
            resp.feed(chunk)
    ex.elapsed = time.monotonic() - t0
    ex.status, ex.reason, ex.headers = resp.status, resp.reason, resp.headers
    ex.after_end = resp.after_end
    ex.body_bytes = resp.body_bytes
    ex.resp = resp
    return ex


def worker_rss_kib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


# -------------------------------------------------------------------------------------------

class HttpFlvTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cls.media = make_test_media()
        cls.tmp = tempfile.mkdtemp(prefix='rill-flv-')
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.access_log = os.path.join(cls.tmp, 'access.log')
        cls.rill = Rill({
            'http': {'timeout': '%ds' % HTTP_TIMEOUT_S, 'max_header_size': '8KiB', 'cors_origin': '*'},
            'log': {'access_log': cls.access_log},
            'apps': {
                'live': {},
                'idle': {'publisher_idle_timeout': '%ds' % IDLE_TIMEOUT_S},
                'tight': {'queue': {'soft_bytes': '512KiB', 'hard_bytes': '2MiB',
                                    'soft_duration': '1s', 'hard_duration': '3s'}},
            },
        }, name='rill-flv')
        cls.addClassCleanup(cls._stop_rill)
        cls.port = cls.rill.http_port

    @classmethod
    def _stop_rill(cls):
        failed = False
        try:
            cls.rill.stop()
        except BaseException:
            failed = True
            raise
        finally:
            if failed:
                sys.stderr.write('\n--- rill log ---\n%s\n' % cls.rill.log_tail(80))
            cls.rill.close(failed=failed)

    # ---- helpers ----------------------------------------------------------------------------

    def url(self, path):
        return self.rill.http_url(path)

    def diag(self, *extra):
        return '\n'.join([str(e) for e in extra] + ['--- rill log ---', self.rill.log_tail(40)])

    def publish(self, stream, app='live'):
        """Start ffmpeg publishing app/stream and wait until HTTP-FLV serves it."""
        pub = ffmpeg_publish(self.rill.rtmp_url(stream, app), self.media)
        self.addCleanup(stop_process, pub)
        path = '/%s/%s.flv' % (app, stream)
        ok = wait_until(lambda: pub.poll() is None and
                        http_exchange(self.port, request_bytes('HEAD', path), head=True).status == 200, 10, 0.1)
        self.assertTrue(ok, self.diag('stream %s/%s never became playable' % (app, stream), process_log(pub)))
        return pub

    def client(self, path, **kw):
        c = FlvClient(self.port, path, **kw)
        self.addCleanup(c.close)
        return c

    def watcher(self, path):
        w = Watcher(self.port, path)
        self.addCleanup(w.close)
        w.start()
        return w

    def assert_playing(self, c, what=''):
        r = c.resp
        self.assertIsNone(r.error, self.diag(what, c.describe()))
        self.assertEqual(r.status, 200, self.diag(what, c.describe()))
        self.assertTrue(r.signature_ok, self.diag(what, c.describe()))

    # ---- 1. ffprobe ---------------------------------------------------------------------------

    def test_01_ffprobe_sees_h264_and_aac(self):
        self.publish('probe')
        res = run(['ffprobe', '-v', 'error', '-show_streams', '-of', 'json', self.url('/live/probe.flv')], timeout=30)
        self.assertEqual(res.returncode, 0, self.diag(res.stderr))
        streams = json.loads(res.stdout)['streams']
        video = [s for s in streams if s.get('codec_type') == 'video']
        audio = [s for s in streams if s.get('codec_type') == 'audio']
        self.assertEqual(len(video), 1, streams)
        self.assertEqual(len(audio), 1, streams)
        self.assertEqual(video[0]['codec_name'], 'h264')
        self.assertEqual((video[0]['width'], video[0]['height']), (640, 360))
        self.assertEqual(audio[0]['codec_name'], 'aac')

    # ---- 2. ffmpeg records 5 s ----------------------------------------------------------------

    def test_02_ffmpeg_records_five_seconds(self):
        self.publish('rec')
        out = os.path.join(self.tmp, 'rec.flv')
        res = run(['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-i', self.url('/live/rec.flv'),
                   '-t', '5', '-c', 'copy', '-f', 'flv', out], timeout=40)
        self.assertEqual(res.returncode, 0, self.diag(res.stderr))
        probe = run(['ffprobe', '-v', 'error', '-show_format', '-show_streams', '-of', 'json', out], timeout=20)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        info = json.loads(probe.stdout)
        duration = float(info['format']['duration'])
        self.assertGreaterEqual(duration, 4.5, info['format'])
        self.assertLessEqual(duration, 5.6, info['format'])
        kinds = sorted((s['codec_type'], s['codec_name']) for s in info['streams'])
        self.assertEqual(kinds, [('audio', 'aac'), ('video', 'h264')])
        # Every frame decodes (the cut starts at a keyframe, nothing is corrupt).
        dec = run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'error', '-i', out, '-f', 'null', '-'], timeout=40)
        self.assertEqual(dec.returncode, 0, dec.stderr)
        self.assertEqual(dec.stderr.strip(), '', 'decoding the recording reported errors')

    # ---- 3. 200 concurrent players -------------------------------------------------------------

    def test_03_two_hundred_concurrent_players(self):
        n_clients, seconds, min_video = 200, 5.0, 75   # 25 fps: 125 video tags in 5 s (+ the GOP cache)
        self.publish('many')
        sel = selectors.DefaultSelector()
        self.addCleanup(sel.close)
        clients = []
        for _ in range(n_clients):
            c = self.client('/live/many.flv')
            clients.append(c)
            sel.register(c.sock, selectors.EVENT_READ, c)
        t0 = time.monotonic()
        deadline = t0 + seconds
        open_count = n_clients
        while open_count and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.1):
                c = key.data
                if not c.on_readable():
                    sel.unregister(c.sock)
                    open_count -= 1
        bad = []
        for i, c in enumerate(clients):
            r = c.resp
            if (r.status != 200 or not r.signature_ok or r.error or c.eof or r.video_tags < min_video
                    or r.audio_tags == 0 or r.first_video is None or r.first_video[0] != 0x17):
                bad.append('client %d (port %d): %s' % (i, c.local_port, c.describe()))
        videos = sorted(c.resp.video_tags for c in clients)
        sys.stderr.write('\n200 players: video tags in %.0f s min %d median %d max %d\n' % (
            seconds, videos[0], videos[len(videos) // 2], videos[-1]))
        self.assertEqual(bad, [], self.diag('%d of %d players failed' % (len(bad), n_clients), *bad[:5]))

    # ---- 4. response headers, HTTP/1.0, CORS, OPTIONS, HEAD -------------------------------------

    def test_04_headers(self):
        self.publish('hdr')
        # HTTP/1.1: chunked, video/x-flv, CORS.
        c = self.client('/live/hdr.flv')
        c.pump_until(lambda: c.resp.video_tags >= 10, 5)
        self.assert_playing(c)
        h = c.resp.headers
        self.assertEqual(c.resp.version, '1.1')
        self.assertEqual(h.get('content-type'), 'video/x-flv')
        self.assertEqual(h.get('transfer-encoding', '').lower(), 'chunked')
        self.assertNotIn('content-length', h)
        self.assertEqual(h.get('access-control-allow-origin'), '*')
        self.assertGreater(c.resp.chunks, 0)
        self.assertEqual(c.resp.flv_flags & 0x05, 0x05, 'FLV header flags: audio and video')

        # HTTP/1.0: no chunked encoding, the body is delimited by the connection's end.
        c10 = self.client('/live/hdr.flv', version='1.0')
        c10.pump_until(lambda: c10.resp.video_tags >= 10, 5)
        self.assert_playing(c10, 'HTTP/1.0')
        h10 = c10.resp.headers
        self.assertEqual(h10.get('content-type'), 'video/x-flv')
        self.assertNotIn('transfer-encoding', h10)
        self.assertNotIn('content-length', h10)
        self.assertEqual(c10.resp.chunks, 0)
        self.assertEqual(h10.get('access-control-allow-origin'), '*')

        # 404 carries CORS too (a cross-origin player must be able to read the error).
        ex = http_exchange(self.port, request_bytes('GET', '/live/absent.flv'))
        self.assertEqual(ex.status, 404, ex)
        self.assertEqual(ex.headers.get('access-control-allow-origin'), '*', ex.headers)

        # CORS preflight.
        ex = http_exchange(self.port, request_bytes('OPTIONS', '/live/hdr.flv', headers=[
            ('Origin', 'http://127.0.0.1:9'), ('Access-Control-Request-Method', 'GET'),
            ('Access-Control-Request-Headers', 'range')]))
        self.assertEqual(ex.status, 204, ex)
        methods = [m.strip() for m in ex.headers.get('access-control-allow-methods', '').split(',')]
        self.assertIn('GET', methods, ex.headers)
        self.assertEqual(ex.headers.get('access-control-allow-origin'), '*', ex.headers)
        self.assertIn('range', ex.headers.get('access-control-allow-headers', '').lower(), ex.headers)
        self.assertEqual(ex.body_bytes, 0)

        # HEAD: the headers of the 200, no body at all.
        ex = http_exchange(self.port, request_bytes('HEAD', '/live/hdr.flv'), head=True, linger=0.7)
        self.assertEqual(ex.status, 200, ex)
        self.assertEqual(ex.headers.get('content-type'), 'video/x-flv', ex.headers)
        self.assertEqual(ex.after_end, 0, 'HEAD response followed by %d body bytes' % ex.after_end)
        ex = http_exchange(self.port, request_bytes('HEAD', '/live/absent.flv'), head=True)
        self.assertEqual(ex.status, 404, ex)

    # ---- 5. 404 at once ------------------------------------------------------------------------

    def test_05_not_found_at_once(self):
        for path, what in [('/live/nobody.flv', 'missing stream'), ('/nosuchapp/test.flv', 'unknown app'),
                           ('/live/nobody.m3u8', 'missing playlist'), ('/nothing', 'no route')]:
            with self.subTest(what=what):
                t0 = time.monotonic()
                ex = http_exchange(self.port, request_bytes('GET', path))
                took = time.monotonic() - t0
                self.assertEqual(ex.status, 404, '%s: %r' % (path, ex))
                self.assertLess(took, 1.0, '%s answered after %.2f s' % (path, took))
        # With HTTP/1.0 the 404 ends the connection.
        ex = http_exchange(self.port, request_bytes('GET', '/live/nobody.flv', version='1.0'))
        self.assertEqual(ex.status, 404, ex)
        self.assertLess(ex.elapsed, 1.0, ex)

    # ---- 6. bad requests never disturb a healthy player ----------------------------------------

    def test_06_bad_requests_leave_players_alone(self):
        self.publish('bad')
        w = self.watcher('/live/bad.flv')
        self.assertTrue(wait_until(lambda: w.client.resp.video_tags >= 5, 5), self.diag(w.client.describe()))
        # An incomplete request: closed by the server within http.timeout.
        partial = socket.create_connection((HOST, self.port))
        self.addCleanup(partial.close)
        partial.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n')
        partial_t0 = time.monotonic()

        cases = [
            ('malformed request line', b'GARBAGE\r\n\r\n', (400,)),
            # RFC 9110 §9.1: an unrecognized method SHOULD get 501 (Not Implemented).
            ('unknown method', b'FOO / HTTP/1.1\r\nHost: x\r\n\r\n', (501,)),
            ('20 KB header', b'GET /live/bad.flv HTTP/1.1\r\nHost: x\r\nX-Big: ' + b'a' * 20000 + b'\r\n\r\n', None),
            ('POST', b'POST /live/bad.flv HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi', (405,)),
            ('PUT', b'PUT /live/bad.flv HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', (405,)),
            ('DELETE', b'DELETE /live/bad.flv HTTP/1.1\r\nHost: x\r\n\r\n', (405,)),
            ('.. traversal', b'GET /live/../bad.flv HTTP/1.1\r\nHost: x\r\n\r\n', (400,)),
            ('%2e%2e traversal', b'GET /live/%2e%2e/bad.flv HTTP/1.1\r\nHost: x\r\n\r\n', (400,)),
            ('%2e%2e in the app', b'GET /%2e%2e/live/bad.flv HTTP/1.1\r\nHost: x\r\n\r\n', (400,)),
            ('3 KB query', b'GET /live/bad.flv?q=' + b'a' * 3000 + b' HTTP/1.1\r\nHost: x\r\n\r\n', (414,)),
            ('100 KB query', b'GET /live/bad.flv?q=' + b'a' * 100000 + b' HTTP/1.1\r\nHost: x\r\n\r\n', None),
            ('1 MB request line', b'GET /' + b'a' * (1 << 20) + b' HTTP/1.1\r\nHost: x\r\n\r\n', None),
            ('64 KB without a line end', b'G' * 65536, None),
            ('NUL in the target', b'GET /live/bad%00.flv HTTP/1.1\r\nHost: x\r\n\r\n', (400,)),
            ('bad HTTP version', b'GET /live/bad.flv HTTP/9.9\r\nHost: x\r\n\r\n', (505,)),  # RFC 9110 §15.6.6
        ]
        outcomes = []
        for name, data, want in cases:
            with self.subTest(case=name):
                ex = http_exchange(self.port, data)
                outcomes.append('%-26s -> %r' % (name, ex))
                self.assertFalse(ex.timed_out, '%s: no answer and no close within %ss: %r' % (
                    name, HTTP_TIMEOUT_S + 3, ex))
                if ex.status is not None:
                    self.assertTrue(400 <= ex.status < 500 or (want and ex.status in want), '%s: %r' % (name, ex))
                    if want:
                        self.assertIn(ex.status, want, '%s: %r' % (name, ex))
                    if ex.status == 405:
                        self.assertIn('GET', ex.headers.get('allow', ''), ex.headers)
                else:
                    self.assertTrue(ex.closed, '%s: %r' % (name, ex))
                    self.assertIsNone(want, '%s: expected %s, got no response: %r' % (name, want, ex))
        # The incomplete request: closed (or answered 4xx) within http.timeout, never left open.
        partial.settimeout(HTTP_TIMEOUT_S + 3)
        try:
            data = partial.recv(4096)
        except socket.timeout:
            data = None
        except OSError:
            data = b''
        took = time.monotonic() - partial_t0
        outcomes.append('%-26s -> %r after %.1fs' % ('incomplete request', data[:40] if data else data, took))
        self.assertIsNotNone(data, 'an incomplete request was still open after %.1f s' % took)
        if data:
            self.assertRegex(data, rb'^HTTP/1\.[01] 4\d\d ')
        sys.stderr.write('\nbad requests:\n  ' + '\n  '.join(outcomes) + '\n')

        # Still up and serving; the healthy player never stalled.
        ex = http_exchange(self.port, request_bytes('GET', '/healthz'))
        self.assertEqual(ex.status, 200, ex)
        self.assertTrue(self.rill.running())
        before = w.client.resp.video_tags
        time.sleep(0.5)
        w.stop()
        c = w.client
        self.assertFalse(c.eof, self.diag('healthy player was disconnected', c.describe()))
        self.assert_playing(c)
        self.assertGreater(c.resp.video_tags, before, 'healthy player stopped receiving')
        self.assertLess(w.max_gap(), 1.0, 'healthy player saw a %.2f s gap' % w.max_gap())

    # ---- 7. the publisher leaves ---------------------------------------------------------------

    def test_07a_publisher_leaves_response_ends(self):
        pub = self.publish('gone', app='idle')
        c = self.client('/idle/gone.flv')
        self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= 25, 5), self.diag(c.describe()))
        t_stop = time.monotonic()
        stop_process(pub)
        c.pump_until(lambda: c.resp.terminated, IDLE_TIMEOUT_S + 5)
        took = time.monotonic() - t_stop
        self.assertIsNone(c.resp.error, c.describe())
        self.assertTrue(c.resp.terminated, self.diag('no chunked terminator %.1f s after the publisher left' % took,
                                                     c.describe()))
        self.assertGreaterEqual(took, IDLE_TIMEOUT_S - 0.5, 'response ended %.2f s after the publisher left' % took)
        self.assertLessEqual(took, IDLE_TIMEOUT_S + 2.5, 'response ended %.2f s after the publisher left' % took)
        self.assertEqual(c.resp.after_end, 0, 'bytes after the chunked terminator')

    def test_07b_publisher_returns_within_idle_time(self):
        pub = self.publish('back', app='idle')
        c = self.client('/idle/back.flv')
        self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= 25, 5), self.diag(c.describe()))
        t_stop = time.monotonic()
        stop_process(pub)
        pub2 = ffmpeg_publish(self.rill.rtmp_url('back', 'idle'), self.media)
        self.addCleanup(stop_process, pub2)
        # Past the idle time the response goes on with the new publisher's media.
        c.pump(max(0.0, t_stop + IDLE_TIMEOUT_S + 0.5 - time.monotonic()))
        mark, mark_at = c.resp.video_tags, time.monotonic()
        c.pump(2.0)
        self.assertIsNone(c.resp.error, c.describe())
        self.assertFalse(c.resp.terminated, self.diag('response ended although the publisher came back',
                                                      c.describe(), process_log(pub2)))
        self.assertFalse(c.eof, self.diag('connection closed although the publisher came back', c.describe()))
        self.assertGreaterEqual(c.resp.video_tags - mark, 25,
                                self.diag('only %d video tags in the 2 s after the idle time' % (
                                    c.resp.video_tags - mark), c.describe(), process_log(pub2)))
        self.assertLess(c.max_gap(since=mark_at), 1.0)

    # ---- 8. slow player ------------------------------------------------------------------------

    def test_08_slow_player_is_disconnected(self):
        self.publish('slow', app='tight')
        w = self.watcher('/tight/slow.flv')
        self.assertTrue(wait_until(lambda: w.client.resp.video_tags >= 5, 5), self.diag(w.client.describe()))
        worker = self.rill.worker_pids()[0]
        rss0 = worker_rss_kib(worker)
        offset = self.rill.log_offset()
        slow = self.client('/tight/slow.flv', rcvbuf=4096)
        self.assertTrue(slow.pump_until(lambda: slow.resp.body_bytes > 0, 5), self.diag(slow.describe()))
        # ... and now it reads nothing more.
        rss_max = rss0
        pattern = r'http-flv: 127\.0\.0\.1:%d .*too slow' % slow.local_port
        t0 = time.monotonic()
        found = None
        while time.monotonic() - t0 < SLOW_DEADLINE_S and not found:
            rss_max = max(rss_max, worker_rss_kib(worker))
            found = re.search(pattern, self.rill.log_since(offset))
            time.sleep(0.1)
        took = time.monotonic() - t0
        self.assertTrue(found, self.diag('slow player not disconnected within %d s' % SLOW_DEADLINE_S,
                                         slow.describe()))
        sys.stderr.write('\nslow player disconnected after %.1f s; worker RSS %d -> max %d KiB\n' % (
            took, rss0, rss_max))
        # Bounded: hard_bytes is 2 MiB; allow the allocator and the GOP cache some slack.
        self.assertLess(rss_max - rss0, 24 * 1024, 'worker RSS grew by %d KiB' % (rss_max - rss0))
        # The slow player's connection really is gone (after what the kernel had buffered).
        slow.sock.setblocking(True)
        slow.sock.settimeout(5)
        self.assertTrue(slow.pump_until(lambda: slow.eof, 10), 'the slow player connection is still open')
        # The healthy player of the same stream never stalled.
        time.sleep(0.5)
        w.stop()
        self.assertFalse(w.client.eof, self.diag('healthy player was disconnected', w.client.describe()))
        self.assert_playing(w.client)
        self.assertLess(w.max_gap(), 1.0, 'healthy player saw a %.2f s gap' % w.max_gap())
        self.assertTrue(self.rill.running())

    # ---- 9. access log -------------------------------------------------------------------------

    def test_09_access_log(self):
        # A 404 ...
        with socket.create_connection((HOST, self.port)) as s:
            local = s.getsockname()[1]
            s.sendall(request_bytes('GET', '/live/nolog.flv?x=%d' % local, version='1.0'))
            s.settimeout(5)
            raw = b''
            while True:
                d = s.recv(4096)
                if not d:
                    break
                raw += d
        self.assertRegex(raw, rb'^HTTP/1\.[01] 404 ')
        body_len = len(raw.split(b'\r\n\r\n', 1)[1])
        self.assertGreater(body_len, 0)
        # nginx's HTTP combined format, then the duration and the protocol (docs/operations.md).
        rx = re.compile(r'^127\.0\.0\.1 - - \[[^\]]+\] "GET /live/nolog\.flv\?x=%d HTTP/1\.0" 404 (\d+) "-" "-" '
                        r'(\d+)ms http-flv$' % local, re.M)

        def read_log():
            try:
                with open(self.access_log, errors='replace') as f:
                    return f.read()
            except OSError:
                return ''
        m = wait_until(lambda: rx.search(read_log()), 5)
        self.assertTrue(m, 'no access log line for the 404 from port %d:\n%s' % (local, read_log()[-2000:]))
        self.assertEqual(int(m.group(1)), body_len, 'logged bytes != the %d body bytes sent: %s' % (
            body_len, m.group(0)))

        # ... and a whole FLV session: status 200, the bytes it got, how long it lasted.
        self.publish('logged')
        c = self.client('/live/logged.flv')
        c.pump(1.5)
        self.assert_playing(c)
        got = c.resp.body_bytes
        c.close()
        # One session line, nginx-rtmp's combined format: bytes in and out, the duration, then the
        # protocol and the close reason.
        rx = re.compile(r'^127\.0\.0\.1 \[[^\]]+\] PLAY "live" "logged" "" - \d+ (\d+) "[^"]*" "[^"]*" \((\d+)s\) '
                        r'http-flv "client closed"$', re.M)
        m = wait_until(lambda: rx.search(read_log()), 5)
        self.assertTrue(m, 'no access log line for the FLV session:\n%s' % read_log()[-2000:])
        self.assertGreaterEqual(int(m.group(1)), got)
        self.assertGreaterEqual(int(m.group(2)), 1)

    # ---- 10. late joiners ---------------------------------------------------------------------

    def test_10_late_joiner_gets_the_stream(self):
        # A player that joins a stream published for longer than the queue's duration bounds is
        # not slow: it must get the GOP cache (sequence headers first) and then the live stream,
        # with nothing dropped. "tight": past hard_duration (3 s); "live": past soft_duration (2 s).
        self.publish('late', app='tight')
        self.publish('late', app='live')
        time.sleep(4.5)
        for app in ('tight', 'live'):
            with self.subTest(app=app):
                offset = self.rill.log_offset()
                # A kernel buffer of several seconds of media: the player is fast even when this
                # test process gets no CPU for a second on a loaded machine (the queue bounds of
                # `tight` would then rightly skip frames).
                c = self.client('/%s/late.flv' % app, rcvbuf=8 << 20)
                c.pump(3.0)
                self.assert_playing(c, 'late joiner of %s/late' % app)
                self.assertFalse(c.eof, self.diag('late joiner disconnected', c.describe()))
                self.assertEqual(c.resp.first_video, b'\x17\x00', 'first video tag is not the AVC sequence header')
                self.assertGreaterEqual(c.resp.video_tags, 60, c.describe())
                c.close()
                m = self.rill.wait_for_log(r'http-flv: 127\.0\.0\.1:%d closed \([^)]*\) %s/late bytes=\d+ dropped=(\d+)'
                                           % (c.local_port, app), 5, since=offset)
                self.assertTrue(m, self.diag('no close line for the late joiner'))
                self.assertEqual(m.group(1), '0', self.diag('a fast late joiner had frames dropped'))


if __name__ == '__main__':
    unittest.main()
