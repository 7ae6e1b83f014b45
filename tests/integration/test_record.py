"""Recording (apps.NAME.record, docs/recording.md) with the real daemon: ffmpeg publishes 8 s of
lavfi testsrc2 + sine (a keyframe every second) to apps that record it as fMP4 and FLV, one file
per publish and rotated every 3 s; ffprobe -count_frames on the recordings must find every video
and audio frame published, the rotated files must concatenate (ffmpeg -f concat) to the same
counts, the FLV must carry its duration; an app whose record path cannot be created must log one
clear error and keep serving its stream; kill -9 of the worker mid-recording leaves an fMP4
file that ffprobe reads up to the last flush.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_record
"""

import glob
import json
import os
import signal
import socket
import tempfile
import time
import unittest

import rilltest
from rilltest import Rill, require_tool, run, wait_until

SECONDS = 8


def count_frames(path, fmt=None):
    """{'video': n, 'audio': n} decoded by ffprobe -count_frames, and the format's duration."""
    cmd = ['ffprobe', '-v', 'error']
    if fmt:
        cmd += ['-f', fmt, '-safe', '0']
    cmd += ['-count_frames', '-show_entries', 'stream=codec_type,nb_read_frames:format=duration', '-of', 'json', path]
    p = run(cmd, timeout=60)
    info = json.loads(p.stdout)
    counts = {s['codec_type']: int(s['nb_read_frames']) for s in info['streams']}
    return counts, float(info.get('format', {}).get('duration', 'nan'))


class RecordTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cls.media = rilltest.make_test_media(seconds=SECONDS, gop=25)
        cls.source, _ = count_frames(cls.media)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='rill-rec-')
        blocker = os.path.join(self.dir, 'blocked')
        with open(blocker, 'w') as f:
            f.write('a file where the recording directory should be\n')

        def app(fmt, segment='0s', path=None):
            return {'record': {'mode': 'all', 'format': fmt, 'segment': segment,
                               'path': path or os.path.join(self.dir, '{app}', '{name}-{start:%H-%M-%S}')}}
        cfg = {'apps': {'live': {}, 'mp4': app('fmp4'), 'flv': app('flv'), 'mp4seg': app('fmp4', '3s'),
                        'flvseg': app('flv', '3s'),
                        'bad': app('fmp4', path=os.path.join(blocker, '{app}', '{name}-{start}'))}}
        self.rill = Rill(cfg)
        self.addCleanup(self.rill.close)

    def publish(self, app, realtime=False):
        """Publishes the 8 s file once (as fast as ffmpeg sends it) and waits for the end."""
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('cam', app=app), self.media, loop=False, realtime=realtime)
        self.addCleanup(rilltest.stop_process, pub)
        return pub

    def recorded(self, app, files):
        """The app's recordings once `files` are closed (the log line of each)."""
        def closed():
            return self.rill.log_text().count('record %s/cam: closed ' % app) >= files
        self.assertTrue(wait_until(closed, 20, 0.1), self.rill.log_tail())
        # In the order they were written (files opened within one second are named -1, -2...).
        return sorted(glob.glob(os.path.join(self.dir, app, 'cam-*')), key=lambda p: os.stat(p).st_mtime_ns)

    def test_every_frame_once(self):
        for app in ('mp4', 'flv', 'mp4seg', 'flvseg'):
            pub = self.publish(app)
            self.assertEqual(pub.wait(30), 0, 'ffmpeg failed, log in %s' % pub.log_path)
        for app, ext in (('mp4', '.mp4'), ('flv', '.flv')):
            with self.subTest(app=app):
                files = self.recorded(app, 1)
                self.assertEqual(len(files), 1, files)
                self.assertTrue(files[0].endswith(ext), files)
                counts, duration = count_frames(files[0])
                self.assertEqual(counts, self.source, files[0])
                # 200 frames at 25 fps: 8 s (the FLV's from its rewritten onMetaData).
                self.assertAlmostEqual(duration, SECONDS, delta=0.1)
        for app in ('mp4seg', 'flvseg'):
            with self.subTest(app=app):
                files = self.recorded(app, 3)
                self.assertEqual(len(files), 3, files)  # [0, 3) [3, 6) [6, 8)
                listing = os.path.join(self.dir, app + '.txt')
                with open(listing, 'w') as f:
                    f.writelines("file '%s'\n" % p for p in files)
                counts, _ = count_frames(listing, fmt='concat')
                self.assertEqual(counts, self.source, files)
                for p in files:
                    _, d = count_frames(p)
                    self.assertLess(d, 3.2, p)

    def test_unwritable_path_logs_and_the_stream_plays(self):
        self.publish('bad', realtime=True)
        line = self.rill.wait_for_log(r'record bad/cam: recording stopped: [^ ]*/blocked/bad/cam-[^ ]*\.mp4: mkdir: Not a directory',
                                      timeout=15)
        self.assertTrue(line, self.rill.log_tail())
        # HTTP-FLV players get the stream as if nothing happened.
        s = socket.create_connection((rilltest.HOST, self.rill.http_port), timeout=5)
        s.sendall(b'GET /bad/cam.flv HTTP/1.1\r\nHost: x\r\n\r\n')
        got = b''
        deadline = time.time() + 3
        while time.time() < deadline and len(got) < 100000:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        self.assertIn(b'200 OK', got[:100])
        self.assertIn(b'FLV\x01', got[:400])
        self.assertGreater(len(got), 50000)
        self.assertEqual(glob.glob(os.path.join(self.dir, '**', '*.mp4'), recursive=True), [])

    def test_kill_9_leaves_a_playable_file(self):
        self.publish('mp4', realtime=True)
        self.assertTrue(self.rill.wait_for_log('record mp4/cam: recording to', timeout=15), self.rill.log_tail())
        time.sleep(3.5)
        for pid in self.rill.worker_pids():
            os.kill(pid, signal.SIGKILL)
        files = sorted(glob.glob(os.path.join(self.dir, 'mp4', 'cam-*')))
        self.assertEqual(len(files), 1, files)
        counts, duration = count_frames(files[0])
        # Fragments of 1 s: at least 2 s of the 3.5 s published are in the file, and whole.
        self.assertGreaterEqual(counts.get('video', 0), 50, counts)
        self.assertGreaterEqual(duration, 2.0)
        self.rill.wait_workers(1)


if __name__ == '__main__':
    unittest.main()
