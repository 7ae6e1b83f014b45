"""Recording under live control (docs/recording.md): 60 s published as fast as ffmpeg sends it,
recorded in 10 s files that concatenate to exactly the frames published; mode manual started and stopped through
POST /api/v1/streams/{app}/{name}/record on a 2-worker server (the request lands on either
worker, the owner records), the stream's record state in the API, callbacks.on_record_done
reaching a small HTTP backend with nginx-rtmp's fields (also for the files a fast stop, SIGTERM,
closes), the rill_record_* metrics; and a record
path on a 20 MB tmpfs that fills up: the recording fails with "No space", the live HTTP-FLV
player sees no gap, and recording resumes by itself once files are deleted.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_record_live
"""

import glob
import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import flvutil
import rilltest
from rilltest import HOST, Rill, require_tool, wait_until


class Backend(rilltest.FormBackend):
    """An on_record_done receiver."""

    def wait_form(self, predicate, timeout=10):
        found = []

        def check():
            with self.lock:
                found[:] = [f for f in self.forms if predicate(f)]
            return bool(found)
        wait_until(check, timeout, 0.1)
        return found[0] if found else None


def file_order(path):
    """Sort key of a recording file named {name}-{start}[-N].ext: its start, then N (none is 0)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    m = re.fullmatch(r'(.*?)(?:-(\d+))?', stem)
    base, n = m.group(1), int(m.group(2) or 0)
    if n and not re.search(r'\d{2}-\d{2}-\d{2}$', base):
        base, n = stem, 0  # the -NN was part of the start time itself
    return (base, n)


def api(r, method, path, body=None):
    """(status, parsed JSON or text) of one API request, on a new connection (so that requests
    spread over the workers)."""
    conn = http.client.HTTPConnection(HOST, r.api_port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={'Content-Type': 'application/json'} if body else {})
        resp = conn.getresponse()
        text = resp.read().decode()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text
    finally:
        conn.close()


def record_state(r, app, name='cam'):
    status, s = api(r, 'GET', '/api/v1/streams/%s/%s' % (app, name))
    return s.get('record', {}) if status == 200 else {}


def metric(r, name):
    _, text = api(r, 'GET', '/metrics')
    m = re.search(r'^%s (\S+)$' % name, text, re.M)
    return float(m.group(1)) if m else None


class FlvPlayer:
    """An HTTP-FLV player on a thread: keeps the timestamps of the media tags it read."""

    def __init__(self, r, path):
        self.sock = socket.create_connection((HOST, r.http_port), timeout=5)
        self.sock.sendall(('GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % path).encode())
        self.data = b''
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            self.data += chunk

    def close(self):
        self.stop.set()
        self.sock.close()
        self.thread.join(5)

    def body(self):
        """The FLV bytes: the chunked body up to its last whole chunk."""
        pos, out = self.data.find(b'\r\n\r\n') + 4, b''
        while True:
            eol = self.data.find(b'\r\n', pos)
            if eol < 0:
                return out
            size = int(self.data[pos:eol].split(b';')[0], 16)
            if size == 0 or eol + 2 + size > len(self.data):
                return out
            out += self.data[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2

    def largest_gap_ms(self, tag_type):
        flv = flvutil.parse_bytes(self.body(), allow_truncated=True, check_back_pointers=False)
        ts = [t.timestamp for t in flv.tags if t.type == tag_type and not t.is_seq_header]
        return max((b - a for a, b in zip(ts, ts[1:])), default=None), len(ts)


def count_frames(path, fmt=None):
    """{'video': n, 'audio': n} decoded by ffprobe -count_frames, and the format's duration."""
    cmd = ['ffprobe', '-v', 'error']
    if fmt:
        cmd += ['-f', fmt, '-safe', '0']
    cmd += ['-count_frames', '-show_entries', 'stream=codec_type,nb_read_frames:format=duration', '-of', 'json', path]
    info = json.loads(rilltest.run(cmd, timeout=60).stdout)
    counts = {s['codec_type']: int(s['nb_read_frames']) for s in info['streams']}
    return counts, float(info.get('format', {}).get('duration', 'nan'))


