"""RTMP integration tests: the real rill daemon driven by ffmpeg, ffprobe, rtmpdump, GStreamer
and the test RTMP client in rtmpclient.py.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_rtmp

Every test starts its own server on free loopback ports and stops every process it started,
also on failure. Test media is made with ffmpeg (lavfi) by rilltest.make_test_media.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import flvutil
import rilltest
import rtmpclient as rc
from rilltest import Rill, wait_until
from test_worker_link import LINK_STATS, link_query

HOST = '127.0.0.1'
MEDIA_SECONDS = 10

_media = None


def setUpModule():
    global _media
    if shutil.which('ffmpeg'):
        _media = rilltest.make_test_media(seconds=MEDIA_SECONDS)


def need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    return unittest.skipIf(missing, 'not installed: %s' % ' '.join(missing))


def stop_process(p, sig=signal.SIGTERM, timeout=5.0):
    """Stop a Popen we started: sig, then SIGKILL after timeout."""
    if p is None:
        return
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
        except ProcessLookupError:
            pass
    rilltest.stop_process(p)  # forgets it in the harness's at-exit list


def vm_rss_kib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise RuntimeError('no VmRSS for pid %d' % pid)


def log_lines_naming(rill, peer, min_info=True):
    """Log lines that name peer ('127.0.0.1:PORT', not a prefix of a longer port number); with
    min_info, only info and above (the harness logs at debug, where every event names the peer)."""
    pat = re.compile(re.escape(peer) + r'(?!\d)')
    quiet = re.compile(r'\[(debug|trace)\]')
    return [l for l in rill.log_text().splitlines()
            if pat.search(l) and not (min_info and quiet.search(l))]


def peer_log(rill, peer, timeout=2.0):
    """The log lines (info and above) naming peer, waiting a little for them to be written;
    for failure messages."""
    wait_until(lambda: log_lines_naming(rill, peer), timeout)
    return '\n'.join(log_lines_naming(rill, peer)) or '(none)'


def ffmpeg_publish_fast(url, media, readrate):
    """ffmpeg publishing MEDIA in a loop at `readrate` times real time (rilltest.ffmpeg_publish
    has no -readrate, which is an input option)."""
    fd, log_path = tempfile.mkstemp(prefix='ffmpeg-publish-', suffix='.log')
    os.close(fd)
    cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'warning',
           '-readrate', str(readrate), '-stream_loop', '-1', '-i', media,
           '-c', 'copy', '-f', 'flv', url]
    with open(log_path, 'ab') as log:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    p.log_path = log_path
    return p


class RtmpTestCase(unittest.TestCase):
    """Starts a Rill per test with the given config overrides; cleans up everything."""

    def start_rill(self, config=None):
        rill = Rill(config)
        rill.__enter__()
        self.addCleanup(self._close_rill, rill)
        self.rill = rill
        self.port = rill.rtmp_port
        return rill

    def _close_rill(self, rill):
        # On failure, keep the temp dir and show the log tail (as the harness's __exit__ does).
        failed = not getattr(self._outcome, 'success', True)
        try:
            if rill.running():
                rill.stop()
        except BaseException:
            failed = True
            raise
        finally:
            if failed:
                sys.stderr.write('\n--- rill log (%s) ---\n%s\n' % (rill.log_path, rill.log_tail()))
            rill.close(failed=failed)

    def publish_ffmpeg(self, stream='test', media=None):
        p = rilltest.ffmpeg_publish(self.rill.rtmp_url(stream), media or _media, loop=True)
        self.addCleanup(stop_process, p)
        return p

    def player(self, stream='test', **kw):
        p = rc.Player(HOST, self.port, 'live', stream, **kw)
        self.addCleanup(p.stop)
        return p.start()

    def wait_playing(self, stream='test', timeout=15.0):
        """A Player that receives video from `stream` (retried while the publisher comes up)."""
        deadline = time.monotonic() + timeout
        while True:
            p = rc.Player(HOST, self.port, 'live', stream)
            try:
                p.start()
            except Exception:
                p.stop()
                raise
            ok = wait_until(lambda: p.video_frame_count() > 0 or p.closed or
                            'NetStream.Play.StreamNotFound' in p.statuses,
                            timeout=max(0.1, min(3.0, deadline - time.monotonic())))
            if ok and p.video_frame_count() > 0:
                self.addCleanup(p.stop)
                return p
            p.stop()
            if time.monotonic() >= deadline:
                log = [l for l in self.rill.log_text().splitlines()
                       if not re.search(r'\[(debug|trace)\]', l)]
                self.fail('no video from %s within %.0fs (statuses %r)\nlog:\n%s' % (
                    stream, timeout, p.statuses, '\n'.join(log[-30:])))
            time.sleep(0.2)

    def assert_no_gap(self, player, start, limit=1.0, end=None):
        gap = player.max_gap(start, end)
        self.assertLess(gap, limit, 'healthy player saw a %.2fs gap in media' % gap)
        self.assertIsNone(player.error, 'healthy player error: %r' % (player.error,))
        self.assertFalse(player.closed, 'healthy player was disconnected')

    def assert_server_alive(self, workers_before=None):
        os.kill(self.rill.pid, 0)  # raises if the master is gone
        if workers_before is not None:
            self.assertEqual(sorted(self.rill.worker_pids()), sorted(workers_before),
                             'a worker died and was respawned')

    def ffprobe(self, url_or_path, timeout=20):
        r = subprocess.run(['ffprobe', '-v', 'error', '-show_streams', '-of', 'json',
                            url_or_path], capture_output=True, text=True, timeout=timeout)
        return r

    def assert_h264_aac(self, probe, width=640, height=360, rate='25/1'):
        self.assertEqual(probe.returncode, 0, probe.stderr)
        streams = json.loads(probe.stdout)['streams']
        video = [s for s in streams if s['codec_type'] == 'video']
        audio = [s for s in streams if s['codec_type'] == 'audio']
        self.assertEqual(len(video), 1, streams)
        self.assertEqual(len(audio), 1, streams)
        self.assertEqual(video[0]['codec_name'], 'h264')
        self.assertEqual((video[0]['width'], video[0]['height']), (width, height))
        if rate:
            self.assertEqual(video[0]['r_frame_rate'], rate)
        self.assertEqual(audio[0]['codec_name'], 'aac')


# ---------------------------------------------------------------------------------------------
# Real peers

@need('ffmpeg', 'ffprobe')
class FfmpegTest(RtmpTestCase):
    def test_ffmpeg_publish_ffprobe_play(self):
        self.start_rill()
        self.publish_ffmpeg('test')
        self.wait_playing('test')
        probe = self.ffprobe(self.rill.rtmp_url('test'))
        self.assertEqual(probe.stderr.strip(), '', 'ffprobe reported errors')
        self.assert_h264_aac(probe)


@need('ffmpeg', 'ffprobe', 'rtmpdump')
class RtmpdumpTest(RtmpTestCase):
    def test_rtmpdump_writes_valid_flv(self):
        self.start_rill()
        self.publish_ffmpeg('test')
        self.wait_playing('test')
        tmp = tempfile.mkdtemp(prefix='rill-rtmpdump-')
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, 'out.flv')
        p = subprocess.Popen(['rtmpdump', '-r', self.rill.rtmp_url('test'), '-v', '-B', '5',
                              '-o', out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(stop_process, p, signal.SIGKILL)
        try:
            _, err = p.communicate(timeout=8)
        except subprocess.TimeoutExpired:
            # -B is measured in stream time; stop it ourselves (rtmpdump closes the file
            # cleanly on SIGINT).
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=5)
        err = err.decode('utf-8', 'replace')
        self.assertIn(p.returncode, (0, 2), 'rtmpdump failed:\n' + err[-2000:])
        self.assertTrue(os.path.exists(out), 'rtmpdump (exit %d) wrote no file:\n%s' % (
            p.returncode, err[-2000:]))
        self.assertGreater(os.path.getsize(out), 50000, err[-2000:])
        probe = self.ffprobe(out)
        self.assertEqual(probe.stderr.strip(), '', 'ffprobe errors on the rtmpdump file')
        self.assert_h264_aac(probe, rate=None)
        flv = flvutil.parse_file(out)
        self.assertTrue(flv.has_video, 'no video tags')
        self.assertTrue(flv.has_audio, 'no audio tags')
        self.assertTrue(flv.video_seq_header_first(), 'first video tag is not a sequence header')
        self.assertTrue(flv.first_video_frame().is_keyframe, 'first video frame not a keyframe')
        self.assertGreater(len(flv.keyframes()), 1)
        self.assertEqual(flv.timestamps_backwards(flvutil.TAG_VIDEO), [])


@need('gst-launch-1.0', 'ffprobe')
class GstreamerTest(RtmpTestCase):
    def test_gstreamer_rtmp2sink_publish(self):
        self.start_rill()
        url = self.rill.rtmp_url('gst')
        pipeline = (
            'filesrc location={media} ! flvdemux name=d '
            'd.video ! queue ! h264parse ! identity sync=true ! '
            'flvmux name=m streamable=true ! rtmp2sink location={url} '
            'd.audio ! queue ! aacparse ! identity sync=true ! m.'
        ).format(media=_media, url=url)
        log_path = os.path.join(self.rill.tmpdir, 'gst-launch.log')
        with open(log_path, 'wb') as log:
            p = subprocess.Popen(['gst-launch-1.0', '-q'] + pipeline.split(),
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(stop_process, p, signal.SIGINT)

        def gst_log():
            with open(log_path, errors='replace') as f:
                return f.read()[-2000:]
        # The file lasts MEDIA_SECONDS at real time: probe while it is still being sent.
        self.wait_playing('gst', timeout=MEDIA_SECONDS - 4)
        probe = self.ffprobe(url, timeout=MEDIA_SECONDS)
        self.assertIsNone(p.poll(), 'gst-launch exited early:\n' + gst_log())
        # No frame rate check: rtmp2sink's own timestamps jitter (audio 69 and 93 go out as
        # 103, as nginx-rtmp shows too), and ffprobe's r_frame_rate guess then varies.
        self.assert_h264_aac(probe, rate=None)


# ---------------------------------------------------------------------------------------------
# Stream semantics

@need('ffmpeg')
class StreamTest(RtmpTestCase):
    def test_late_joiner_starts_with_keyframe_from_gop_cache(self):
        self.start_rill()
        self.publish_ffmpeg('test')
        first = self.wait_playing('test')
        t0 = first.media[0].arrival
        # The publisher has been running for > 3 s (GOP is 2 s, so the cache is mid-GOP).
        wait_until(lambda: time.monotonic() - t0 > 3.3, timeout=5)
        late = self.player('test')
        self.assertTrue(wait_until(lambda: late.first_video_after_seq_header() is not None,
                                   timeout=3), 'late joiner got no video: %r' % late.snapshot()[:5])
        v = late.first_video_after_seq_header()
        self.assertTrue(v.keyframe, 'first video frame after the sequence header is not a '
                        'keyframe: %r' % late.video_frames(True)[:3])
        delay = v.arrival - late.play_sent
        self.assertLess(delay, 1.0, 'first keyframe %.3fs after play' % delay)
        seq = [m for m in late.snapshot() if m.type == rc.MSG_VIDEO][0]
        self.assertTrue(seq.seq_header, 'first video message is not the AVC sequence header')

    def test_without_gop_cache_a_late_joiner_still_starts_at_a_keyframe(self):
        # gop_cache: false sends live frames at once: the player must skip inter frames until the
        # next keyframe (nginx-rtmp's wait_key), on RTMP and on HTTP-FLV alike.
        self.start_rill({'apps': {'live': {'gop_cache': False}}})
        self.publish_ffmpeg('test')
        first = self.wait_playing('test')
        t0 = first.media[0].arrival
        wait_until(lambda: time.monotonic() - t0 > 3.3, timeout=5)  # mid-GOP (GOP is 2 s)
        late = self.player('test')
        self.assertTrue(wait_until(lambda: late.first_video_after_seq_header() is not None,
                                   timeout=4), 'late joiner got no video: %r' % late.snapshot()[:5])
        v = late.first_video_after_seq_header()
        self.assertTrue(v.keyframe, 'first video frame after the sequence header is not a '
                        'keyframe: %r' % late.video_frames(True)[:3])
        r = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v', '-read_intervals', '%+#3',
                            '-show_entries', 'packet=flags', '-of', 'csv=p=0',
                            'http://127.0.0.1:%d/live/test.flv' % self.rill.http_port],
                           capture_output=True, text=True, timeout=20)
        flags = r.stdout.split()
        self.assertTrue(flags, 'ffprobe read no video packet over HTTP-FLV: %s' % r.stderr)
        self.assertTrue(flags[0].startswith('K'), 'first HTTP-FLV video packet flags %r' % flags[:3])

    def test_late_joiner_after_queue_hard_duration(self):
        # The GOP cache's metadata and sequence headers carry the timestamps of when they were
        # published; a player joining later than queue.hard_duration after them must not be
        # taken for a slow consumer.
        self.start_rill({'apps': {'live': {'queue': {'soft_duration': '1s',
                                                     'hard_duration': '2s'}}}})
        self.publish_ffmpeg('test')
        first = self.wait_playing('test')
        t0 = first.media[0].arrival
        wait_until(lambda: time.monotonic() - t0 > 3.0, timeout=5)
        late = self.player('test')
        self.assertTrue(wait_until(lambda: late.video_frame_count() > 25, timeout=3),
                        'late joiner got %d video frames, statuses %r, closed %s; log:\n%s' % (
                            late.video_frame_count(), late.statuses, late.closed,
                            peer_log(self.rill, late.conn.peer_name)))
        self.assertTrue(late.first_video_is_keyframe())
        self.assertFalse(late.closed)

    def test_second_publisher_gets_badname(self):
        self.start_rill()
        ff = self.publish_ffmpeg('test')
        healthy = self.wait_playing('test')
        start = time.monotonic()
        frames_before = healthy.video_frame_count()
        c, sid, info = rc.connect_and_publish(HOST, self.port, 'live', 'test', wait=False)
        self.addCleanup(c.close)
        info = c.wait_status(timeout=5)
        self.assertEqual(info.get('code'), 'NetStream.Publish.BadName', info)
        self.assertEqual(info.get('level'), 'error', info)
        time.sleep(2.0)
        self.assertIsNone(ff.poll(), 'first publisher (ffmpeg) was disconnected')
        self.assertGreater(healthy.video_frame_count(), frames_before + 25)
        self.assert_no_gap(healthy, start)

    def test_publisher_restart_keeps_player(self):
        self.start_rill({'apps': {'live': {'publisher_idle_timeout': '10s'}}})
        ff = self.publish_ffmpeg('test')
        player = self.wait_playing('test')
        time.sleep(1.0)
        n_status = len(player.statuses)
        stop_process(ff, signal.SIGTERM)
        self.assertTrue(player.wait_status('NetStream.Play.UnpublishNotify', 5, n_status),
                        'no UnpublishNotify; statuses %r' % player.statuses)
        frames_before = player.video_frame_count()
        n_status = len(player.statuses)
        time.sleep(1.0)
        self.publish_ffmpeg('test')
        self.assertTrue(player.wait_status('NetStream.Play.PublishNotify', 10, n_status),
                        'no PublishNotify; statuses %r' % player.statuses)
        self.assertTrue(wait_until(lambda: player.video_frame_count() > frames_before + 25,
                                   timeout=8), 'no media after the publisher returned')
        self.assertFalse(player.closed)
        self.assertIsNone(player.error)
        back = player.timestamps_backwards()
        self.assertEqual(back, [], 'timestamps went backwards: %r' % back[:3])

    def test_unknown_stream_not_found(self):
        self.start_rill({'apps': {'live': {'play_wait': '0s'}}})
        c = rc.RtmpConnection(HOST, self.port)
        self.addCleanup(c.close)
        res, vals = c.connect('live')
        self.assertEqual(res, '_result', vals)
        sid = c.create_stream()
        t0 = time.monotonic()
        c.play('nosuchstream', sid)
        info = c.wait_status(('NetStream.Play.StreamNotFound', 'NetStream.Play.Start'), 3)
        self.assertEqual(info.get('code'), 'NetStream.Play.StreamNotFound', info)
        self.assertLess(time.monotonic() - t0, 1.0)


# ---------------------------------------------------------------------------------------------
# Connection limit

class ConnectionLimitTest(RtmpTestCase):

    def open_flv_waiters(self, count):
        """HTTP-FLV players of a stream nobody publishes: they wait (play_wait), connected."""
        socks = []
        for _ in range(count):
            s = socket.create_connection((HOST, self.rill.http_port), timeout=5)
            self.addCleanup(s.close)
            s.sendall(b'GET /live/nobody.flv HTTP/1.1\r\nHost: x\r\n\r\n')
            socks.append(s)
        return socks

    def open_worker_links(self, count):
        """Connections on the worker's relay socket that have not sent their request yet."""
        socks = []
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.addCleanup(s.close)
            s.connect(os.path.join(self.rill.runtime_dir, 'worker-0.sock'))
            s.sendall(b'STATS')  # no newline: the request stays pending
            socks.append(s)
        return socks

    def worker_stats(self):
        ftype, body = link_query(self.rill, 0, 'STATS')
        self.assertEqual(ftype, LINK_STATS, body)
        return json.loads(body)

    def rtmp_client(self):
        c = rc.RtmpConnection(HOST, self.port, timeout=5)
        self.addCleanup(c.close)
        return c

    def test_max_connections_counts_rtmp_sessions_only(self):
        self.start_rill({'rtmp': {'max_connections': 3}, 'apps': {'live': {'play_wait': '30s'}}})
        self.open_flv_waiters(4)
        self.open_worker_links(2)
        # 4 HTTP-FLV sessions and 2 worker links (and this query) are open, no RTMP session yet.
        ok = wait_until(lambda: (lambda st: st['sessions'] >= 4 and st['link_connections'] >= 3 and
                                 st['connections']['rtmp'] == 0)(self.worker_stats()), 5)
        self.assertTrue(ok, self.worker_stats())
        admitted = []
        for _ in range(3):
            c = self.rtmp_client()
            res, vals = c.connect('live')
            self.assertEqual(res, '_result', vals)
            admitted.append(c)
        self.assertEqual(self.worker_stats()['connections']['rtmp'], 3)
        fourth = self.rtmp_client()
        self.assertTrue(fourth.wait_closed(5), 'the fourth RTMP client was not refused')
        self.assertTrue(self.rill.wait_for_log(r'rtmp: .* refused: worker connection limit 3 reached', 5))
        # A closed RTMP session frees its place.
        admitted[0].close()
        self.assertTrue(wait_until(lambda: self.worker_stats()['connections']['rtmp'] == 2, 5))
        res, vals = self.rtmp_client().connect('live')
        self.assertEqual(res, '_result', vals)


