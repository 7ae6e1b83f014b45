"""HLS integration tests: ffmpeg publishes over RTMP, HTTP clients (ffprobe, ffmpeg's HLS demuxer,
200 Python threads) read the in-memory playlist and segments.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls
"""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import hlsutil
import rilltest
from hlsutil import FRAGMENT_S, WINDOW, Playlist, get_playlist, hls_config, make_gop1_media, request, seq_of_uri
from rilltest import Rill, wait_until

HOST = rilltest.HOST


def need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    return unittest.skipIf(missing, 'not installed: %s' % ' '.join(missing))


def stop(p):
    rilltest.stop_process(p)


@need('ffmpeg', 'ffprobe')
class HlsLiveTest(unittest.TestCase):
    """One server and one publisher (live/test, plus nohls/test on an app without HLS) for the
    whole class."""

    @classmethod
    def setUpClass(cls):
        cls.media = make_gop1_media()
        cls.rill = Rill(hls_config({'nohls': {}}))
        try:
            offset = cls.rill.log_offset()
            cls.pub = rilltest.ffmpeg_publish(cls.rill.rtmp_url('test'), cls.media)
            cls.pub_nohls = rilltest.ffmpeg_publish(cls.rill.rtmp_url('test', app='nohls'), cls.media)
            m = cls.rill.wait_for_log(r'publish start: live/test', 10, since=offset)
            if not m:
                raise AssertionError('publisher did not start\n%s' % rilltest.process_log(cls.pub))
            cls.published_at = time.monotonic()
            cls.first_playlist_after = None
            if wait_until(lambda: get_playlist(cls.rill.http_port) is not None, 10, 0.02):
                cls.first_playlist_after = time.monotonic() - cls.published_at
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in (getattr(cls, 'pub', None), getattr(cls, 'pub_nohls', None)):
            stop(p)
        failed = False
        try:
            if cls.rill.running():
                cls.rill.stop()
        except BaseException:
            failed = True
            raise
        finally:
            cls.rill.close(failed=failed)

    def port(self):
        return self.rill.http_port

    def playlist(self, min_segments=1, timeout=10):
        pl = wait_until(lambda: (lambda p: p if p and len(p.segments) >= min_segments else None)(
            get_playlist(self.port())), timeout)
        self.assertTrue(pl, 'no playlist with %d segment(s)\n%s' % (min_segments, self.rill.log_tail()))
        return pl

    def segment_path(self, seg):
        return '/live/' + seg['uri']

    # ---- playlist ---------------------------------------------------------------------------

    def test_playlist_appears_within_two_fragments(self):
        self.assertIsNotNone(self.first_playlist_after, 'no playlist within 10 s\n' + self.rill.log_tail())
        # The first segment ends at the second keyframe, one fragment after the first.
        self.assertLessEqual(self.first_playlist_after, 2 * FRAGMENT_S + 0.5,
                             'playlist took %.2f s' % self.first_playlist_after)

    def test_playlist_format_and_headers(self):
        pl = self.playlist(3)
        status, h, body = request(self.port(), 'GET', '/live/test.m3u8')
        self.assertEqual(status, 200)
        self.assertEqual(h['content-type'], 'application/vnd.apple.mpegurl')
        self.assertEqual(h['cache-control'], hlsutil.playlist_cache_control(body))
        self.assertEqual(h.get('access-control-allow-origin'), '*')
        self.assertEqual(int(h['content-length']), len(body))
        text = body.decode()
        self.assertTrue(text.startswith('#EXTM3U\n'), text)
        self.assertIn('#EXT-X-TARGETDURATION:', text)
        self.assertNotIn('#EXT-X-ENDLIST', text)
        pl = Playlist(text)
        self.assertLessEqual(len(pl.segments), WINDOW + 2, text)
        for s in pl.segments:
            # Relative URIs: STREAM/SEQ.ts next to /APP/STREAM.m3u8.
            self.assertEqual(s['uri'], 'test/%d.ts' % s['seq'], text)
            self.assertLessEqual(round(s['duration']), pl.target_duration, text)
            self.assertGreater(s['duration'], 0.5, text)

    def test_media_sequence_never_goes_backwards(self):
        last = -1
        deadline = time.monotonic() + 3 * FRAGMENT_S
        while time.monotonic() < deadline:
            pl = get_playlist(self.port())
            self.assertIsNotNone(pl)
            self.assertGreaterEqual(pl.media_sequence, last)
            last = pl.media_sequence
            time.sleep(0.1)

    # ---- segments ---------------------------------------------------------------------------

    def test_segment_headers_and_ffprobe(self):
        pl = self.playlist(2)
        seg = pl.segments[-1]
        status, h, body = request(self.port(), 'GET', self.segment_path(seg))
        self.assertEqual(status, 200, h)
        self.assertEqual(h['content-type'], 'video/mp2t')
        self.assertEqual(int(h['content-length']), len(body))
        self.assertEqual(h.get('access-control-allow-origin'), '*')
        cc = h['cache-control']
        self.assertRegex(cc, r'^max-age=\d+, immutable$')  # a segment URI never changes content
        self.assertGreaterEqual(int(cc.split('=', 1)[1].split(',')[0]), pl.duration, cc)
        self.assertEqual(len(body) % 188, 0)
        self.assertEqual(body[0], 0x47)
        self.assertEqual(((body[1] & 0x1F) << 8) | body[2], 0, 'PAT first')

        with tempfile.NamedTemporaryFile(suffix='.ts') as f:
            f.write(body)
            f.flush()
            r = rilltest.run(['ffprobe', '-v', 'error', f.name], timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout + r.stderr, '', 'ffprobe complained')
            r = rilltest.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name', '-of', 'csv=p=0',
                              f.name], timeout=30)
            # (stream entries print once per stream and once per program listing it)
            self.assertEqual(sorted(set(r.stdout.split())), ['aac', 'h264'], r.stdout + r.stderr)

    def test_ffmpeg_reads_the_live_playlist(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, 'x.ts')
            r = rilltest.run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'error', '-i',
                              self.rill.http_url('/live/test.m3u8'), '-t', '10', '-c', 'copy', '-y', out],
                             timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(os.path.getsize(out), 100 * 1000)
            r = rilltest.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name:format=duration',
                              '-of', 'default=nw=1', out], timeout=30)
            self.assertIn('codec_name=h264', r.stdout)
            self.assertIn('codec_name=aac', r.stdout)
            dur = float([l for l in r.stdout.splitlines() if l.startswith('duration=')][0].split('=')[1])
            self.assertGreater(dur, 8.0, r.stdout)

    def raw_head(self, path):
        """(status line, headers {lowercase: value}, bytes after the header block) of a HEAD on a
        raw socket, so that a body sent by mistake shows."""
        with socket.create_connection((HOST, self.port()), timeout=5) as s:
            s.sendall(('HEAD %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' % path).encode())
            data = b''
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, sep, rest = data.partition(b'\r\n\r\n')
        self.assertTrue(sep, data[:200])
        lines = head.decode().split('\r\n')
        headers = {k.lower(): v.strip() for k, v in (l.split(':', 1) for l in lines[1:])}
        return lines[0], headers, rest

    def test_head_playlist_and_segment(self):
        pl = self.playlist(2)
        seg = pl.segments[-1]
        _, _, get_body = request(self.port(), 'GET', self.segment_path(seg))
        for path, ctype, length in (('/live/test.m3u8', 'application/vnd.apple.mpegurl', None),
                                    (self.segment_path(seg), 'video/mp2t', len(get_body))):
            status, headers, rest = self.raw_head(path)
            self.assertIn(' 200 ', status + ' ')
            self.assertEqual(rest, b'', 'HEAD %s returned a body' % path)
            self.assertEqual(headers['content-type'], ctype)
            self.assertEqual(headers.get('access-control-allow-origin'), '*')
            self.assertGreater(int(headers['content-length']), 0)
            if length is not None:
                self.assertEqual(int(headers['content-length']), length)
        for path in ('/live/nosuch.m3u8', '/live/test/999999999.ts'):
            status, headers, rest = self.raw_head(path)
            self.assertIn(' 404 ', status + ' ')
            self.assertEqual(rest, b'', 'HEAD %s returned a body' % path)

    def test_not_found(self):
        self.playlist(1)
        for path in ('/live/nosuch.m3u8', '/live/nosuch/0.ts', '/noapp/test.m3u8', '/noapp/test/0.ts',
                     '/nohls/test.m3u8', '/nohls/test/0.ts', '/live/test/999999999.ts'):
            status, h, _ = request(self.port(), 'GET', path)
            self.assertEqual(status, 404, path)
            self.assertEqual(h.get('access-control-allow-origin'), '*', path)
        # The app without HLS does have a live stream (HTTP-FLV answers).
        conn = http.client.HTTPConnection(HOST, self.port(), timeout=5)
        conn.request('GET', '/nohls/test.flv')
        self.assertEqual(conn.getresponse().status, 200)
        conn.close()

    def test_old_segment_expires(self):
        # Segment 0 leaves the playlist at about (WINDOW + 1) fragments and stays fetchable for
        # its duration plus the playlist's (RFC 8216 §6.2.2), then answers 404.
        pl = self.playlist(1)
        first = pl.segments[0]['seq']
        gone = wait_until(lambda: request(self.port(), 'GET', '/live/test/%d.ts' % first)[0] == 404,
                          timeout=(3 * WINDOW + 6) * FRAGMENT_S + 5, interval=0.25)
        self.assertTrue(gone, 'segment %d never expired' % first)
        pl = get_playlist(self.port())
        self.assertGreater(pl.media_sequence, first)
        # The one that left the playlist last is still there.
        status, _, _ = request(self.port(), 'GET', '/live/test/%d.ts' % (pl.media_sequence - 1))
        self.assertEqual(status, 200)

    def test_200_concurrent_clients_fetch_every_segment(self):
        self.playlist(2)
        clients, seconds = 200, 5.0
        errors, fetched, lock = [], [], threading.Lock()
        start = threading.Barrier(clients)

        def client(i):
            conn = http.client.HTTPConnection(HOST, self.port(), timeout=20)
            got = set()
            try:
                start.wait(30)
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    conn.request('GET', '/live/test.m3u8')
                    r = conn.getresponse()
                    body = r.read()
                    if r.status != 200:
                        raise AssertionError('playlist %d' % r.status)
                    pl = Playlist(body.decode())
                    for s in pl.segments:
                        if s['seq'] in got:
                            continue
                        conn.request('GET', '/live/' + s['uri'])
                        r = conn.getresponse()
                        data = r.read()
                        if r.status != 200:
                            raise AssertionError('segment %d listed, then %d' % (s['seq'], r.status))
                        if len(data) % 188 or data[:1] != b'\x47':
                            raise AssertionError('segment %d: bad TS (%d bytes)' % (s['seq'], len(data)))
                        got.add(s['seq'])
                    time.sleep(FRAGMENT_S / 2)
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                with lock:
                    errors.append('client %d: %r' % (i, e))
            finally:
                conn.close()
                with lock:
                    fetched.append(len(got))

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [], '%d errors, first: %s' % (len(errors), errors[:3]))
        self.assertEqual(len(fetched), clients)
        self.assertGreaterEqual(min(fetched), WINDOW, 'a client fetched only %d segments' % min(fetched))


