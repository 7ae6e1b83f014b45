"""HTTP-FLV on the RTMP write path: after admission, the HTTP connection hands its socket to the
FLV body stream, which writes it directly (one sendmsg per flush batch). Checked here with raw sockets and
real clients against one daemon:

- HTTP/1.1: every chunk is exactly one FLV tag (the file header its own first chunk; each tag
  framed once per frame and shared by the players), the PreviousTagSize chain holds across
  chunks, the stream end sends the chunked terminator and closes the connection;
- HTTP/1.0: a close-delimited body that ends with the connection when the stream ends;
- a client that closes mid-stream, or sends too much after its request, is released at once
  (sessions and http_connections in /healthz, the API's client list), and http.max_connections
  still counts a taken-over connection, once;
- the API's kick closes a player;
- ffprobe and ffmpeg read the URL.
"""

import http.client
import json
import re
import shutil
import tempfile
import unittest

import test_http_flv as flv
from rilltest import HOST, Rill, make_test_media, require_tool, run, stop_process, wait_until

IDLE_TIMEOUT_S = 1  # apps.idle.publisher_idle_timeout: how long a stream outlives its publisher
MAX_CONNECTIONS = 6  # http.max_connections of the one worker


class AlignedResponse(flv.FlvResponse):
    """Records, at the end of every chunk's data, whether the FLV parser consumed every byte
    received so far (the chunk ended exactly after a tag's PreviousTagSize)."""

    def __init__(self):
        super().__init__()
        self.aligned_chunks = 0
        self.misaligned_chunks = 0

    def _body(self, data):
        super()._body(data)
        if self.chunked and self.cstate == 'data' and self.chunk_left == len(data):
            # This call carries the last bytes of the chunk (_dechunk subtracts after _body).
            if len(self.flv) == self.fpos:
                self.aligned_chunks += 1
            else:
                self.misaligned_chunks += 1


