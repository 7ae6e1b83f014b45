"""E-RTMP v2 multitrack -> HLS renditions (docs/abr.md, "Multitrack: HLS renditions"): rill-bench
publishes 3 H.264 video tracks (3 sizes of one lavfi source, the same GOP, made by ffmpeg here)
with AAC audio as track 0's. /live/mt.m3u8 must be a multivariant playlist listing the 3 tracks'
renditions (mt_track0.m3u8 .. mt_track2.m3u8) with their CODECS and RESOLUTION and the shared
audio rendition; each media playlist decodes in ffmpeg at its track's size; the 3 are cut with the
same media sequence numbers; hls.js in headless Chromium plays the master, is made to switch level
twice (hls.currentLevel) and keeps playing with no stall over 1 s. Play needs a token: the token
for mt admits the renditions' playlists and segments, another stream's does not."""

import json
import sys
import unittest

import test_browser_hls as browser
import test_hls_variants as variants
from browserutil import play_page
from hlsutil import Playlist, hls_config
from rilltest import Rill, http_get, require_tool, run, stop_process, wait_until
from test_bench import bench_binary, start_bench
from test_multitrack import SIZES, make_renditions

PLAY_SECONDS = 6


class MultitrackHlsTest(unittest.TestCase):
    def test_tracks_are_aligned_renditions_of_the_master(self):
        require_tool('ffmpeg')
        bench_binary()
        cfg = hls_config()
        cfg['workers'] = 2  # the playlists and segments are asked of either worker
        cfg['apps']['live']['auth'] = {'secret': variants.SECRET, 'publish': 'open', 'play': 'token'}
        with Rill(cfg) as rill:
            paths = make_renditions(rill.tmpdir)
            bench = start_bench('rtmp-publish', rill.rtmp_url('mt'), '-i', paths[0], '--track', paths[1],
                                '--track', paths[2], '-d', '40')
            self.addCleanup(stop_process, bench)
            tok = variants.token('mt')
            master_url = rill.http_url('/live/mt.m3u8?' + tok)

            def three_renditions():
                status, _, body = http_get(master_url)
                v = variants.variants_of(body.decode()) if status == 200 else []
                return (v, body.decode()) if len(v) == 3 else None
            got = wait_until(three_renditions, 10)
            self.assertTrue(got, 'no multivariant playlist with 3 renditions\n' + rill.log_tail())
            self.check_master(*got)
            self.check_media_playlists(rill, tok)
            self.check_tokens(rill, tok)
            if browser._missing():
                sys.stderr.write('\nskipped the hls.js part: missing %s\n' % ', '.join(browser._missing()))
                return
            self.check_hlsjs(master_url)

    def check_master(self, entries, text):
        self.assertIn('#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio"', text)
        self.assertEqual([uri.split('?')[0] for _, uri in entries], ['mt_track%d.m3u8' % i for i in range(3)],
                         text)
        for (attrs, uri), (w, h) in zip(entries, SIZES):
            self.assertRegex(attrs['CODECS'], r'^avc1\.[0-9A-F]{6},mp4a\.40\.2$', attrs)
            self.assertEqual(attrs['RESOLUTION'], '%dx%d' % (w, h), uri)
            self.assertEqual(attrs['AUDIO'], 'audio', uri)
            self.assertGreater(int(attrs['BANDWIDTH']), 0, attrs)
            self.assertAlmostEqual(float(attrs['FRAME-RATE']), 25, delta=1.0)

    def check_media_playlists(self, rill, tok):
        def playlists():
            out = []
            for i in range(3):
                status, _, body = http_get(rill.http_url('/live/mt_track%d.m3u8?%s' % (i, tok)))
                if status != 200:
                    return None
                out.append(Playlist(body.decode()))
            common = set.intersection(*({s['seq'] for s in p.segments} for p in out))
            return out if len(common) >= 2 else None
        lists = wait_until(playlists, 8)
        self.assertTrue(lists, 'the track renditions do not list 2 common sequence numbers\n' + rill.log_tail())
        seqs = [[s['seq'] for s in p.segments] for p in lists]
        # One clock, aligned keyframes: every track is cut at the same times with the same numbers.
        self.assertLessEqual(abs(lists[0].media_sequence - lists[1].media_sequence), 1, seqs)
        self.assertLessEqual(abs(lists[0].media_sequence - lists[2].media_sequence), 1, seqs)
        durations = [{s['seq']: s['duration'] for s in p.segments} for p in lists]
        for seq in set(durations[0]) & set(durations[1]) & set(durations[2]):
            d = [x[seq] for x in durations]
            self.assertLessEqual(max(d) - min(d), 0.002, 'segment %d: %s' % (seq, d))
        for i, (w, h) in enumerate(SIZES):
            url = rill.http_url('/live/mt_track%d.m3u8?%s' % (i, tok))
            r = run(['ffprobe', '-v', 'error', '-read_intervals', '%+1', '-count_frames', '-select_streams', 'v:0',
                     '-show_entries', 'stream=width,height,nb_read_frames', '-of', 'json', url], timeout=20)
            self.assertEqual(r.returncode, 0, r.stderr)
            s = json.loads(r.stdout)['streams'][0]
            self.assertEqual((s['width'], s['height']), (w, h), url)
            self.assertGreater(int(s['nb_read_frames']), 10, url)

    def check_tokens(self, rill, tok):
        get = lambda path: http_get(rill.http_url(path))[0]
        self.assertEqual(get('/live/mt.m3u8'), 403)
        self.assertEqual(get('/live/mt_track1.m3u8'), 403)
        self.assertEqual(get('/live/mt_track1.m3u8?' + variants.token('other')), 403)
        status, _, body = http_get(rill.http_url('/live/mt_track2.m3u8?' + tok))
        self.assertEqual(status, 200)
        segment = Playlist(body.decode()).segments[-1]['uri']
        self.assertIn(tok, segment)
        self.assertEqual(get('/live/' + segment), 200)
        self.assertEqual(get('/live/' + segment.split('?')[0]), 403)

    def check_hlsjs(self, master_url):
        page = browser.BrowserHlsTest.serve_page(self, master_url, {}, page=variants.PAGE)
        out, diag = play_page(self, page, PLAY_SECONDS)
        log = out['log']
        self.assertTrue([l for l in log if l.startswith('manifest ') and len(l.split()) == 4], diag)
        forced = [int(l.split()[1]) for l in log if l.startswith('force ')]
        self.assertEqual(len(forced), 2, diag)
        switched = [int(l.split()[1]) for l in log if l.startswith('switched ')]
        for level in forced:
            self.assertIn(level, switched, 'hls.js did not switch to level %d\n%s' % (level, diag))
        frags = {int(l.split()[1]) for l in log if l.startswith('fragment ')}
        self.assertTrue(set(forced) <= frags, 'fragments of the forced levels were played\n' + diag)
        self.assertFalse([l for l in log if 'FATAL' in l], diag)
        stalls = [int(l.split()[1]) for l in log if l.startswith('maxstall ')]
        self.assertTrue(stalls, diag)
        sys.stderr.write('\nhls.js: levels switched %s, longest stall %d ms\n' % (switched, stalls[-1]))
        self.assertLessEqual(stalls[-1], 1000, diag)


if __name__ == '__main__':
    unittest.main()
