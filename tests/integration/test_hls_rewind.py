"""Live rewind (apps.NAME.hls.rewind, docs/hls.md "Rewind") with the real daemon, 2 workers:
ffmpeg publishes in real time (1 s GOP) to an app with 1 s fMP4 segments, a 3-segment in-memory
window, rewind 20 s and an fMP4 recording. The live playlist then starts with byte ranges of the
recording file (being written) under /recordings/..., then the in-memory segments, with
consecutive sequence numbers that keep their URIs across reloads; every recorded range answers
206 with a moof first; ffmpeg decodes the playlist from its oldest segment without an error; the
non-owner worker serves the same playlist; and hls.js in headless Chromium seeks back into the
recorded part, plays it, and returns to the live edge.

RILL_REWIND_LONG=1: rewind 2 min, and the browser seeks 60 s back (a run of about 80 s).

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_hls_rewind
"""

import functools
import http.server
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import unittest

import rilltest
from browserutil import CHROMIUM, play_page
from hlsutil import make_gop1_media, request
from rilltest import Rill, wait_until

LONG = os.environ.get('RILL_REWIND_LONG') == '1'
REWIND_S = 120 if LONG else 20
BACK_S = 60 if LONG else 6           # how far the browser seeks back
RECORDED_S = BACK_S + 3              # recorded seconds the playlist holds before the checks
HLS_JS = os.path.join(rilltest.SOURCE_DIR, 'tests', 'browser', 'node_modules', 'hls.js', 'dist', 'hls.min.js')

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rill rewind</title></head>
<body>
<video id="v" muted autoplay playsinline></video>
<script src="hls.min.js"></script>
<script>
window.__log = [];
const log = (m) => { if (window.__log.length < 400) window.__log.push(String(m)); };
const v = document.getElementById('v');
const t0 = Date.now();
const at = () => ((Date.now() - t0) / 1000).toFixed(1);
const hls = new Hls({liveDurationInfinity: true});
hls.on(Hls.Events.MANIFEST_PARSED, () => v.play().catch((err) => log('play(): ' + err)));
hls.on(Hls.Events.FRAG_LOADED, (e, d) => log('fragment ' + d.frag.sn + ' ' + d.frag.url.split('?')[0]));
hls.on(Hls.Events.ERROR, (e, d) => log('error ' + d.type + ' ' + d.details + (d.fatal ? ' FATAL' : '')));
hls.loadSource(%(src)s);
hls.attachMedia(v);
// Once playing: seek BACK s behind the live edge, play there, then return to the live edge.
let phase = 'live';
setInterval(() => {
  const edge = hls.liveSyncPosition || 0;
  log('tick ' + at() + ' ' + phase + ' t=' + v.currentTime.toFixed(2) + ' edge=' + edge.toFixed(2));
  if (phase === 'live' && v.currentTime > 1) {
    phase = 'back';
    window.__seekTo = Math.max(0, edge - %(back)d);
    log('seek back to ' + window.__seekTo.toFixed(2));
    v.currentTime = window.__seekTo;
    window.__backAt = Date.now();
  } else if (phase === 'back' && Date.now() - window.__backAt > %(stay_ms)d) {
    phase = 'return';
    log('return to ' + edge.toFixed(2));
    v.currentTime = edge;
  }
}, 250);
</script>
</body></html>
"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def parse(text):
    """(media sequence, [(seq, uri, byterange or None)]) of a media playlist."""
    m = re.search(r'#EXT-X-MEDIA-SEQUENCE:(\d+)', text)
    seq = int(m.group(1))
    out, rng = [], None
    for line in text.splitlines():
        if line.startswith('#EXT-X-BYTERANGE:'):
            n, at = line.split(':', 1)[1].split('@')
            rng = (int(at), int(n))
        elif line and not line.startswith('#'):
            out.append((seq, line, rng))
            seq, rng = seq + 1, None
    return int(m.group(1)), out


