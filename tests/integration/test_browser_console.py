"""The web console (/console/ on api.listen) in a real browser: headless Chromium (Debian's
/usr/bin/chromium, driven by tests/browser/play.js through playwright-core) opens the console of a
2-worker Rill with an API token and 2 published streams. Within 5 s the page lists both stream
names, its chart has points, and its embedded hls.js player (served by Rill from the binary,
playing from http.listen) advances the video's currentTime.

The page pushes one entry per refresh into window.__log: {t (ms since load), streams, chartPoints}.
"""

import json
import os
import shutil
import unittest

import rilltest
from browserutil import CHROMIUM, PLAYWRIGHT, play_page
from hlsutil import hls_config, make_gop1_media
from rilltest import Rill, wait_until

SECONDS = 12
TOKEN = 'console-token-42'


def _missing():
    missing = [p for p in (CHROMIUM,) if not os.path.exists(p)]
    missing += [t for t in ('node', 'ffmpeg') if not shutil.which(t)]
    if not os.path.exists(PLAYWRIGHT):
        missing.append('tests/browser/node_modules/playwright-core (npm install in tests/browser)')
    return missing


@unittest.skipIf(_missing(), 'missing: %s' % ', '.join(_missing()))
class BrowserConsoleTest(unittest.TestCase):

    def test_console_lists_streams_charts_and_plays(self):
        media = make_gop1_media()
        config = hls_config()
        config.update({'workers': 2, 'api': {'token': TOKEN}})
        with Rill(config) as rill:
            for name in ('cam1', 'cam2'):
                pub = rilltest.ffmpeg_publish(rill.rtmp_url(name), media)
                self.addCleanup(rilltest.stop_process, pub)

            def ready():
                st, _, body = rilltest.http_get(rill.api_url('/api/v1/streams'),
                                                headers={'Authorization': 'Bearer ' + TOKEN})
                items = json.loads(body)['items'] if st == 200 else []
                return len(items) == 2 and all(i['hls']['segments'] >= 3 for i in items)
            self.assertTrue(wait_until(ready, 20, 0.5), 'streams not ready\n' + rill.log_tail())

            page = rill.api_url('/console/#token=%s&play=live/cam1&proto=hls' % TOKEN)
            out, diag = play_page(self, page, SECONDS)
            self.assertFalse(out['pageErrors'], diag)
            refreshes = [e for e in out['log'] if isinstance(e, dict) and 'streams' in e]
            both = [e for e in refreshes if {'live/cam1', 'live/cam2'} <= set(e['streams'])]
            self.assertTrue(both, 'the console never listed both streams\n' + diag)
            self.assertLessEqual(both[0]['t'], 5000, 'both streams listed only after 5 s\n' + diag)
            self.assertGreater(max(e['chartPoints'] for e in refreshes), 2, 'the chart has no points\n' + diag)
            times = [s.get('currentTime', 0) for s in out['samples']]
            self.assertGreaterEqual(max(times) - min(times), 3.0, 'the player did not play\n' + diag)


if __name__ == '__main__':
    unittest.main()