def video_duration(path):
    """The video stream's duration in seconds: its frames' timestamps span plus the last frame's."""
    cmd = ['ffprobe', '-v', 'error', '-select_streams', 'v', '-show_entries', 'packet=pts_time,duration_time',
           '-of', 'json', path]
    packets = json.loads(rilltest.run(cmd, timeout=60).stdout)['packets']
    pts = [float(p['pts_time']) for p in packets]
    return max(pts) - min(pts) + float(packets[-1].get('duration_time') or 0.04)


class SlowDiskSwitchTest(unittest.TestCase):
    """RILL_TEST_RECORD_WRITE_DELAY_US (docs/recording.md, for tests only; scripts/bench record-50
    uses it): said at warn level by the worker that creates its writer; a bad value is ignored with a
    warning; without it, nothing is said."""

    def start(self, env):
        d = tempfile.mkdtemp(prefix='rill-slowdisk-')
        rill = Rill({'apps': {'rec': {'record': {'mode': 'all', 'path': os.path.join(d, '{name}')}}}},
                    env=env)
        self.addCleanup(rill.close)
        return rill

    def test_switch_is_logged_loudly(self):
        rill = self.start({'RILL_TEST_RECORD_WRITE_DELAY_US': '40000'})
        self.assertTrue(rill.wait_for_log(r'\[warn(ing)?\].*RILL_TEST_RECORD_WRITE_DELAY_US=40000: FOR TESTS ONLY: '
                                          r"worker 0's recording writer sleeps 40000 us"), rill.log_tail())
        rill = self.start({'RILL_TEST_RECORD_WRITE_DELAY_US': '40ms'})
        self.assertTrue(rill.wait_for_log(r"RILL_TEST_RECORD_WRITE_DELAY_US='40ms' ignored"), rill.log_tail())
        self.assertNotIn('FOR TESTS ONLY', rill.log_text())
        rill = self.start({})
        self.assertTrue(rill.wait_for_log('worker 0'), rill.log_tail())
        self.assertNotIn('RILL_TEST_RECORD_WRITE_DELAY_US', rill.log_text())


class RecordLiveTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        cls.media = rilltest.make_test_media(seconds=8, gop=25)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='rill-reclive-')
        self.backend = Backend('/record_done')
        self.addCleanup(self.backend.close)

    def start_rill(self, apps, workers=1):
        self.rill = Rill({'workers': workers, 'apps': apps})
        self.addCleanup(self.rill.close)

    def publish(self, app):
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('cam', app=app), self.media)
        self.addCleanup(rilltest.stop_process, pub)
        self.assertTrue(wait_until(lambda: record_state(self.rill, app), 15, 0.2), self.rill.log_tail())
        return pub

    def test_sixty_seconds_in_ten_second_files(self):
        media = rilltest.make_test_media(seconds=60, gop=25)
        source, _ = count_frames(media)
        self.start_rill({'rec': {'record': {'mode': 'all', 'segment': '10s',
                                            'path': os.path.join(self.dir, '{name}-{start}')},
                                 'callbacks': {'on_record_done': self.backend.url}}})
        # As fast as ffmpeg sends it: the recorder counts stream time, not the clock.
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('cam', app='rec'), media, loop=False, realtime=False)
        self.addCleanup(rilltest.stop_process, pub)
        self.assertEqual(pub.wait(60), 0, 'ffmpeg failed, log in %s' % pub.log_path)
        # on_record_done comes once a file is closed on disk (the log line comes when it is queued).
        # Each callback is its own request: they may arrive in any order, so wait for all six and
        # put them in the order of their files (a name taken in the same second gets -1, -2, ...).
        def all_six():
            with self.backend.lock:
                return len(self.backend.forms) >= 6
        wait_until(all_six, 30, 0.1)
        with self.backend.lock:
            forms = sorted(self.backend.forms, key=lambda f: file_order(f['path']))
        self.assertEqual([f['reason'] for f in forms], ['rotated'] * 5 + ['unpublished'], forms)
        files = [f['path'] for f in forms]  # [0, 10) ... [50, 60)
        self.assertEqual(sorted(files), sorted(glob.glob(os.path.join(self.dir, 'cam-*'))))
        listing = os.path.join(self.dir, 'files.txt')
        with open(listing, 'w') as f:
            f.writelines("file '%s'\n" % p for p in files)
        counts, _ = count_frames(listing, fmt='concat')
        self.assertEqual(counts, source, files)
        # The files' video durations add up to the published one, within one frame (25 fps).
        durations = [video_duration(p) for p in files]
        self.assertAlmostEqual(sum(durations), video_duration(media), delta=0.04, msg=durations)

    def test_manual_start_stop_and_record_done(self):
        callbacks = {'on_record_done': self.backend.url}
        self.start_rill({
            'man': {'record': {'mode': 'manual', 'path': os.path.join(self.dir, '{name}-{start}')},
                    'callbacks': callbacks},
            'live': {}}, workers=2)
        self.publish('man')
        self.publish('live')
        self.assertEqual(record_state(self.rill, 'man')['state'], 'stopped')
        self.assertEqual(record_state(self.rill, 'live')['state'], 'off')
        self.assertEqual(glob.glob(os.path.join(self.dir, '*')), [])
        # Errors, as JSON.
        self.assertEqual(api(self.rill, 'POST', '/api/v1/streams/man/cam/record', '{"action":"go"}')[0], 400)
        self.assertEqual(api(self.rill, 'POST', '/api/v1/streams/man/cam/record', 'not json')[0], 400)
        status, body = api(self.rill, 'POST', '/api/v1/streams/man/none/record', '{"action":"start"}')
        self.assertEqual(status, 404, body)
        self.assertIn('error', body)
        status, body = api(self.rill, 'POST', '/api/v1/streams/live/cam/record', '{"action":"start"}')
        self.assertEqual(status, 409, body)
        self.assertIn('does not record', body['error'])
        # Start, asked several times on new connections: either worker may take the request.
        for _ in range(4):
            status, body = api(self.rill, 'POST', '/api/v1/streams/man/cam/record', '{"action":"start"}')
            self.assertEqual(status, 200, body)
            self.assertIn(body['record']['state'], ('waiting', 'recording'))
        self.assertTrue(wait_until(lambda: record_state(self.rill, 'man')['state'] == 'recording', 10, 0.2),
                        self.rill.log_tail())
        time.sleep(2.5)
        rec = record_state(self.rill, 'man')
        self.assertTrue(rec['file'].startswith(os.path.join(self.dir, 'cam-')), rec)
        self.assertGreater(rec['bytes'], 0)
        self.assertRegex(rec['started'], r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$')
        self.assertEqual(metric(self.rill, 'rill_recordings'), 1)
        status, body = api(self.rill, 'POST', '/api/v1/streams/man/cam/record', '{"action":"stop"}')
        self.assertEqual((status, body['record']['state']), (200, 'stopped'), body)
        form = self.backend.wait_form(lambda f: f.get('reason') == 'stopped')
        self.assertIsNotNone(form, self.rill.log_tail())
        self.assertEqual((form['call'], form['app'], form['name']), ('record_done', 'man', 'cam'))
        self.assertEqual(form['path'], rec['file'])
        self.assertEqual(form['start'], rec['started'])
        self.assertGreater(float(form['duration']), 2.0)
        self.assertEqual(int(form['bytes']), os.path.getsize(form['path']))
        self.assertGreater(metric(self.rill, 'rill_record_bytes_total'), 0)
        self.assertEqual(metric(self.rill, 'rill_recordings'), 0)
        self.assertEqual(metric(self.rill, 'rill_record_failures_total'), 0)
        # Stays stopped; a start opens a new file.
        time.sleep(1)
        self.assertEqual(len(glob.glob(os.path.join(self.dir, 'cam-*'))), 1)
        self.assertEqual(api(self.rill, 'POST', '/api/v1/streams/man/cam/record', '{"action":"start"}')[0], 200)
        self.assertTrue(wait_until(lambda: len(glob.glob(os.path.join(self.dir, 'cam-*'))) == 2, 10, 0.2))

    def test_fast_stop_reports_each_closed_file(self):
        # Two streams, on either of two workers: SIGTERM closes their recordings, and each file
        # is reported before the workers exit (within shutdown_timeout / 2 at most).
        self.start_rill({'rec': {'record': {'mode': 'all', 'path': os.path.join(self.dir, '{name}-{start}')},
                                 'callbacks': {'on_record_done': self.backend.url}}}, workers=2)
        names = ('cam', 'cam2')
        for name in names:
            pub = rilltest.ffmpeg_publish(self.rill.rtmp_url(name, app='rec'), self.media)
            self.addCleanup(rilltest.stop_process, pub)
        for name in names:
            self.assertTrue(wait_until(lambda: record_state(self.rill, 'rec', name).get('state') == 'recording',
                                       15, 0.2), self.rill.log_tail())
        time.sleep(1.5)  # a flush or more in each file
        started = time.monotonic()
        self.assertEqual(self.rill.stop(), 0)
        took = time.monotonic() - started
        with self.backend.lock:
            forms = {f['name']: f for f in self.backend.forms}
        self.assertEqual(sorted(forms), sorted(names), self.rill.log_tail())
        for name, form in forms.items():
            self.assertEqual((form['call'], form['app']), ('record_done', 'rec'))
            self.assertTrue(os.path.basename(form['path']).startswith(name + '-'), form)
            self.assertEqual(int(form['bytes']), os.path.getsize(form['path']))
            self.assertGreater(float(form['duration']), 1.0)
        # Within the stop's bound: the master SIGKILLs what is left after shutdown_timeout (5 s).
        self.assertLess(took, 5.0, 'the stop took the whole shutdown_timeout')

    def test_disk_full_fails_then_resumes(self):
        if os.geteuid() != 0:
            self.skipTest('mounting a tmpfs needs root')
        mnt = os.path.join(self.dir, 'small')
        os.mkdir(mnt)
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=20m', 'tmpfs', mnt]).returncode != 0:
            self.skipTest('cannot mount a tmpfs here')
        self.addCleanup(subprocess.run, ['umount', '-l', mnt])
        # The disk is nearly full before the stream starts: about 1 MB left, some 10 s of this stream.
        filler = os.path.join(mnt, 'filler')
        with open(filler, 'wb') as f:
            f.write(b'\0' * (19 * 1024 * 1024))
        self.start_rill({'live': {'record': {'mode': 'all', 'path': os.path.join(mnt, 'rec', '{name}-{start}'),
                                             'flush': '500ms'},
                                  'callbacks': {'on_record_done': self.backend.url}}})
        self.publish('live')
        player = FlvPlayer(self.rill, '/live/cam.flv')
        self.addCleanup(player.close)

        def failed():
            return record_state(self.rill, 'live').get('state') == 'failed'
        self.assertTrue(wait_until(failed, 25, 0.2), self.rill.log_tail())
        rec = record_state(self.rill, 'live')
        self.assertIn('No space', rec['reason'])
        self.assertGreater(metric(self.rill, 'rill_record_failures_total'), 0)
        form = self.backend.wait_form(lambda f: f.get('reason', '').startswith('failed: '))
        self.assertIsNotNone(form, self.rill.log_tail())
        self.assertIn('No space', form['reason'])
        self.assertGreater(int(form['bytes']), 0)
        self.assertIn('recording stopped', self.rill.log_text())
        # Space again: recording resumes by itself at a keyframe after its back-off.
        os.unlink(filler)
        for p in glob.glob(os.path.join(mnt, 'rec', '*')):
            os.unlink(p)
        self.assertTrue(wait_until(lambda: record_state(self.rill, 'live').get('state') == 'recording', 15, 0.2),
                        self.rill.log_tail())
        player.close()
        for tag_type, name in ((9, 'video'), (8, 'audio')):
            gap, count = player.largest_gap_ms(tag_type)
            self.assertGreater(count, 100, name)
            self.assertLessEqual(gap, 200, name)


if __name__ == '__main__':
    unittest.main()