def recorded_part(text):
    return [s for s in parse(text)[1] if s[2] is not None]


class HlsRewindTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rilltest.require_tool('ffmpeg')
        cls.dir = tempfile.mkdtemp(prefix='rill-rewind-')
        cls.rill = Rill({'workers': 2, 'apps': {'live': {
            'hls': {'enabled': True, 'fragment': '1s', 'window': 3, 'container': 'fmp4', 'rewind': '%ds' % REWIND_S},
            'record': {'mode': 'all', 'flush': '500ms', 'path': os.path.join(cls.dir, '{app}', '{name}-{start:%H-%M-%S}')}}}})
        cls.started = time.monotonic()
        try:
            cls.pub = rilltest.ffmpeg_publish(cls.rill.rtmp_url('cam'), make_gop1_media())
            cls.text = ''

            def enough():
                st, _, body = request(cls.rill.http_port, 'GET', '/live/cam.m3u8')
                cls.text = body.decode() if st == 200 else ''
                return st == 200 and len(recorded_part(cls.text)) >= RECORDED_S
            if not wait_until(enough, RECORDED_S + 15, 0.25):
                raise AssertionError('no playlist with %d recorded segments:\n%s\n%s'
                                     % (RECORDED_S, cls.text, cls.rill.log_tail()))
        except BaseException:
            cls.rill.close()
            raise

    @classmethod
    def tearDownClass(cls):
        rilltest.stop_process(cls.pub)
        cls.rill.close()
        shutil.rmtree(cls.dir, True)
        sys.stderr.write('\ntest_hls_rewind: %.1f s\n' % (time.monotonic() - cls.started))

    def playlist(self):
        st, headers, body = request(self.rill.http_port, 'GET', '/live/cam.m3u8')
        self.assertEqual(st, 200)
        return body.decode(), headers

    def test_playlist_recorded_then_live_with_stable_sequence_numbers(self):
        text, _ = self.playlist()
        first, segs = parse(text)
        rec = recorded_part(text)
        self.assertGreaterEqual(len(rec), RECORDED_S, text)
        self.assertEqual(segs[:len(rec)], rec, 'the recorded part comes first\n' + text)
        self.assertTrue(all(s[1].startswith('/recordings/') for s in rec), text)
        self.assertTrue(all(s[1].endswith('.m4s') for s in segs[len(rec):]), text)
        self.assertEqual(text.count('#EXT-X-MAP'), 1, text)
        self.assertNotIn('#EXT-X-DISCONTINUITY', text)
        self.assertNotIn('PLAYLIST-TYPE', text)
        seen = {s[0]: s for s in segs}
        for _ in range(3):
            time.sleep(1.0)
            text2, _ = self.playlist()
            first2, segs2 = parse(text2)
            self.assertGreaterEqual(first2, first)
            for s in segs2:
                if s[0] in seen and seen[s[0]][2] is not None:
                    self.assertEqual(s, seen[s[0]], 'segment %d changed\n%s\n%s' % (s[0], text, text2))
                if s[2] is not None or s[0] not in seen:
                    seen[s[0]] = s
            first = first2

    def test_recorded_ranges_are_206_with_a_moof_first(self):
        text, _ = self.playlist()
        rec = recorded_part(text)
        self.assertTrue(rec)
        for seq, uri, (at, n) in rec:
            st, headers, body = request(self.rill.http_port, 'GET', uri,
                                        headers={'Range': 'bytes=%d-%d' % (at, at + n - 1)})
            self.assertEqual(st, 206, (seq, uri, body[:200]))
            self.assertEqual(len(body), n)
            self.assertEqual(body[4:8], b'moof', (seq, at, n))
        # The file as a whole is not done yet: 409; a range past what is written: 416.
        self.assertEqual(request(self.rill.http_port, 'GET', rec[0][1])[0], 409)
        self.assertEqual(request(self.rill.http_port, 'GET', rec[0][1],
                                 headers={'Range': 'bytes=%d-' % (1 << 40)})[0], 416)

    def test_ffmpeg_decodes_from_the_oldest_segment(self):
        p = rilltest.run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'error', '-live_start_index', '0',
                          '-i', self.rill.http_url('/live/cam.m3u8'), '-t', '6', '-f', 'null', '-'], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.strip(), '', p.stderr)

    def test_non_owner_serves_the_same_playlist(self):
        answers = {}
        for _ in range(40):
            st, headers, body = request(self.rill.http_port, 'GET', '/live/cam.m3u8')
            self.assertEqual(st, 200)
            answers.setdefault('x-rill-hls-owner' in headers, body.decode())
            if len(answers) == 2:
                break
        self.assertEqual(len(answers), 2, 'one worker answered every request')
        owner, other = recorded_part(answers[False]), recorded_part(answers[True])
        self.assertGreaterEqual(len(other), RECORDED_S, answers[True])
        common = {s[0] for s in owner} & {s[0] for s in other}
        self.assertTrue(common)
        self.assertEqual([s for s in owner if s[0] in common], [s for s in other if s[0] in common])

    @unittest.skipIf(not os.path.exists(CHROMIUM) or not os.path.exists(HLS_JS) or not shutil.which('node'),
                     'needs chromium, node and tests/browser/node_modules')
    def test_hlsjs_seeks_back_and_returns_to_live(self):
        d = tempfile.mkdtemp(prefix='rill-page-')
        self.addCleanup(shutil.rmtree, d, True)
        shutil.copy(HLS_JS, os.path.join(d, 'hls.min.js'))
        stay_ms = 3000
        with open(os.path.join(d, 'index.html'), 'w') as f:
            f.write(PAGE % {'src': json.dumps(self.rill.http_url('/live/cam.m3u8')), 'back': BACK_S,
                            'stay_ms': stay_ms})
        server = http.server.ThreadingHTTPServer((rilltest.HOST, 0), functools.partial(_QuietHandler, directory=d))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        out, diag = play_page(self, 'http://%s:%d/index.html' % (rilltest.HOST, server.server_address[1]), 9)
        log = out['log']
        self.assertFalse([l for l in log if 'FATAL' in l], diag)
        ticks = [re.match(r'tick (\S+) (\w+) t=(\S+) edge=(\S+)', l) for l in log if l.startswith('tick ')]
        ticks = [(float(m.group(1)), m.group(2), float(m.group(3)), float(m.group(4))) for m in ticks if m]
        back = [t for t in ticks if t[1] == 'back']
        ret = [t for t in ticks if t[1] == 'return']
        self.assertTrue(back and ret, diag)
        # Played from the recording: fragments from /recordings/ were loaded after the seek.
        seek_at = log.index(next(l for l in log if l.startswith('seek back')))
        self.assertTrue([l for l in log[seek_at:] if l.startswith('fragment') and '/recordings/' in l], diag)
        # It played there: currentTime moved on from the seek target, with no stall over 1 s.
        self.assertGreater(back[-1][2] - back[0][2], 1.0, diag)
        self.assertLess(back[-1][2], back[-1][3] - BACK_S / 2, 'still behind the live edge\n' + diag)
        for a, b in zip(back[4:], back[8:]):  # each second after the seek settled (250 ms ticks)
            self.assertGreater(b[2], a[2], 'stalled between %.1f and %.1f s\n%s' % (a[0], b[0], diag))
        # Back at the live edge.
        self.assertLess(ret[-1][3] - ret[-1][2], 4.0, diag)
        self.assertGreater(ret[-1][2] - ret[0][2], 0.5, 'not playing at the live edge\n' + diag)
        sys.stderr.write('\nhls.js: seek back to %.2f (edge %.2f), played to %.2f; returned to %.2f (edge %.2f)\n'
                         % (back[0][2], back[0][3], back[-1][2], ret[-1][2], ret[-1][3]))


if __name__ == '__main__':
    unittest.main()
