"""HLS across workers (docs/hls.md "Workers", docs/workers.md): the owner of a stream produces its
HLS once; every worker answers HLS requests with the owner's playlist and byte-identical
segments (fetched over the owner's relay socket, segments cached). Which worker answered a
request is in its X-Rill-Worker header; a non-owner adds X-Rill-Hls-Owner.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls_workers
"""

import hashlib
import os
import signal
import socket
import sys
import threading
import time
import unittest

import hlsutil
import rilltest
from hlsutil import close_rill, Playlist, hls_config, make_gop1_media, request
from rilltest import Rill, require_tool, wait_until
from test_worker_link import owner_slot, stats, worker

WORKERS = 4
KEY = 'live/test'
PLAYLIST = '/live/test.m3u8'


class HlsAcrossWorkersTest(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        self.media = make_gop1_media()
        cfg = hls_config()
        cfg['workers'] = WORKERS
        self.rill = Rill(cfg)
        self.addCleanup(lambda: close_rill(self, self.rill))
        self.rill.wait_workers(WORKERS)
        self.pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('test'), self.media)
        self.addCleanup(rilltest.stop_process, self.pub)
        self.owner = wait_until(lambda: owner_slot(stats(self.rill), KEY), 15, 0.2)
        self.assertIsNotNone(self.owner, 'nobody owns %s\n%s' % (KEY, self.rill.log_tail()))


    def get(self, path, timeout=10):
        """(status, headers, body, worker slot) of one request on a fresh TCP connection."""
        status, headers, body = request(self.rill.http_port, 'GET', path, timeout=timeout)
        return status, headers, body, int(headers.get('x-rill-worker', -1))

    def wait_segments(self, n):
        def ready():
            st, _, body, _ = self.get(PLAYLIST)
            return st == 200 and len(Playlist(body.decode()).segments) >= n
        self.assertTrue(wait_until(ready, 20, 0.1), 'no playlist with %d segments\n%s' % (n, self.rill.log_tail()))

    def test_every_worker_serves_the_owners_playlist_and_identical_segments(self):
        self.wait_segments(3)
        last_seq = -1
        hashes = {}      # segment uri -> {sha256}
        served_by = {}   # segment uri -> {worker}
        workers_seen = set()
        for _ in range(20):
            st, h, body, w = self.get(PLAYLIST)
            self.assertEqual(st, 200, body)
            self.assertEqual(h['content-type'], 'application/vnd.apple.mpegurl')
            self.assertEqual(h['cache-control'], hlsutil.playlist_cache_control(body))
            workers_seen.add(w)
            if w != self.owner:
                self.assertEqual(int(h['x-rill-hls-owner']), self.owner)
            pl = Playlist(body.decode())
            self.assertGreaterEqual(pl.media_sequence, last_seq, 'media sequence went backwards (worker %d)' % w)
            last_seq = pl.media_sequence
            for seg in pl.segments:
                st, sh, data, sw = self.get('/live/' + seg['uri'])
                self.assertEqual(st, 200, '%s from worker %d: %r' % (seg['uri'], sw, data[:200]))
                self.assertEqual(sh['content-type'], 'video/mp2t')
                self.assertTrue(sh['cache-control'].startswith('max-age='), sh)
                self.assertEqual(int(sh['content-length']), len(data))
                self.assertEqual(len(data) % 188, 0)
                hashes.setdefault(seg['uri'], set()).add(hashlib.sha256(data).hexdigest())
                served_by.setdefault(seg['uri'], set()).add(sw)
                workers_seen.add(sw)
            time.sleep(0.3)
        self.assertGreater(len(hashes), 3, 'the playlist did not move on during the test')
        differing = {u: hs for u, hs in hashes.items() if len(hs) != 1}
        self.assertFalse(differing, 'segments differ between workers: %s' % differing)
        self.assertGreater(len(workers_seen - {self.owner}), 0, 'no request reached a non-owner worker')
        self.assertTrue(any(len(ws) > 1 for ws in served_by.values()), 'no segment served by two workers')
        # Caching: a non-owner asks the owner for each segment about once, not once per client
        # (a segment fetched early, when the playlist was short, has a shorter max-age and may
        # expire from the cache while still listed: a few refetches are allowed).
        hits = 0
        for w in stats(self.rill)['workers']:
            if w['slot'] == self.owner:
                continue
            f = w['hls_fetch']
            hits += f['cache_hits']
            self.assertLessEqual(f['segment_requests'], len(hashes) + 3, (w['slot'], f))
            self.assertLessEqual(f['cache_bytes'], f['cache_max_bytes'])
        self.assertGreater(hits, 0)

    def test_concurrent_clients_of_one_segment_share_one_fetch(self):
        self.wait_segments(3)
        st, _, body, _ = self.get(PLAYLIST)
        uri = '/live/' + Playlist(body.decode()).segments[-1]['uri']
        results = []
        lock = threading.Lock()

        def fetch():
            r = self.get(uri)
            with lock:
                results.append(r)
        threads = [threading.Thread(target=fetch) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        self.assertEqual(len(results), 40)
        self.assertEqual({r[0] for r in results}, {200})
        self.assertEqual(len({hashlib.sha256(r[2]).hexdigest() for r in results}), 1)
        for w in stats(self.rill)['workers']:
            if w['slot'] != self.owner:
                self.assertLessEqual(w['hls_fetch']['segment_requests'], 1, (w['slot'], w['hls_fetch']))

    def test_unknown_stream_and_expired_segment_are_404_on_every_worker(self):
        self.wait_segments(1)
        for _ in range(12):
            st, _, body, w = self.get('/live/nope.m3u8')
            self.assertEqual(st, 404, (w, body))
            st, _, body, w = self.get('/live/test/999999.ts')
            self.assertEqual(st, 404, (w, body))
            self.assertIn(b'999999', body)

    def test_clients_that_go_away_and_a_stopped_owner(self):
        self.wait_segments(2)
        st, _, body, _ = self.get(PLAYLIST)
        uri = '/live/' + Playlist(body.decode()).segments[-1]['uri']
        # Clients that close right after sending their request (while a non-owner fetches).
        for i in range(60):
            with socket.create_connection((rilltest.HOST, self.rill.http_port)) as s:
                path = PLAYLIST if i % 2 else uri
                s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % path).encode())
        st, _, _, _ = self.get(PLAYLIST)
        self.assertEqual(st, 200)
        # An owner that does not answer: non-owners give 503 after the fetch timeout (2 s).
        owner_pid = next(w['pid'] for w in stats(self.rill)['workers'] if w['slot'] == self.owner)
        os.kill(owner_pid, signal.SIGSTOP)
        try:
            got = None
            for _ in range(12):
                t0 = time.monotonic()
                try:
                    st, h, body, w = self.get(PLAYLIST, timeout=4)
                except (socket.timeout, OSError):
                    continue  # landed on the stopped owner
                got = (st, h, body, w, time.monotonic() - t0)
                break
            self.assertIsNotNone(got, 'every request landed on the stopped owner')
            st, h, body, w, took = got
            self.assertEqual(st, 503, body)
            self.assertEqual(h.get('retry-after'), '1')
            self.assertIn(b'did not answer', body)
            self.assertGreater(took, 1.5)
            self.assertLess(took, 3.5)
        finally:
            os.kill(owner_pid, signal.SIGCONT)
        self.assertTrue(wait_until(lambda: self.get(PLAYLIST)[0] == 200, 10, 0.2))


if __name__ == '__main__':
    unittest.main()
