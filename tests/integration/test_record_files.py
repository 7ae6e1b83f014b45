"""Recording files on disk (docs/recording.md, "Crashes", "Files on disk"): ffmpeg publishes in
real time (lavfi testsrc2 + sine) to an fMP4 app and an FLV app; kill -9 of the owning worker
mid-recording; the master closes the leftovers out (the FLV's onMetaData gets its duration) and
they play to within `flush` of the kill. A leftover cut mid-fragment, found at the next start, is
cut back to its last whole fragment.

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


if __name__ == '__main__':
    unittest.main()
