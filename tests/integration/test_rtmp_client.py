"""The library's RTMP client (protocol::RtmpClientSession, driven by rill-bench) against real
servers:

  * the Rill daemon: a rill-bench publisher, with a rill-bench player and ffprobe reading;
  * ffmpeg as the RTMP server receiving a publish (``-listen 1 -f flv -i rtmp://...``): the file
    it writes has the frames we sent;
  * ffmpeg as the RTMP server sending a stream (``-f flv -listen 1 rtmp://...`` output): the
    library client plays it.

Everything listens on free loopback ports; every subprocess and every wait has a timeout. The
media come from make_test_media() (ffmpeg lavfi sources), nothing binary is committed.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from rilltest import (HOST, Rill, free_port, make_test_media, port_listening, require_tool, run, stop_process,
                      wait_until)
from test_bench import bench_binary, finish_bench, run_bench, start_bench

SECONDS = 4  # each bench run


def ffprobe_packets(target, read_seconds=None, timeout=30):
    """{'video': n, 'audio': m} packets ffprobe counts in `target` (a file or a URL). On a live
    URL it reads `read_seconds` of stream time."""
    require_tool('ffprobe')
    cmd = ['ffprobe', '-v', 'error', '-count_packets', '-show_entries', 'stream=codec_type,codec_name,nb_read_packets',
           '-of', 'json']
    if read_seconds:
        cmd += ['-read_intervals', '%%+%d' % read_seconds, '-rw_timeout', '10000000']
    p = run(cmd + [target], timeout=timeout)
    if p.returncode != 0:
        raise AssertionError('ffprobe %s failed (%s): %s' % (target, p.returncode, p.stderr[-2000:]))
    counts = {}
    for s in json.loads(p.stdout).get('streams', []):
        counts[s['codec_type']] = counts.get(s['codec_type'], 0) + int(s.get('nb_read_packets', 0))
        counts[s['codec_type'] + '_codec'] = s.get('codec_name')
    return counts


def start_ffmpeg(args, log_path):
    """ffmpeg ARGS with stdin closed and its output in log_path; stop it with stop_process."""
    require_tool('ffmpeg')
    with open(log_path, 'wb') as log:
        return subprocess.Popen(['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'info'] + args,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def read_log(path):
    with open(path, 'r', errors='replace') as f:
        return f.read()[-3000:]


def wait_exit(proc, timeout):
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


class RtmpClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        bench_binary()
        cls.media = make_test_media()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='rill-rtmp-client-')
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def listen_ffmpeg(self, args, port):
        """Starts ffmpeg as an RTMP server on `port` and waits until it listens (without
        connecting: ffmpeg accepts a single connection). Returns (proc, log path), proc None
        when it never listened."""
        log = os.path.join(self.tmp, 'ffmpeg-%d.log' % port)
        proc = start_ffmpeg(args, log)
        self.addCleanup(stop_process, proc)
        if not wait_until(lambda: port_listening(port) or proc.poll() is not None, timeout=10) or proc.poll():
            return None, log
        return proc, log

    def test_publish_into_rill_with_bench_player_and_ffprobe(self):
        with Rill() as rill:
            url = rill.rtmp_url('client')
            pub = start_bench('rtmp-publish', url, '-c', 1, '-i', self.media, '-d', SECONDS + 4)
            self.addCleanup(lambda: pub.poll() is None and pub.kill())
            # The player and ffprobe start once the stream is live (rill-bench retries nothing).
            live = wait_until(lambda: ffprobe_packets(url, read_seconds=1).get('video'), timeout=10)
            self.assertTrue(live, 'the published stream never became readable')
            player = start_bench('rtmp-play', url, '-c', 1, '-d', SECONDS)
            probed = ffprobe_packets(url, read_seconds=2)
            play = finish_bench(player)
            pubr = finish_bench(pub)
        self.assertEqual(pubr['connections']['ok'], 1, pubr)
        self.assertEqual(pubr['errors'], {}, pubr)
        self.assertGreater(pubr['frames']['video'], 25 * SECONDS, pubr)
        self.assertEqual(play['connections']['ok'], 1, play)
        self.assertEqual(play['connections']['with_video'], 1, play)
        self.assertIsNotNone(play['first_keyframe_ms'], play)
        self.assertGreater(play['frames']['video'], 25 * (SECONDS - 1), play)
        self.assertEqual(play['errors'], {}, play)
        self.assertGreater(probed.get('video', 0), 25, probed)
        self.assertGreater(probed.get('audio', 0), 25, probed)
        self.assertEqual(probed.get('video_codec'), 'h264', probed)

    def test_publish_into_ffmpeg_server(self):
        port = free_port()
        out = os.path.join(self.tmp, 'received.flv')
        url = 'rtmp://%s:%d/live/x' % (HOST, port)
        ff, log = self.listen_ffmpeg(['-listen', '1', '-timeout', '20', '-f', 'flv', '-i', url,
                                      '-c', 'copy', '-f', 'flv', '-y', out], port)
        self.assertIsNotNone(ff, 'ffmpeg did not listen on %d: %s' % (port, read_log(log)))
        pub = run_bench('rtmp-publish', url, '-c', 1, '-i', self.media, '-d', SECONDS)
        # The client ends with FCUnpublish + deleteStream and closes: ffmpeg finishes the file.
        self.assertIsNotNone(wait_exit(ff, 15), 'ffmpeg did not finish: %s' % read_log(log))
        self.assertEqual(pub['connections']['ok'], 1, (pub, read_log(log)))
        self.assertEqual(pub['errors'], {}, pub)
        sent = pub['frames']['video']
        self.assertGreater(sent, 25 * (SECONDS - 1), pub)
        got = ffprobe_packets(out)
        self.assertEqual(got.get('video_codec'), 'h264', (got, read_log(log)))
        self.assertEqual(got.get('audio_codec'), 'aac', got)
        # Every frame sent reached the file (the sequence header is a packet to ffprobe too).
        self.assertGreaterEqual(got.get('video', 0), sent - 1, (got, pub))
        self.assertGreater(got.get('audio', 0), 25 * (SECONDS - 1), got)

    def test_play_from_ffmpeg_server(self):
        port = free_port()
        url = 'rtmp://%s:%d/live/x' % (HOST, port)
        ff, log = self.listen_ffmpeg(['-re', '-i', self.media, '-c', 'copy', '-f', 'flv', '-listen', '1',
                                      '-timeout', '20', url], port)
        if ff is None:
            self.skipTest('this ffmpeg does not listen for an RTMP output (-listen 1 on the output URL): %s'
                          % read_log(log)[-500:])
        play = run_bench('rtmp-play', url, '-c', 1, '-d', SECONDS)
        stop_process(ff)
        self.assertEqual(play['connections']['ok'], 1, (play, read_log(log)))
        self.assertEqual(play['connections']['with_video'], 1, play)
        self.assertIsNotNone(play['first_keyframe_ms'], play)
        self.assertGreater(play['frames']['video'], 25 * (SECONDS - 1), play)
        self.assertGreater(play['frames']['audio'], 25 * (SECONDS - 1), play)
        self.assertEqual(play['errors'], {}, play)


if __name__ == '__main__':
    unittest.main()