# ---------------------------------------------------------------------------------------------
# Hostile and slow peers

@need('ffmpeg')
class BadInputTest(RtmpTestCase):
    MAX_MESSAGE = 1024 * 1024

    def setUp(self):
        self.start_rill({'rtmp': {'handshake_timeout': '1s', 'max_message_size': '1MiB'}})
        self.publish_ffmpeg('test')
        self.healthy = self.wait_playing('test')
        self.start = time.monotonic()
        self.workers = self.rill.worker_pids()

    def conn(self):
        c = rc.RtmpConnection(HOST, self.port, timeout=5)
        self.addCleanup(c.close)
        return c

    def connected(self):
        c = self.conn()
        res, vals = c.connect('live')
        self.assertEqual(res, '_result', vals)
        return c

    def assert_closed_and_logged(self, c, peer, words, timeout=5.0):
        self.assertTrue(c.wait_closed(timeout), 'server did not close %s' % peer)
        self.assert_logged(peer, words)

    def assert_logged(self, peer, words):
        ok = wait_until(lambda: log_lines_naming(self.rill, peer), timeout=3)
        lines = log_lines_naming(self.rill, peer)
        self.assertTrue(ok and lines, 'no log line names %s; log tail:\n%s' % (
            peer, self.rill.log_text()[-3000:]))
        text = '\n'.join(lines).lower()
        self.assertTrue(any(w in text for w in words),
                        'log lines for %s give no reason (%s):\n%s' % (peer, words, text))

    def tearDown(self):
        # Checked for every case: the server survived and the healthy player never stalled.
        self.assert_server_alive(self.workers)
        self.assert_no_gap(self.healthy, self.start)

    def test_garbage_instead_of_handshake(self):
        c = self.conn()
        peer = c.peer_name
        c.send_raw(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n' + os.urandom(4000))
        self.assert_closed_and_logged(c, peer, ('handshake', 'version'))

    def test_truncated_handshake_then_close(self):
        c = self.conn()
        c.send_raw(b'\x03' + os.urandom(768))
        time.sleep(0.2)
        c.close()
        # And a second one left open: closed after handshake_timeout (1 s).
        c = self.conn()
        peer = c.peer_name
        c.send_raw(b'\x03' + os.urandom(768))
        t0 = time.monotonic()
        self.assertTrue(c.wait_closed(5), 'half handshake not closed after handshake_timeout')
        elapsed = time.monotonic() - t0
        # Closed at handshake_timeout: not before, and not a whole timeout period late.
        self.assertGreater(elapsed, 0.9)
        self.assertLess(elapsed, 1.6, 'half handshake closed %.2fs after it began '
                        '(handshake_timeout 1s)' % elapsed)
        self.assert_logged(peer, ('handshake', 'timeout', 'timed out'))

    def test_message_length_0xffffff(self):
        c = self.connected()
        peer = c.peer_name
        c.send_raw(rc.chunk_header(0, 3, 0, 0xFFFFFF, rc.MSG_COMMAND_AMF0, 0) + b'\x02' * 128)
        self.assert_closed_and_logged(c, peer, ('size', 'large', 'length', 'limit', 'long'))

    def test_message_length_above_limit(self):
        c = self.connected()
        peer = c.peer_name
        c.send_raw(rc.chunk_header(0, 6, 0, self.MAX_MESSAGE + 1, rc.MSG_VIDEO, 1) +
                   b'\x17' * 128)
        self.assert_closed_and_logged(c, peer, ('size', 'large', 'length', 'limit', 'long'))

    def test_set_chunk_size_zero(self):
        c = self.connected()
        peer = c.peer_name
        c.set_chunk_size(0, apply=False)
        self.assert_closed_and_logged(c, peer, ('chunk',))

    def test_set_chunk_size_huge(self):
        c = self.connected()
        peer = c.peer_name
        c.set_chunk_size(0x7FFFFFFF, apply=False)
        self.assert_closed_and_logged(c, peer, ('chunk',))

    def test_amf_nested_10000_deep(self):
        c = self.connected()
        peer = c.peer_name
        payload = rc.amf0_encode('someCommand', 5, None) + rc.amf0_nested_objects(10000)
        c.send_message(rc.MSG_COMMAND_AMF0, payload)
        self.assert_closed_and_logged(c, peer, ('amf', 'depth', 'deep', 'nest'))

    def test_unknown_command_keeps_connection(self):
        c = self.connected()
        txn = c.next_txn()
        c.send_command('noSuchCommand', txn, None, 'arg')
        # Answered with _error, or ignored: either way the connection stays usable.
        try:
            name, vals = c.wait_result(txn, timeout=1.0)
            self.assertEqual(name, '_error', vals)
        except socket.timeout:
            pass
        sid = c.create_stream(timeout=3)
        self.assertGreater(sid, 0)
        c.play('test', sid)
        info = c.wait_status('NetStream.Play.Start', timeout=3)
        self.assertEqual(info.get('code'), 'NetStream.Play.Start')

    def test_connect_unknown_app_rejected(self):
        c = self.conn()
        peer = c.peer_name
        try:
            res, vals = c.connect('nosuchapp')
        except rc.ConnectionClosed:
            self.fail('server closed the connection without an _error answer')
        self.assertEqual(res, '_error', vals)
        info = rc.status_info(['_error', 0] + vals)
        self.assertEqual(info.get('code'), 'NetConnection.Connect.Rejected', vals)
        self.assert_closed_and_logged(c, peer, ('app', 'reject', 'unknown'))


@need('ffmpeg')
class SlowConsumerTest(RtmpTestCase):
    def test_slow_consumer_is_disconnected_memory_bounded(self):
        self.start_rill({'apps': {'live': {'queue': {
            'soft_bytes': '512KiB', 'hard_bytes': '2MiB',
            'soft_duration': '1s', 'hard_duration': '3s'}}}})
        # Published at 8x real time (~6 Mbit/s): at the media's real 0.75 Mbit/s, 10 s of it
        # (~1 MB) would sit entirely in the loopback socket buffers (the server's send buffer
        # autotunes to 4 MiB) and the server's queue would never see a backlog.
        pub = ffmpeg_publish_fast(self.rill.rtmp_url('test'), _media, 8)
        self.addCleanup(os.unlink, pub.log_path)
        self.addCleanup(stop_process, pub)
        healthy = self.wait_playing('test')
        workers = self.rill.worker_pids()
        self.assertEqual(len(workers), 1)
        worker = workers[0]
        time.sleep(0.5)
        rss0 = vm_rss_kib(worker)
        start = time.monotonic()

        slow = rc.RtmpConnection(HOST, self.port, rcvbuf=4096)
        self.addCleanup(slow.close)
        peer = slow.peer_name
        res, vals = slow.connect('live')
        self.assertEqual(res, '_result', vals)
        sid = slow.create_stream()
        slow.play('test', sid)
        # It plays normally at first...
        try:
            info = slow.wait_status(('NetStream.Play.Start', 'NetStream.Play.StreamNotFound'), 3)
            self.assertEqual(info.get('code'), 'NetStream.Play.Start', info)
            slow.read_until(lambda m: m.type == rc.MSG_VIDEO and not rc.is_video_seq_header(
                m.payload), timeout=3)
        except rc.ConnectionClosed:
            self.fail('slow consumer disconnected before it fell behind; log:\n%s' %
                      peer_log(self.rill, peer))
        # ...then stops reading for 10 s, while we sample the worker's RSS.
        rss_max = rss0
        t_end = time.monotonic() + 10
        while time.monotonic() < t_end:
            rss_max = max(rss_max, vm_rss_kib(worker))
            time.sleep(0.25)
        grew_mb = (rss_max - rss0) / 1024.0
        self.assertLess(grew_mb, 30, 'worker RSS grew by %.1f MB' % grew_mb)
        self.assertTrue(slow.wait_closed(5), 'slow consumer not disconnected')
        lines = log_lines_naming(self.rill, peer)
        text = '\n'.join(lines).lower()
        self.assertTrue(any(w in text for w in ('slow', 'queue', 'behind', 'lag', 'hard')),
                        'no log line about the slow consumer %s:\n%s' % (
                            peer, self.rill.log_text()[-3000:]))
        self.assert_no_gap(healthy, start)
        self.assert_server_alive(workers)


# ---------------------------------------------------------------------------------------------
# The client library itself (no server): chunk reader corner cases against crafted bytes.

class ClientSelfTest(unittest.TestCase):
    def reader(self, data):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        c = rc.RtmpConnection(connect=False)
        c.sock = a
        b.sendall(data)
        b.shutdown(socket.SHUT_WR)
        return c

    def test_chunk_reader(self):
        out = bytearray(rc.chunk_message(struct.pack('>I', 16), rc.MSG_SET_CHUNK_SIZE, csid=2))
        pay = bytes(range(40))
        ext = 0x1000000
        out += rc.chunk_header(0, 6, ext, 40, rc.MSG_VIDEO, 1) + pay[:16]
        out += rc.chunk_header(0, 4, 5, 4, rc.MSG_AUDIO, 1) + b'AUD0'      # interleaved
        out += rc.chunk_header(3, 6, extended=ext) + pay[16:32]             # ext repeated
        out += rc.chunk_header(3, 6, extended=ext) + pay[32:]
        out += rc.chunk_header(2, 4, 40) + b'AUD1'
        out += rc.chunk_header(3, 4) + b'AUD2'                              # delta repeats
        out += rc.chunk_header(1, 4, 0xFFFFFF + 5, 3, rc.MSG_AUDIO) + b'xyz'
        out += rc.chunk_header(3, 4, extended=0xFFFFFF + 5) + b'abc'
        out += rc.chunk_header(0, 400, 7, 2, rc.MSG_DATA_AMF0, 0) + b'\x05\x05'
        c = self.reader(out)
        got = [c.read_message(1) for _ in range(8)]
        self.assertEqual(c.in_chunk_size, 16)
        self.assertEqual([(m.type, m.timestamp, m.csid) for m in got[1:]], [
            (8, 5, 4), (9, ext, 6), (8, 45, 4), (8, 85, 4), (8, 85 + 0xFFFFFF + 5, 4),
            (8, 85 + 2 * (0xFFFFFF + 5), 4), (18, 7, 400)])
        self.assertEqual(got[2].payload, pay)
        with self.assertRaises(rc.ConnectionClosed):
            c.read_message(1)

    def test_amf0_round_trip(self):
        vals = ['connect', 1, {'app': 'live', 'n': 1.5, 'b': True, 'z': None,
                               'u': rc.UNDEFINED, 'e': rc.EcmaArray(k='v'), 's': [1, 'x']},
                None, 'x' * 70000]
        self.assertEqual(rc.amf0_decode(rc.amf0_encode(*vals)), vals)
        deep = rc.amf0_nested_objects(100)
        with self.assertRaises(rc.AmfError):
            rc.amf0_decode(deep)
        self.assertEqual(len(rc.amf0_decode(deep, max_depth=200)), 1)

    def test_flv_parser(self):
        tag = lambda t, ts, data: (bytes([t]) + len(data).to_bytes(3, 'big') +
                                   (ts & 0xFFFFFF).to_bytes(3, 'big') + bytes([ts >> 24]) +
                                   b'\x00\x00\x00' + data + struct.pack('>I', 11 + len(data)))
        data = (b'FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00' +
                tag(9, 0, b'\x17\x00\x00\x00\x00abc') + tag(8, 0, b'\xaf\x00\x12\x10') +
                tag(9, 40, b'\x17\x01\x00\x00\x00xyz') + tag(8, 0x1000023, b'\xaf\x01zz'))
        f = flvutil.parse_bytes(data + b'\x09\x00')
        self.assertTrue(f.truncated)
        self.assertEqual(len(f.tags), 4)
        self.assertTrue(f.video_seq_header_first())
        self.assertTrue(f.first_video_frame().is_keyframe)
        self.assertEqual(f.tags[3].timestamp, 0x1000023)
        self.assertTrue(f.has_audio and f.has_video)


if __name__ == '__main__':
    unittest.main()