@need('ffmpeg')
class HlsRepublishTest(unittest.TestCase):
    def test_republish_continues_media_sequence_with_discontinuity(self):
        media = make_gop1_media()
        with Rill(hls_config()) as rill:
            port = rill.http_port
            pub = rilltest.ffmpeg_publish(rill.rtmp_url('test'), media)
            self.addCleanup(stop, pub)
            pl = wait_until(lambda: (lambda p: p if p and len(p.segments) >= 3 else None)(get_playlist(port)), 15)
            self.assertTrue(pl, rill.log_tail())
            self.assertNotIn('#EXT-X-DISCONTINUITY\n', pl.text)
            offset = rill.log_offset()
            stop(pub)
            self.assertTrue(rill.wait_for_log(r'publish stop: live/test', 10, since=offset))
            # The publisher left: the playlist ends but stays (grace) and its segments too.
            ended = wait_until(lambda: (lambda p: p if p and p.ended else None)(get_playlist(port)), 5)
            self.assertTrue(ended, 'no ENDLIST after the publisher left')
            last_seq = ended.segments[-1]['seq']
            self.assertEqual(request(port, 'GET', '/live/test/%d.ts' % last_seq)[0], 200)

            pub2 = rilltest.ffmpeg_publish(rill.rtmp_url('test'), media)
            self.addCleanup(stop, pub2)

            def resumed():
                p = get_playlist(port)
                return p if p and not p.ended and p.segments[-1]['seq'] > last_seq + 1 else None

            pl2 = wait_until(resumed, 15)
            self.assertTrue(pl2, 'no new segments after the republish\n' + rill.log_tail())
            self.assertGreaterEqual(pl2.media_sequence, ended.media_sequence)
            seqs = [s['seq'] for s in pl2.segments]
            self.assertEqual(seqs, sorted(seqs))
            new = [s for s in pl2.segments if s['seq'] > last_seq]
            self.assertTrue(new[0]['discontinuity'] or pl2.discontinuity_sequence > 0, pl2.text)
            if new[0]['seq'] == last_seq + 1:
                self.assertTrue(new[0]['discontinuity'], pl2.text)
            self.assertIn('#EXT-X-DISCONTINUITY', pl2.text)
            for s in new[1:]:
                self.assertFalse(s['discontinuity'], pl2.text)
            stop(pub2)


if __name__ == '__main__':
    unittest.main()
