"""hls.js in headless Chromium plays a token-protected HLS stream (docs/security.md): the page is
given only the playlist URL with its token; every segment request must carry the token the
playlist passed on to its URIs, or Rill answers 403 and playback fails. Uses the page server and
the driver of test_browser_hls.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_browser_hls_auth
"""

import json
import unittest

import rilltest
import test_browser_hls as browser
from hlsutil import Playlist, hls_config, make_gop1_media
from rilltest import Rill, wait_until

SECONDS = 8
SECRET = 'browser-s3cret'


def token(action, stream):
    res = rilltest.rill_cli('token', '--secret', SECRET, '--' + action, 'live/' + stream, '--ttl', '10m')
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@unittest.skipIf(browser._missing(), 'missing: %s' % ', '.join(browser._missing()))
class BrowserHlsTokenTest(unittest.TestCase):
    serve_page = browser.BrowserHlsTest.serve_page

    def test_hlsjs_plays_a_token_protected_stream(self):
        cfg = hls_config()
        cfg['apps']['live']['auth'] = {'secret': SECRET, 'publish': 'token', 'play': 'token'}
        with Rill(cfg) as rill:
            pub = rilltest.ffmpeg_publish(rill.rtmp_url('test?' + token('publish', 'test')), make_gop1_media())
            self.addCleanup(rilltest.stop_process, pub)
            src = rill.http_url('/live/test.m3u8?' + token('play', 'test'))

            def playlist():
                status, _, body = rilltest.http_get(src)  # 404 until the first segment exists
                pl = Playlist(body.decode()) if status == 200 else None
                return pl if pl and len(pl.segments) >= 3 else None
            self.assertTrue(wait_until(playlist, 20), 'no playlist with 3 segments\n' + rill.log_tail())
            offset = rill.log_offset()
            r = rilltest.run(['node', browser.PLAY_JS, self.serve_page(src), str(SECONDS), browser.CHROMIUM],
                             timeout=SECONDS + 90, cwd=browser.BROWSER_DIR)
            try:
                out = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                self.fail('play.js printed no JSON (exit %d)\nstdout: %s\nstderr: %s' % (
                    r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
            diag = json.dumps({k: out.get(k) for k in ('samples', 'log', 'console', 'pageErrors')}, indent=1)[:6000]
            self.assertEqual(r.returncode, 0, diag)
            frames = max(s.get('totalVideoFrames', 0) for s in out['samples'])
            self.assertGreater(frames, 0, 'no video frame decoded\n' + diag)
            times = [s.get('currentTime', 0) for s in out['samples']]
            self.assertGreaterEqual(max(times) - min(times), 3.0, diag)
            self.assertFalse([l for l in out['log'] if 'FATAL' in l], diag)
            self.assertGreater(sum('fragment' in l for l in out['log']), 2, diag)
            # Nothing hls.js asked for was refused.
            self.assertNotIn('refused by token', rill.log_since(offset))


if __name__ == '__main__':
    unittest.main()