def healthz(port):
    """(sessions, http_connections) from /healthz (its own connection included)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request('GET', '/healthz')
        text = conn.getresponse().read().decode('utf-8')
    finally:
        conn.close()
    m = re.search(r'sessions=(\d+) .*http_connections=(\d+)', text)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


class HttpFlvTakeoverTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cls.media = make_test_media()
        cls.tmp = tempfile.mkdtemp(prefix='rill-flvtk-')
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.rill = Rill({
            'http': {'timeout': '5s', 'cors_origin': '*', 'max_connections': MAX_CONNECTIONS},
            'apps': {'live': {}, 'idle': {'publisher_idle_timeout': '%ds' % IDLE_TIMEOUT_S}},
        }, name='rill-flvtk')
        cls.addClassCleanup(cls.rill.close)
        cls.addClassCleanup(cls.rill.stop)
        cls.port = cls.rill.http_port

    # The same helpers as test_http_flv's (publish and wait until playable; a diagnostic with the log).
    diag = flv.HttpFlvTest.diag
    publish = flv.HttpFlvTest.publish

    def client(self, path, version='1.1', resp=None):
        c = flv.FlvClient(self.port, path, version=version)
        if resp is not None:
            c.resp = resp
        self.addCleanup(c.close)
        return c

    def players(self):
        """Players of the API's client list (proto flv)."""
        conn = http.client.HTTPConnection(HOST, self.rill.api_port, timeout=10)
        try:
            conn.request('GET', '/api/v1/clients?kind=player')
            resp = conn.getresponse()
            body = json.loads(resp.read().decode('utf-8'))
        finally:
            conn.close()
        return [c for c in body['items'] if c.get('proto') in ('flv', 'http-flv')]

    def kick(self, client_id):
        conn = http.client.HTTPConnection(HOST, self.rill.api_port, timeout=10)
        try:
            conn.request('DELETE', '/api/v1/clients/%d' % client_id)
            return conn.getresponse().status
        finally:
            conn.close()

    def wait_released(self, baseline_sessions):
        """Sessions back to the publishers alone and no HTTP connection but /healthz's own."""
        ok = wait_until(lambda: healthz(self.port) == (baseline_sessions, 1), 10, 0.1)
        self.assertTrue(ok, self.diag('not released: /healthz says %r' % (healthz(self.port),)))

    # ---- HTTP/1.1: one chunk per tag, a clean end --------------------------------------------------

    def test_1_chunks_are_whole_tag_batches_and_the_end_is_clean(self):
        pub = self.publish('chunks', app='idle')
        c = self.client('/idle/chunks.flv', resp=AlignedResponse())
        self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= 50, 15), self.diag(c.describe()))
        r = c.resp
        self.assertIsNone(r.error, self.diag(c.describe()))
        self.assertEqual((r.version, r.status), ('1.1', 200))
        self.assertEqual(r.headers.get('transfer-encoding'), 'chunked')
        self.assertEqual(r.headers.get('connection'), 'close')
        self.assertEqual(r.headers.get('content-type'), 'video/x-flv')
        self.assertEqual(r.headers.get('access-control-allow-origin'), '*')
        self.assertIn('date', r.headers)
        self.assertNotIn('content-length', r.headers)
        self.assertGreater(r.aligned_chunks, 10, c.describe())
        self.assertEqual(r.misaligned_chunks, 0, 'chunks that end inside an FLV tag')
        # One chunk per tag, the file header the first: every chunk that ended held one tag.
        self.assertEqual(r.aligned_chunks, sum(r.tags.values()) + r.other_tags + 1, c.describe())
        # The stream ends (publisher gone + idle timeout): the terminator, then the connection ends.
        stop_process(pub)
        c.pump_until(lambda: c.eof, IDLE_TIMEOUT_S + 10)
        self.assertTrue(r.terminated, self.diag('no chunked terminator', c.describe()))
        self.assertTrue(c.eof and not c.reset, self.diag('connection not closed cleanly', c.describe()))
        self.assertEqual(r.after_end, 0)
        self.assertIsNone(r.error, c.describe())

    # ---- HTTP/1.0: close-delimited --------------------------------------------------------------

    def test_2_http10_body_ends_with_the_connection(self):
        pub = self.publish('old', app='idle')
        c = self.client('/idle/old.flv', version='1.0')
        self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= 25, 15), self.diag(c.describe()))
        r = c.resp
        self.assertEqual((r.version, r.status), ('1.0', 200))
        self.assertNotIn('transfer-encoding', r.headers)
        self.assertNotIn('content-length', r.headers)
        self.assertEqual(r.chunks, 0)
        stop_process(pub)
        c.pump_until(lambda: c.eof, IDLE_TIMEOUT_S + 10)
        self.assertTrue(c.eof and not c.reset, self.diag('no clean end of the body', c.describe()))
        self.assertIsNone(r.error, c.describe())
        # Every byte of the body is whole tags: the PreviousTagSize chain ended exactly at EOF.
        self.assertEqual(len(r.flv), r.fpos, 'the body ended inside a tag')

    # ---- release: client close, flood, kick, connection limit -------------------------------------

    def test_3_players_are_released_and_counted_once(self):
        self.publish('rel')
        base_sessions, base_conns = healthz(self.port)
        self.assertEqual(base_conns, 1, 'only /healthz itself is connected')
        # The connection limit counts taken-over players, each once.
        cs = [self.client('/live/rel.flv') for _ in range(MAX_CONNECTIONS - 1)]
        for c in cs:
            self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= 3, 15), self.diag(c.describe()))
        self.assertEqual(healthz(self.port), (base_sessions + len(cs), MAX_CONNECTIONS))
        cs.append(self.client('/live/rel.flv'))
        self.assertTrue(cs[-1].pump_until(lambda: cs[-1].resp.video_tags >= 3, 15), self.diag(cs[-1].describe()))
        extra = self.client('/live/rel.flv')  # over the limit: refused (closed at once)
        extra.pump(1.0)
        self.assertTrue(extra.eof and extra.resp.status is None, self.diag('over the limit', extra.describe()))
        self.assertEqual(len(self.players()), len(cs))

        # A client that closes mid-stream is released at once.
        cs.pop().close()
        self.assertTrue(wait_until(lambda: healthz(self.port) == (base_sessions + len(cs), len(cs) + 1), 5, 0.05),
                        self.diag('closed player not released', healthz(self.port)))
        # One that keeps sending after its request is closed.
        flood = cs.pop()
        flood.sock.settimeout(5)
        try:
            for _ in range(40):
                flood.sock.sendall(b'x' * 4096)
        except OSError:
            pass
        flood.sock.setblocking(False)
        flood.pump_until(lambda: flood.eof, 5)
        self.assertTrue(flood.eof, self.diag('flooding client not closed', flood.describe()))
        # The API's kick closes one.
        kicked = cs.pop()
        ids = sorted(p['id'] for p in self.players())
        self.assertEqual(len(ids), len(cs) + 1)
        for i in ids:
            self.assertEqual(self.kick(i), 204)
        kicked.pump_until(lambda: kicked.eof, 5)
        self.assertTrue(kicked.eof, self.diag('kicked player still connected', kicked.describe()))
        for c in cs:
            c.close()
        self.wait_released(base_sessions)
        self.assertEqual(self.players(), [])

    # ---- real clients --------------------------------------------------------------------------

    def test_4_ffprobe_and_ffmpeg_read_the_url(self):
        self.publish('real')
        url = self.rill.http_url('/live/real.flv')
        p = run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name', '-of', 'csv=p=0', url], timeout=30)
        self.assertEqual(p.returncode, 0, self.diag(p.stderr))
        self.assertEqual(sorted(p.stdout.split()), ['aac', 'h264'], p.stdout)
        out = '%s/rec.flv' % self.tmp
        p = run(['ffmpeg', '-v', 'error', '-y', '-i', url, '-t', '3', '-c', 'copy', out], timeout=40)
        self.assertEqual(p.returncode, 0, self.diag(p.stderr))
        p = run(['ffprobe', '-v', 'error', '-count_frames', '-select_streams', 'v', '-show_entries',
                 'stream=nb_read_frames', '-of', 'csv=p=0', out], timeout=30)
        self.assertGreater(int(p.stdout.strip() or 0), 30, p.stdout + p.stderr)


if __name__ == '__main__':
    unittest.main()
