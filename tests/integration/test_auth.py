"""Who may publish and play (docs/security.md): signed tokens on RTMP publish/play, HTTP-FLV and
HLS (playlist and segments, the token passed on to the segment URIs), `rill token`, and the
access rules with a reload.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_auth
"""

import shutil
import subprocess
import time
import unittest
import urllib.error
import urllib.request

import rilltest
from hlsutil import Playlist, hls_config, make_gop1_media
from rilltest import Rill, wait_until

SECRET = 'test-s3cret'


def need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    return unittest.skipIf(missing, 'not installed: %s' % ' '.join(missing))


def token(action, stream, ttl='1h', secret=SECRET, extra=()):
    """The query `rill token` prints for ACTION ('publish'/'play') of 'live/STREAM'."""
    res = rilltest.rill_cli('token', '--secret', secret, '--' + action, 'live/' + stream, '--ttl', ttl, *extra)
    if res.returncode != 0:
        raise AssertionError('rill token failed: %s' % res.stderr)
    return res.stdout.strip()


def http_status(url, timeout=10):
    """(status, first bytes of the body)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read(64 * 1024) if not url.split('?')[0].endswith('.flv') else r.read(13)
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def publish_and_wait_exit(rill, query, stream='cam', timeout=15):
    """Publishes with `query` (may be ''); returns (exit code, seconds until ffmpeg exited)."""
    url = rill.rtmp_url(stream + ('?' + query if query else ''))
    start = time.monotonic()
    p = rilltest.ffmpeg_publish(url, make_gop1_media(), loop=False)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        rilltest.stop_process(p)
        raise AssertionError('ffmpeg was not refused within %ss\n%s' % (timeout, rilltest.process_log(p)))
    return p.returncode, time.monotonic() - start


@need('ffmpeg', 'ffprobe')
class TokenTest(unittest.TestCase):
    """app live: publish and play need a token; one good publisher for the play tests."""

    @classmethod
    def setUpClass(cls):
        cfg = hls_config()
        cfg['apps']['live']['auth'] = {'secret': SECRET, 'publish': 'token', 'play': 'token'}
        cls.rill = Rill(cfg)
        try:
            offset = cls.rill.log_offset()
            cls.pub = rilltest.ffmpeg_publish(cls.rill.rtmp_url('good?' + token('publish', 'good')), make_gop1_media())
            if not cls.rill.wait_for_log(r'publish start: live/good', 15, since=offset):
                raise AssertionError('publisher with a valid token was not admitted\n%s\n%s' % (
                    rilltest.process_log(cls.pub), cls.rill.log_tail()))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        rilltest.stop_process(getattr(cls, 'pub', None))
        cls.rill.close()

    def test_publish_without_a_valid_token_is_refused(self):
        expired = token('publish', 'cam', extra=('--expires', str(int(time.time()) - 10)))
        wrong = token('publish', 'cam', secret='not-the-secret')
        other_name = token('publish', 'other')
        for what, query in (('no token', ''), ('wrong sign', wrong), ('expired', expired),
                            ('token of another name', other_name), ('oversized', 'pad=' + 'x' * 1100)):
            with self.subTest(what):
                offset = self.rill.log_offset()
                code, took = publish_and_wait_exit(self.rill, query)
                self.assertNotEqual(code, 0, what)
                self.assertTrue(self.rill.wait_for_log(r'live/cam over rtmp refused by token', 5, since=offset),
                                self.rill.log_tail())
                # The refusal itself is immediate; ffmpeg's own start-up is most of `took`.
                self.assertLess(took, 5, what)
        self.assertNotIn('publish start: live/cam', self.rill.log_text())

    def test_rtmp_play_needs_a_play_token(self):
        url = self.rill.rtmp_url('good')
        ok = rilltest.run(['ffprobe', '-v', 'error', '-rw_timeout', '8000000', '-show_entries', 'stream=codec_name',
                           '-of', 'csv=p=0', url + '?' + token('play', 'good')], timeout=30)
        self.assertIn('h264', ok.stdout, ok.stderr)
        for query in ('', token('publish', 'good')):  # none; a publish token does not play
            bad = rilltest.run(['ffprobe', '-v', 'error', '-rw_timeout', '8000000', url + ('?' + query if query else '')],
                               timeout=30)
            self.assertNotEqual(bad.returncode, 0, query)

    def test_http_flv_needs_a_play_token(self):
        status, body = http_status(self.rill.http_url('/live/good.flv?' + token('play', 'good')))
        self.assertEqual(status, 200)
        self.assertEqual(body[:3], b'FLV')
        self.assertEqual(http_status(self.rill.http_url('/live/good.flv'))[0], 403)
        expired = token('play', 'good', extra=('--expires', str(int(time.time()) - 1)))
        self.assertEqual(http_status(self.rill.http_url('/live/good.flv?' + expired))[0], 403)

    def test_hls_playlist_and_segments_need_the_token(self):
        query = token('play', 'good')
        url = self.rill.http_url('/live/good.m3u8?' + query)
        pl = wait_until(lambda: (lambda r: Playlist(r[1].decode()) if r[0] == 200 else None)(http_status(url)), 20)
        self.assertTrue(pl and pl.segments, self.rill.log_tail())
        for seg in pl.segments:
            self.assertTrue(seg['uri'].endswith('?' + query), seg['uri'])
        # The URI as written, relative to the playlist: what hls.js and Safari fetch.
        seg_url = self.rill.http_url('/live/' + pl.segments[-1]['uri'])
        status, body = http_status(seg_url)
        self.assertEqual(status, 200)
        self.assertEqual(body[:1], b'\x47')  # MPEG-TS sync byte
        self.assertEqual(http_status(seg_url.split('?')[0])[0], 403)
        self.assertEqual(http_status(self.rill.http_url('/live/good.m3u8'))[0], 403)
        self.assertEqual(http_status(self.rill.http_url('/live/good.m3u8?' + token('play', 'other')))[0], 403)

    def test_token_command_usage_errors(self):
        res = rilltest.rill_cli('token', '--publish', 'live/x')
        self.assertEqual(res.returncode, 2)
        self.assertIn('a secret is required', res.stderr)
        res = rilltest.rill_cli('token', '--secret', 's', '--play', 'live')
        self.assertEqual(res.returncode, 2)
        self.assertIn('is not APP/NAME', res.stderr)


@need('ffmpeg')
class AccessRulesTest(unittest.TestCase):
    def test_deny_then_reload_with_allow(self):
        deny = {'apps': {'live': {'access': ['allow play all', 'deny publish 127.0.0.1']}}}
        with Rill(deny) as rill:
            offset = rill.log_offset()
            code, _ = publish_and_wait_exit(rill, '')
            self.assertNotEqual(code, 0)
            self.assertTrue(rill.wait_for_log(r"refused by access rules: address denied by rule "
                                              r"'deny publish 127.0.0.1'", 5, since=offset), rill.log_tail())
            allow = {'apps': {'live': {'access': ['allow publish 127.0.0.0/8', 'deny publish all']}}}
            self.assertTrue(rill.reload(allow))
            offset = rill.log_offset()
            pub = rilltest.ffmpeg_publish(rill.rtmp_url('cam'), make_gop1_media())
            self.addCleanup(rilltest.stop_process, pub)
            self.assertTrue(rill.wait_for_log(r'publish start: live/cam', 15, since=offset),
                            rilltest.process_log(pub) + rill.log_tail())


if __name__ == '__main__':
    unittest.main()
