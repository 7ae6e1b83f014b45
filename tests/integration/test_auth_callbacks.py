"""nginx-rtmp-compatible HTTP callbacks (docs/security.md): a small HTTP server inside the test is
the backend. on_publish allows, refuses (403, 500, a redirect to a URL, a 10 MB answer, no answer
in time) and renames (302 Location: NAME); the form fields arrive as nginx-rtmp sends them;
publish_done arrives when the publisher leaves; an update answered 403 ends the session; on_play
refuses an HTTP-FLV player. A healthy publisher keeps streaming throughout.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_auth_callbacks
"""

import shutil
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request

import rilltest
from hlsutil import make_gop1_media
from rilltest import Rill, wait_until


class Backend(rilltest.FormBackend):
    """The auth backend: answers by (call, name) and records every form it got."""

    def __init__(self):
        self.release = threading.Event()
        super().__init__()

    def close(self):
        self.release.set()
        super().close()

    def answer(self, h, form):
        name, call = form.get('name', ''), form.get('call', '')
        status, headers, body = 200, {}, b'ok'
        if call == 'update' and name == 'upd':
            status = 403
        elif call in ('publish', 'play'):
            if name in ('deny', 'noplay'):
                status = 403
            elif name == 'rename':
                status, headers = 302, {'Location': 'renamed'}
            elif name == 'err':
                status = 500
            elif name == 'loop':
                status, headers = 302, {'Location': self.url}
            elif name == 'big':
                body = b'x' * (10 * 1024 * 1024)
            elif name == 'hang':
                self.release.wait(8)
        try:
            h.send_response(status)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header('Content-Length', str(len(body)))
            h.end_headers()
            h.wfile.write(body)
        except OSError:
            pass  # rill gave up on it

    def forms_of(self, call, name):
        with self.lock:
            return [f for f in self.forms if f.get('call') == call and f.get('name') == name]


@unittest.skipIf(shutil.which('ffmpeg') is None, 'ffmpeg not installed')
class CallbackTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = Backend()
        u = cls.backend.url
        cfg = {'apps': {'live': {
            'auth': {'publish': 'callback'},
            'callbacks': {'on_publish': u, 'on_play': u, 'on_publish_done': u, 'on_update': u,
                          'update_interval': '1s', 'timeout': '1s'}}}}
        cls.rill = Rill(cfg)
        cls.media = make_gop1_media()
        try:
            offset = cls.rill.log_offset()
            cls.good = rilltest.ffmpeg_publish(cls.rill.rtmp_url('good?k=v&call=evil'), cls.media)
            if not cls.rill.wait_for_log(r'publish start: live/good', 15, since=offset):
                raise AssertionError('allowed publisher not admitted\n' + cls.rill.log_tail())
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        rilltest.stop_process(getattr(cls, 'good', None))
        cls.rill.close()
        cls.backend.close()

    def publish_refused(self, name, why):
        offset = self.rill.log_offset()
        p = rilltest.ffmpeg_publish(self.rill.rtmp_url(name), self.media, loop=False)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            rilltest.stop_process(p)
            self.fail('%s: ffmpeg not refused\n%s' % (name, self.rill.log_tail()))
        self.assertNotEqual(p.returncode, 0, name)
        self.assertTrue(self.rill.wait_for_log(r'live/%s over rtmp refused by callback: .*%s' % (name, why), 5,
                                               since=offset), self.rill.log_since(offset))

    def assert_good_still_streams(self):
        with urllib.request.urlopen(self.rill.http_url('/live/good.flv'), timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertGreater(len(r.read(200000)), 100000)

    def test_form_fields_as_nginx_rtmp(self):
        forms = self.backend.forms_of('publish', 'good')
        self.assertTrue(forms)
        f = forms[0]
        self.assertEqual(f['_content_type'], 'application/x-www-form-urlencoded')
        self.assertEqual(f['addr'], '127.0.0.1')
        self.assertEqual(f['app'], 'live')
        self.assertEqual(f['type'], 'live')
        self.assertTrue(f['clientid'].isdigit())
        self.assertTrue(f['tcurl'].startswith('rtmp://127.0.0.1:%d/live' % self.rill.rtmp_port), f['tcurl'])
        self.assertIn('flashver', f)
        self.assertIn('pageurl', f)
        self.assertIn('swfurl', f)
        self.assertEqual(f['k'], 'v')          # the client's arguments come along
        self.assertEqual(f['call'], 'publish')  # but cannot replace a field

    def test_refusals(self):
        self.publish_refused('deny', 'callback answered 403')
        self.publish_refused('err', 'callback answered 500')
        self.publish_refused('loop', 'to a URL')
        self.publish_refused('big', 'callback failed')
        start = time.monotonic()
        hung = threading.Thread(target=self.publish_refused, args=('hang', 'timed out after 1000 ms'))
        hung.start()
        self.assert_good_still_streams()  # while the backend hangs
        hung.join(30)
        self.assertLess(time.monotonic() - start, 25)

    def test_rename_by_302(self):
        offset = self.rill.log_offset()
        p = rilltest.ffmpeg_publish(self.rill.rtmp_url('rename'), self.media)
        self.addCleanup(rilltest.stop_process, p)
        self.assertTrue(self.rill.wait_for_log(r'publish start: live/renamed', 15, since=offset), self.rill.log_tail())
        self.assertTrue(wait_until(lambda: self.backend.forms_of('publish', 'rename'), 5))

    def test_play_callback_refuses_an_http_player(self):
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(self.rill.http_url('/live/noplay.flv'), timeout=10)
        self.assertEqual(cm.exception.code, 403)
        self.assertTrue(self.backend.forms_of('play', 'noplay'))
        self.assertEqual(self.backend.forms_of('play', 'noplay')[0]['tcurl'], '')

    def test_publish_done_and_update(self):
        offset = self.rill.log_offset()
        p = rilltest.ffmpeg_publish(self.rill.rtmp_url('done'), self.media)
        self.assertTrue(self.rill.wait_for_log(r'publish start: live/done', 15, since=offset))
        self.assertTrue(wait_until(lambda: self.backend.forms_of('update', 'done'), 10), 'no update sent')
        rilltest.stop_process(p)
        self.assertTrue(wait_until(lambda: self.backend.forms_of('publish_done', 'done'), 10), 'no publish_done')
        # An update answered 403 ends the session.
        offset = self.rill.log_offset()
        upd = rilltest.ffmpeg_publish(self.rill.rtmp_url('upd'), self.media)
        self.addCleanup(rilltest.stop_process, upd)
        self.assertTrue(self.rill.wait_for_log(r'publish start: live/upd', 15, since=offset))
        self.assertTrue(self.rill.wait_for_log(r'update for session \d+ refused', 10, since=offset),
                        self.rill.log_since(offset))
        self.assertTrue(wait_until(lambda: upd.poll() is not None, 15), 'publisher still connected')
        self.assert_good_still_streams()


if __name__ == '__main__':
    unittest.main()
