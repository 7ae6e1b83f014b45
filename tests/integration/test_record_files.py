"""Recording files on disk (docs/recording.md, "Crashes", "Files on disk"): ffmpeg publishes in
real time (lavfi testsrc2 + sine) to an fMP4 app and an FLV app; kill -9 of the owning worker
mid-recording; the master closes the leftovers out (the FLV's onMetaData gets its duration) and
they play to within `flush` of the kill. A leftover cut mid-fragment, found at the next start, is
cut back to its last whole fragment. The API lists the recordings (GET /api/v1/recordings) and
deletes them (DELETE /api/v1/recordings/{id}: 409 while one is written, 404 for what is not an id
of the catalog); retention by max_bytes deletes the oldest files at start.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_record_files
"""

import glob
import json
import os
import shutil
import signal
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import rilltest
from rilltest import Rill, require_tool, run, wait_until

FLUSH = 1.0


def probe(path):
    """(video frames decoded, the format's duration) by ffprobe."""
    p = run(['ffprobe', '-v', 'error', '-count_frames', '-select_streams', 'v',
             '-show_entries', 'stream=nb_read_frames:format=duration', '-of', 'json', path], timeout=60)
    info = json.loads(p.stdout)
    frames = int(info['streams'][0]['nb_read_frames']) if info.get('streams') else 0
    return frames, float(info.get('format', {}).get('duration', 'nan'))


def flv_metadata_duration(path):
    """The `duration` of the FLV's onMetaData, as ffprobe reads it (format tags)."""
    p = run(['ffprobe', '-v', 'error', '-show_entries', 'format_tags=duration:format=duration',
             '-of', 'json', path], timeout=30)
    return json.loads(p.stdout).get('format', {})


