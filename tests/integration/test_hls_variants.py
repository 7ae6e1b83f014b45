"""Rendition groups by name suffix (docs/abr.md): one ffmpeg encodes one lavfi source twice, to
live/cam_hi (640x360) and live/cam_lo (320x180), with keyframes forced every second, so the two
renditions share timestamps and keyframe times. Rill (2 workers, hls.variants _hi/_lo, play
tokens) must serve /live/cam.m3u8 as a multivariant playlist listing both with their CODECS,
RESOLUTION and a measured BANDWIDTH; cut both at the same media times with the same media
sequence numbers; admit the renditions' playlists and segments with the token signed for cam; and
hls.js in headless Chromium must play the group, switch level twice on command
(hls.currentLevel) and keep playing from the first switch on with no stall over 1 s.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls_variants
"""

import re
import subprocess
import sys
import tempfile
import unittest

import rilltest
import test_browser_hls as browser
from browserutil import play_page
from hlsutil import Playlist, hls_config
from rilltest import Rill, wait_until

SECRET = 'variants-s3cret'
FPS = 15  # light on the encoder: two x264 encodes in real time on a loaded CI machine
PLAY_SECONDS = 7

PAGE = browser.PAGE_HEAD + """const hls = new Hls(%(hls_config)s);
// The longest time currentTime stood still from the first forced switch on (an ongoing stall
// counts): what the switches cost.
let last = -1, lastChange = 0, maxStall = 0, started = false;
setInterval(() => {
  const now = performance.now();
  if (v.currentTime !== last) {
    if (started) maxStall = Math.max(maxStall, now - lastChange);
    started = started || forced > 0;
    last = v.currentTime;
    lastChange = now;
  }
}, 50);
setInterval(() => log('maxstall ' + Math.round(Math.max(maxStall, started ? performance.now() - lastChange : 0))), 1000);
let forced = 0;
const force = () => {
  // Levels are hls.js's order (by bandwidth); switch to the other one, twice.
  const to = hls.currentLevel === 0 ? 1 : 0;
  log('force ' + to);
  hls.currentLevel = to;
  if (++forced < 2) setTimeout(force, 2500);
};
v.addEventListener('playing', () => { if (!forced) setTimeout(force, 1000); }, { once: true });
hls.on(Hls.Events.MANIFEST_PARSED, (e, d) => {
  log('manifest ' + d.levels.map((l) => l.width + 'x' + l.height).join(' '));
  v.play().catch((err) => log('play(): ' + err));
});
hls.on(Hls.Events.LEVEL_SWITCHED, (e, d) => log('switched ' + d.level));
hls.on(Hls.Events.FRAG_LOADED, (e, d) => log('fragment ' + d.frag.level + ' ' + d.frag.sn));
hls.on(Hls.Events.ERROR, (e, d) => log('error ' + d.type + ' ' + d.details + (d.fatal ? ' FATAL' : '')));
hls.loadSource(%(src)s);
hls.attachMedia(v);
</script>
</body></html>
"""


