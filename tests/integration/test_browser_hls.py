"""A real browser plays Rill's HLS: headless Chromium (Debian's /usr/bin/chromium, driven by
tests/browser/play.js through playwright-core) loads a page that plays
http://127.0.0.1:HTTPPORT/live/test.m3u8 with hls.js. The page comes from ANOTHER origin (a
Python http.server on another port), so the playlist and segment responses must carry CORS.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_browser_hls
"""

import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import unittest

import rilltest
from browserutil import play_page
from hlsutil import get_playlist, hls_config, make_gop1_media
from rilltest import Rill, wait_until

BROWSER_DIR = os.path.join(rilltest.SOURCE_DIR, 'tests', 'browser')
CHROMIUM = '/usr/bin/chromium'
HLS_JS = os.path.join(BROWSER_DIR, 'node_modules', 'hls.js', 'dist', 'hls.min.js')
PLAYWRIGHT = os.path.join(BROWSER_DIR, 'node_modules', 'playwright-core')
PLAY_JS = os.path.join(BROWSER_DIR, 'play.js')
SECONDS = 12

# The page's start: a <video>, hls.js, and log() into window.__log (read back by play.js).
PAGE_HEAD = """<!doctype html>
<html><head><meta charset="utf-8"><title>rill hls</title></head>
<body>
<video id="v" muted autoplay playsinline></video>
<script src="hls.min.js"></script>
<script>
window.__log = [];
const log = (m) => { if (window.__log.length < 200) window.__log.push(String(m)); };
const v = document.getElementById('v');
v.addEventListener('error', () => log('video error ' + (v.error && v.error.code)));
"""

PAGE = PAGE_HEAD + """if (!window.Hls || !Hls.isSupported()) {
  log('hls.js not supported here');
} else {
  const hls = new Hls(%(hls_config)s);
  window.__hls = hls;
  setInterval(() => { if (hls.latency > 0) log('latency ' + hls.latency.toFixed(3)); }, 1000);
  hls.on(Hls.Events.MANIFEST_PARSED, (e, d) => { log('manifest: ' + d.levels.length + ' level(s)');
                                                 v.play().catch((err) => log('play(): ' + err)); });
  hls.on(Hls.Events.FRAG_LOADED, (e, d) => log('fragment ' + d.frag.sn));
  hls.on(Hls.Events.ERROR, (e, d) => log('error ' + d.type + ' ' + d.details + (d.fatal ? ' FATAL' : '')));
  hls.loadSource(%(src)s);
  hls.attachMedia(v);
}
</script>
</body></html>
"""


def _missing():
    missing = []
    if not os.path.exists(CHROMIUM):
        missing.append(CHROMIUM)
    if not shutil.which('node'):
        missing.append('node')
    for p in (HLS_JS, PLAYWRIGHT):
        if not os.path.exists(p):
            missing.append(os.path.relpath(p, rilltest.SOURCE_DIR) + ' (npm install in tests/browser)')
    if not shutil.which('ffmpeg'):
        missing.append('ffmpeg')
    return missing


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@unittest.skipIf(_missing(), 'missing: %s' % ', '.join(_missing()))
class BrowserHlsTest(unittest.TestCase):
    def serve_page(self, src, hls_js_config=None, page=PAGE):
        """Serves index.html (`page`) + hls.min.js from a temp dir on another 127.0.0.1 port; returns the URL."""
        d = tempfile.mkdtemp(prefix='rill-page-')
        self.addCleanup(shutil.rmtree, d, True)
        shutil.copy(HLS_JS, os.path.join(d, 'hls.min.js'))
        with open(os.path.join(d, 'index.html'), 'w') as f:
            f.write(page % {'src': json.dumps(src), 'hls_config': json.dumps(hls_js_config or {})})
        server = http.server.ThreadingHTTPServer((rilltest.HOST, 0), functools.partial(_QuietHandler, directory=d))
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return 'http://%s:%d/index.html' % (rilltest.HOST, server.server_address[1])

    def test_chromium_plays_hls_with_hlsjs(self):
        self.play(hls_config())

    def test_chromium_plays_fmp4_hls(self):
        self.play(hls_config(container='fmp4'))

    def test_chromium_plays_low_latency_hls(self):
        # 1 s GOP, 200 ms parts, 2 workers (the page's requests may reach either; the one that
        # does not own the stream waits on the owner through the worker link).
        cfg = hls_config(low_latency=True, part='200ms')
        cfg['workers'] = 2
        out = self.play(cfg, {'lowLatencyMode': True})
        latencies = [float(l.split()[1]) for l in out['log'] if l.startswith('latency ')]
        self.assertTrue(latencies, 'hls.js reported no latency: %s' % out['log'][-20:])
        settled = latencies[len(latencies) // 2:]
        sys.stderr.write('\nhls.js latency (lowLatencyMode, 200 ms parts, 1 s GOP): %s s\n'
                         % ', '.join('%.2f' % l for l in latencies))
        # Goal <= 2 s on loopback; asserted with room for this loaded machine.
        self.assertLess(min(settled), 4.0, latencies)

    def play(self, cfg, hls_js_config=None):
        """Plays /live/test.m3u8 of a Rill with `cfg` for SECONDS; checks it played; returns
        play.js's output."""
        media = make_gop1_media()
        with Rill(cfg) as rill:
            pub = rilltest.ffmpeg_publish(rill.rtmp_url('test'), media)
            self.addCleanup(rilltest.stop_process, pub)
            ready = wait_until(lambda: (lambda p: p if p and len(p.segments) >= 3 else None)(
                get_playlist(rill.http_port)), 15)
            self.assertTrue(ready, 'no playlist with 3 segments\n' + rill.log_tail())
            src = rill.http_url('/live/test.m3u8')
            page = self.serve_page(src, hls_js_config)
            self.assertNotEqual(page.split('/')[2], src.split('/')[2], 'the page must be cross-origin')

            out, diag = play_page(self, page, SECONDS)
            samples = out['samples']
            self.assertEqual(len(samples), SECONDS, diag)
            frames = max(s.get('totalVideoFrames', 0) for s in samples)
            self.assertGreater(frames, 0, 'no video frame decoded\n' + diag)
            times = [s.get('currentTime', 0) for s in samples]
            self.assertGreaterEqual(max(times) - min(times), 5.0, 'currentTime did not advance 5 s\n' + diag)
            self.assertFalse([s for s in samples if s.get('error')], diag)
            self.assertFalse([l for l in out['log'] if 'FATAL' in l], diag)
            # Every request of the page went to rill cross-origin: the access log would show 404s
            # or CORS failures as console errors.
            self.assertFalse([c for c in out['console'] if 'CORS' in c or 'Access-Control' in c], diag)
            return out


if __name__ == '__main__':
    unittest.main()
