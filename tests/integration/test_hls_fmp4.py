"""HLS with `container: fmp4` (docs/hls.md): fragmented MP4 segments (RFC 8216 §3.3) with an init
section named by EXT-X-MAP (§4.3.2.5), served by every worker (2 workers: the owner and one that
fetches from it over the worker link). ffprobe/ffmpeg must read init + segments without a
single warning.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls_fmp4
"""

import json
import os
import re
import sys
import tempfile
import unittest

import rilltest
from hlsutil import close_rill, Playlist, hls_config, make_gop1_media, request
from rilltest import Rill, require_tool, run, wait_until
from test_worker_link import owner_slot, stats

WORKERS = 2
KEY = 'live/test'
PLAYLIST = '/live/test.m3u8'


class HlsFmp4Test(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cfg = hls_config(container='fmp4')
        cfg['workers'] = WORKERS
        self.rill = Rill(cfg)
        self.addCleanup(lambda: close_rill(self, self.rill))
        self.rill.wait_workers(WORKERS)
        self.tmp = tempfile.mkdtemp(prefix='rill-fmp4-')


    def publish(self, extra_args=()):
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('test'), make_gop1_media(), extra_args=list(extra_args))
        self.addCleanup(rilltest.stop_process, pub)
        owner = wait_until(lambda: owner_slot(stats(self.rill), KEY), 15, 0.2)
        self.assertIsNotNone(owner, 'nobody owns %s\n%s' % (KEY, self.rill.log_tail()))
        return owner

    def get(self, path):
        status, headers, body = request(self.rill.http_port, 'GET', path)
        return status, headers, body, int(headers.get('x-rill-worker', -1))

    def playlist_with(self, n):
        """The playlist once it lists n segments."""
        found = []

        def ready():
            st, _, body, _ = self.get(PLAYLIST)
            if st == 200 and len(Playlist(body.decode()).segments) >= n:
                found.append(body.decode())
                return True
            return False
        self.assertTrue(wait_until(ready, 30, 0.2), 'no playlist with %d segments\n%s' % (n, self.rill.log_tail()))
        return found[-1]

    def fetch_all(self, text, owner):
        """init + segments of one playlist, each fetched until both workers served one; returns
        the concatenated bytes and the set of workers that answered."""
        m = re.search(r'#EXT-X-MAP:URI="([^"]+)"', text)
        self.assertIsNotNone(m, text)
        pl = Playlist(text)
        workers = set()
        blobs = []
        for uri in [m.group(1)] + [s['uri'] for s in pl.segments]:
            bodies = set()
            for _ in range(6):  # SO_REUSEPORT spreads fresh connections over both workers
                st, h, body, w = self.get('/live/' + uri)
                self.assertEqual(st, 200, '%s from worker %d: %r' % (uri, w, body[:200]))
                self.assertEqual(h['content-type'], 'video/mp4')
                self.assertTrue(h['cache-control'].startswith('max-age='), h)
                if w != owner:
                    self.assertEqual(int(h['x-rill-hls-owner']), owner)
                workers.add(w)
                bodies.add(body)
            self.assertEqual(len(bodies), 1, '%s differs between workers' % uri)
            blobs.append(bodies.pop())
        return b''.join(blobs), workers

    def check_decodes(self, data, want_streams):
        path = os.path.join(self.tmp, 'stream.mp4')
        with open(path, 'wb') as f:
            f.write(data)
        probe = run(['ffprobe', '-v', 'warning', '-print_format', 'json', '-show_streams', path], timeout=60)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        self.assertEqual(probe.stderr.strip(), '', 'ffprobe warned:\n' + probe.stderr)
        codecs = sorted(s['codec_name'] for s in json.loads(probe.stdout)['streams'])
        self.assertEqual(codecs, want_streams)
        dec = run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'warning', '-i', path, '-f', 'null', '-'], timeout=120)
        self.assertEqual(dec.returncode, 0, dec.stderr)
        self.assertEqual(dec.stderr.strip(), '', 'ffmpeg warned while decoding:\n' + dec.stderr)

    def test_fmp4_stream_reads_without_warnings_from_both_workers(self):
        owner = self.publish()
        text = self.playlist_with(3)
        self.assertIn('#EXT-X-VERSION:6', text)  # EXT-X-MAP (RFC 8216 §7)
        self.assertEqual(text.count('#EXT-X-MAP:'), 1, text)
        pl = Playlist(text)
        self.assertTrue(all(s['uri'].endswith('.m4s') for s in pl.segments), text)
        data, workers = self.fetch_all(text, owner)
        self.assertEqual(workers, set(range(WORKERS)), 'not every worker answered')
        self.check_decodes(data, ['aac', 'h264'])
        # The other container's name of a segment does not exist.
        seq = pl.segments[-1]['seq']
        st, _, _, _ = self.get('/live/test/%d.ts' % seq)
        self.assertEqual(st, 404)

    def test_video_only_fmp4(self):
        owner = self.publish(['-an'])
        text = self.playlist_with(2)
        data, _ = self.fetch_all(text, owner)
        self.check_decodes(data, ['h264'])


if __name__ == '__main__':
    unittest.main()