def token(stream):
    res = rilltest.rill_cli('token', '--secret', SECRET, '--play', 'live/' + stream, '--ttl', '10m')
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def variants_of(text):
    """[(attributes dict, uri)] of a multivariant playlist's EXT-X-STREAM-INF entries."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('#EXT-X-STREAM-INF:'):
            attrs = dict(re.findall(r'([A-Z-]+)=("[^"]*"|[^,]*)', line.split(':', 1)[1]))
            out.append(({k: v.strip('"') for k, v in attrs.items()}, lines[i + 1]))
    return out


def encode_two_renditions(rill):
    """One ffmpeg, one source, two RTMP outputs with keyframes forced on every second."""
    rilltest.require_tool('ffmpeg')
    x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-pix_fmt', 'yuv420p',
            '-g', str(FPS), '-sc_threshold', '0', '-force_key_frames', 'expr:gte(t,n_forced*1)']
    aac = ['-c:a', 'aac', '-b:a', '64k']
    cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'warning', '-re',
           '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=%d' % FPS,
           '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100',
           '-filter_complex', '[0:v]split=2[hi][v2];[v2]scale=320:180[lo]',
           '-map', '[hi]', '-map', '1:a'] + x264 + ['-b:v', '900k'] + aac + ['-f', 'flv', rill.rtmp_url('cam_hi'),
           '-map', '[lo]', '-map', '1:a'] + x264 + ['-b:v', '250k'] + aac + ['-f', 'flv', rill.rtmp_url('cam_lo')]
    log = tempfile.NamedTemporaryFile(prefix='ffmpeg-variants-', suffix='.log', delete=False)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    rilltest._track(p)
    return p


class HlsVariantsTest(unittest.TestCase):
    def test_group_master_alignment_token_and_hlsjs_level_switches(self):
        cfg = hls_config(variants=[{'suffix': '_hi'}, {'suffix': '_lo'}])
        cfg['workers'] = 2
        cfg['apps']['live']['auth'] = {'secret': SECRET, 'publish': 'open', 'play': 'token'}
        with Rill(cfg) as rill:
            pub = encode_two_renditions(rill)
            self.addCleanup(rilltest.stop_process, pub)
            tok = token('cam')
            master_url = rill.http_url('/live/cam.m3u8?' + tok)

            def two_renditions():
                status, _, body = rilltest.http_get(master_url)
                v = variants_of(body.decode()) if status == 200 else []
                return v if len(v) == 2 else None
            variants = wait_until(two_renditions, 15)
            self.assertTrue(variants, 'no multivariant playlist with 2 renditions\n' + rill.log_tail())
            self.check_master(variants, tok)
            self.check_alignment(rill, tok)
            self.check_tokens(rill, tok)
            if browser._missing():
                sys.stderr.write('\nskipped the hls.js part: missing %s\n' % ', '.join(browser._missing()))
                return
            self.check_hlsjs(master_url)

    def check_master(self, variants, tok):
        by_uri = {uri.split('?')[0]: attrs for attrs, uri in variants}
        self.assertEqual(set(by_uri), {'cam_hi.m3u8', 'cam_lo.m3u8'}, variants)
        for attrs, uri in variants:
            self.assertTrue(uri.endswith('?' + tok), 'the token goes on to the renditions: %s' % uri)
            self.assertRegex(attrs['CODECS'], r'^avc1\.[0-9A-F]{6},mp4a\.40\.2$', attrs)
            self.assertGreater(int(attrs['BANDWIDTH']), 0, attrs)
            self.assertGreater(int(attrs['AVERAGE-BANDWIDTH']), 0, attrs)
            self.assertLessEqual(int(attrs['AVERAGE-BANDWIDTH']), int(attrs['BANDWIDTH']), attrs)
            self.assertAlmostEqual(float(attrs['FRAME-RATE']), FPS, delta=1.0)
        self.assertEqual(by_uri['cam_hi.m3u8']['RESOLUTION'], '640x360')
        self.assertEqual(by_uri['cam_lo.m3u8']['RESOLUTION'], '320x180')
        self.assertGreater(int(by_uri['cam_hi.m3u8']['AVERAGE-BANDWIDTH']),
                           int(by_uri['cam_lo.m3u8']['AVERAGE-BANDWIDTH']))

    def check_alignment(self, rill, tok):
        def playlists():
            out = []
            for name in ('cam_hi', 'cam_lo'):
                status, _, body = rilltest.http_get(rill.http_url('/live/%s.m3u8?%s' % (name, tok)))
                if status != 200:
                    return None
                out.append(Playlist(body.decode()))
            common = {s['seq'] for s in out[0].segments} & {s['seq'] for s in out[1].segments}
            return out if len(common) >= 3 else None
        both = wait_until(playlists, 10)
        self.assertTrue(both, 'the renditions do not list 3 common sequence numbers')
        hi, lo = ({s['seq']: s for s in p.segments} for p in both)
        self.assertEqual(both[0].discontinuity_sequence, both[1].discontinuity_sequence)
        self.assertLessEqual(abs(both[0].media_sequence - both[1].media_sequence), 1)
        for seq in sorted(set(hi) & set(lo)):
            # Equal cut points: durations equal within one frame (and EXTINF's 1 ms rounding).
            self.assertLessEqual(abs(hi[seq]['duration'] - lo[seq]['duration']), 1.0 / FPS + 0.002,
                                 'segment %d: %s vs %s' % (seq, hi[seq], lo[seq]))
        sys.stderr.write('\naligned segments (seq: hi/lo s): %s\n' % ', '.join(
            '%d: %.3f/%.3f' % (s, hi[s]['duration'], lo[s]['duration']) for s in sorted(set(hi) & set(lo))))

    def check_tokens(self, rill, tok):
        get = lambda path: rilltest.http_get(rill.http_url(path))[0]
        self.assertEqual(get('/live/cam.m3u8'), 403)
        self.assertEqual(get('/live/cam_hi.m3u8'), 403)
        self.assertEqual(get('/live/cam_hi.m3u8?' + token('other')), 403)
        status, _, body = rilltest.http_get(rill.http_url('/live/cam_lo.m3u8?' + tok))
        self.assertEqual(status, 200)
        segment = Playlist(body.decode()).segments[-1]['uri']
        self.assertIn(tok, segment)
        self.assertEqual(get('/live/' + segment), 200)
        self.assertEqual(get('/live/' + segment.split('?')[0]), 403)

    def check_hlsjs(self, master_url):
        page = browser.BrowserHlsTest.serve_page(self, master_url, {}, page=PAGE)
        out, diag = play_page(self, page, PLAY_SECONDS)
        log = out['log']
        self.assertTrue([l for l in log if l.startswith('manifest ') and len(l.split()) == 3], diag)
        self.assertEqual(len([l for l in log if l.startswith('force ')]), 2, diag)
        switched = [int(l.split()[1]) for l in log if l.startswith('switched ')]
        forced = [int(l.split()[1]) for l in log if l.startswith('force ')]
        for level in forced:
            self.assertIn(level, switched, 'hls.js did not switch to level %d\n%s' % (level, diag))
        frags = {l.split()[1] for l in log if l.startswith('fragment ')}
        self.assertEqual(frags, {'0', '1'}, 'fragments of both levels were played\n' + diag)
        self.assertFalse([l for l in log if 'FATAL' in l], diag)
        stalls = [int(l.split()[1]) for l in log if l.startswith('maxstall ')]
        self.assertTrue(stalls, diag)
        sys.stderr.write('\nhls.js: levels switched %s, longest stall %d ms\n' % (switched, stalls[-1]))
        self.assertLessEqual(stalls[-1], 1000, diag)
        times = [s.get('currentTime', 0) for s in out['samples']]
        self.assertGreaterEqual(max(times) - min(times), PLAY_SECONDS - 4, diag)


if __name__ == '__main__':
    unittest.main()