def api(rill, method, path):
    """(status, parsed JSON or None) of an API request."""
    req = urllib.request.Request(rill.api_url(path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
            return resp.status, json.loads(body) if body else None
    except urllib.error.HTTPError as e:
        return e.code, None


def make_fragmented_mp4(media, path, seconds):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    run(['ffmpeg', '-v', 'error', '-i', media, '-c', 'copy', '-t', str(seconds), '-movflags',
         'frag_keyframe+empty_moov', '-f', 'mp4', path], timeout=60, check=True)


class RecordFilesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cls.media = rilltest.make_test_media(seconds=10, gop=25)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='rill-recfiles-')
        self.addCleanup(shutil.rmtree, self.dir, True)

        def app(fmt):
            return {'record': {'mode': 'all', 'format': fmt, 'flush': '1s',
                               'path': os.path.join(self.dir, '{app}', '{name}-{start:%H-%M-%S}')}}
        self.app = app
        self.rill = Rill({'apps': {'live': {}, 'mp4': app('fmp4'), 'flv': app('flv')}})
        self.addCleanup(self.rill.close)

    def publish(self, app):
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('cam', app=app), self.media, loop=False)
        self.addCleanup(rilltest.stop_process, pub)
        return pub

    def test_kill_9_leftovers_closed_out(self):
        self.publish('mp4')
        self.publish('flv')
        for app in ('mp4', 'flv'):
            self.assertTrue(self.rill.wait_for_log('record %s/cam: recording to' % app, timeout=15),
                            self.rill.log_tail())
        started = time.monotonic()
        time.sleep(4.0)
        old = self.rill.worker_pids()
        for pid in old:
            os.kill(pid, signal.SIGKILL)
        elapsed = time.monotonic() - started
        self.rill.wait_workers(1, exclude=old)
        flv = glob.glob(os.path.join(self.dir, 'flv', 'cam-*.flv'))
        self.assertEqual(len(flv), 1, flv)
        self.assertTrue(self.rill.wait_for_log(r'closed out leftover .*cam-.*\.flv: .*onMetaData rewritten',
                                               timeout=15), self.rill.log_tail())
        for path in glob.glob(os.path.join(self.dir, '*', 'cam-*')):
            frames, duration = probe(path)
            # Everything up to the last flush before the kill (plus the publisher's start-up slack).
            self.assertGreaterEqual(duration, elapsed - FLUSH - 1.0, (path, duration, elapsed))
            self.assertGreaterEqual(frames, int((elapsed - FLUSH - 1.0) * 25), (path, frames))
        meta = flv_metadata_duration(flv[0])
        self.assertGreater(float(meta.get('tags', {}).get('duration', meta.get('duration', 0))), 1.0, meta)

    def test_a_cut_fragment_is_cut_back_at_start(self):
        self.rill.stop()
        src = rilltest.make_test_media(seconds=10, gop=25)
        path = os.path.join(self.dir, 'mp4', 'old.mp4')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        run(['ffmpeg', '-v', 'error', '-i', src, '-c', 'copy', '-t', '4', '-movflags', 'frag_keyframe+empty_moov',
             '-f', 'mp4', path], timeout=60, check=True)
        whole = os.path.getsize(path)
        with open(path, 'ab') as f:
            f.write(b'\x00\x00\x10\x00moof' + b'\x00' * 20)  # a fragment begun, the writer killed
        empty = os.path.join(self.dir, 'mp4', 'empty.mp4')
        open(empty, 'wb').close()
        self.rill.start()
        self.assertTrue(self.rill.wait_for_log(r'closed out leftover .*old\.mp4: cut from %d to %d' %
                                               (whole + 28, whole), timeout=10), self.rill.log_tail())
        self.assertTrue(self.rill.wait_for_log(r'removed leftover .*empty\.mp4', timeout=5), self.rill.log_tail())
        self.assertEqual(os.path.getsize(path), whole)
        self.assertFalse(os.path.exists(empty))
        frames, _ = probe(path)
        self.assertGreaterEqual(frames, 99)

    def test_api_lists_and_deletes(self):
        pub = self.publish('mp4')
        self.assertTrue(self.rill.wait_for_log('record mp4/cam: recording to', timeout=15), self.rill.log_tail())
        time.sleep(2.5)
        status, body = api(self.rill, 'GET', '/api/v1/recordings?app=mp4')
        self.assertEqual(status, 200, body)
        self.assertEqual(body['total'], 1, body)
        item = body['items'][0]
        self.assertEqual((item['app'], item['name'], item['format'], item['state']), ('mp4', 'cam', 'fmp4', 'recording'))
        self.assertGreaterEqual(item['duration'], 1.0)
        self.assertEqual(api(self.rill, 'DELETE', '/api/v1/recordings/' + item['id'])[0], 409)
        # Ids come from the catalog only: a path is not one.
        for bad in ('..%2F..%2Fetc%2Fpasswd', '../../etc/passwd', '0123456789abcdef', item['id'] + 'x'):
            # (400: the HTTP layer refuses an encoded slash before any route sees it)
            self.assertIn(api(self.rill, 'DELETE', '/api/v1/recordings/' + bad)[0], (400, 404), bad)
        self.assertEqual(api(self.rill, 'GET', '/api/v1/recordings?from=yesterday')[0], 400)
        self.assertTrue(os.path.exists(item['path']))

        rilltest.stop_process(pub)
        self.assertTrue(self.rill.wait_for_log('record mp4/cam: closed ', timeout=15), self.rill.log_tail())
        # The log line comes when the file's close is queued; its writer thread lets it go after.
        def listed_complete():
            status, body = api(self.rill, 'GET', '/api/v1/recordings?app=mp4&name=cam&from=2000-01-01T00:00:00Z')
            return status == 200 and body['total'] == 1 and body['items'][0]['state'] == 'complete'
        self.assertTrue(wait_until(listed_complete, 10, 0.2), api(self.rill, 'GET', '/api/v1/recordings'))
        self.assertEqual(api(self.rill, 'GET', '/api/v1/recordings?from=2999-01-01T00:00:00Z')[1]['total'], 0)
        self.assertEqual(api(self.rill, 'GET', '/api/v1/recordings?name=other')[1]['total'], 0)
        self.assertEqual(api(self.rill, 'GET', '/api/v1/recordings?limit=1&offset=1')[1]['items'], [])
        self.assertEqual(api(self.rill, 'DELETE', '/api/v1/recordings/' + item['id'])[0], 204)
        self.assertFalse(os.path.exists(item['path']))
        self.assertEqual(api(self.rill, 'DELETE', '/api/v1/recordings/' + item['id'])[0], 404)

    def test_retention_by_max_bytes_deletes_the_oldest(self):
        self.rill.stop()
        files = [os.path.join(self.dir, 'mp4', 'cam-%d.mp4' % i) for i in range(3)]
        for i, path in enumerate(files):
            make_fragmented_mp4(self.media, path, 2)
            os.utime(path, (time.time() - 300 + i * 60,) * 2)  # cam-0 the oldest
        size = os.path.getsize(files[0])
        cfg = self.app('fmp4')
        cfg['record']['retention'] = {'max_age': '7d', 'max_bytes': 2 * size + size // 2}
        self.rill.write_config({'apps': {'live': {}, 'mp4': cfg}})
        self.rill.start()
        self.assertTrue(self.rill.wait_for_log(r'record mp4: retention deleted .*cam-0\.mp4', timeout=10),
                        self.rill.log_tail())
        self.assertEqual([os.path.exists(p) for p in files], [False, True, True])


if __name__ == '__main__':
    unittest.main()
