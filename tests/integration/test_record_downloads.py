"""Recording downloads with the real daemon (docs/recording.md, "Playback"; server/recording_download.h):
ffmpeg publishes 4 s of high-bitrate lavfi noise (about 40 MB, as fast as it sends) to an app that
records it as one fMP4 file. /recordings/{id}/{file} sends that file, larger than 32 MiB, whole and
byte-identical with its Content-Length, and a Range across its middle; If-None-Match gets 304 (so does
If-Modified-Since with the Last-Modified date, unless an If-None-Match is there) and
If-Range a 206 when it matches, the whole file (200) when it does not, on /recordings and on
recording.mp4 (whose strong ETag is the same for the same request). Slow readers (64 KiB/s for 2 s)
keep the worker's RSS bounded (the body streams, 256 KiB queued per download at most; not checked
under ASan, whose allocator holds what is freed), are listed
by /api/v1/clients (proto download) and counted by rill_connections while they run, and are gone
once their clients leave. A reload's retiring worker keeps a download that is still being read and
exits once it has been sent whole, even when its client reads slowly for longer than
shutdown_timeout. A client that stops reading is closed once it took no byte for
http.timeout (2 s here; the access log says `send timeout`, rill_download_send_timeouts_total counts
it once), while a slow reader beside it goes on and gets the file whole.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_record_downloads
"""

import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import unittest
import urllib.parse

import rilltest
from rilltest import Rill, http_get, require_tool, wait_until
from test_memory import rss_kb, sanitized

SECONDS = 4
SLOW_READERS = 4
SLOW_RATE = 64 * 1024  # bytes a second each
SLOW_SECONDS = 2.0
HTTP_TIMEOUT = 2.0  # http.timeout: a download whose client takes nothing for this long is closed
SHUTDOWN_TIMEOUT = 2.0  # how long a retiring worker keeps an idle session


def make_noise_media(path):
    """4 s of 640x360 25 fps noise, H.264 at qp 4 (about 85 Mbps) and AAC: about 40 MB."""
    cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
           '-f', 'lavfi', '-i', 'color=gray:s=640x360:r=25,noise=alls=100:allf=t+u',
           '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', str(SECONDS),
           '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-qp', '4', '-g', '25',
           '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '64k', '-f', 'flv', path]
    rilltest.run(cmd, timeout=60, check=True)


def fetch(port, path, headers=None, method='GET'):
    """(status, headers, sha256 hex, length) of a response, its body hashed as it arrives."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        digest, length = hashlib.sha256(), 0
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            digest.update(chunk)
            length += len(chunk)
        return resp.status, dict(resp.getheaders()), digest.hexdigest(), length
    finally:
        conn.close()


def read_to_end(sock, received):
    """Appends what `sock` receives to `received` until the server closes."""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return
        received += chunk


class SlowReader:
    """Reads `sock` at `rate` bytes a second on a thread of its own, whatever the test does
    meanwhile (a reload, API requests), until stop() or the end of the response."""

    def __init__(self, sock, rate, step=0.125):
        self.sock, self.chunk, self.step = sock, int(rate * step), step
        self.received = bytearray()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            try:
                data = self.sock.recv(self.chunk)
            except OSError:
                return
            if not data:
                return
            self.received += data
            self.done.wait(self.step)

    def stop(self):
        """What was read so far; the socket is the caller's again."""
        self.done.set()
        self.thread.join(10)
        return self.received


class RecordDownloadsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        cls.dir = tempfile.mkdtemp(prefix='rill-downloads-')
        media = os.path.join(cls.dir, 'noise.flv')
        make_noise_media(media)
        cls.access_log = os.path.join(cls.dir, 'access.log')
        cls.rill = Rill({'http': {'timeout': '%gs' % HTTP_TIMEOUT}, 'shutdown_timeout': '%gs' % SHUTDOWN_TIMEOUT,
                         'log': {'access_log': cls.access_log, 'access_format': 'json'},
                         'apps': {'rec': {'record': {
                             'mode': 'all', 'segment': '0s', 'serve': True,
                             'path': os.path.join(cls.dir, '{app}', '{name}-{start:%H-%M-%S}')}}}})
        try:
            rilltest.ffmpeg_publish(cls.rill.rtmp_url('cam', app='rec'), media, loop=False,
                                    realtime=False).wait(timeout=60)
            found = []

            def done():
                status, _, body = http_get(cls.rill.api_url('/api/v1/recordings?app=rec'))
                found[:] = json.loads(body).get('items', []) if status == 200 else []
                return len(found) == 1 and found[0]['state'] == 'complete'
            if not wait_until(done, 20, 0.2):
                raise AssertionError('recordings: %r\n%s' % (found, cls.rill.log_tail()))
            cls.item = found[0]
            with open(cls.item['path'], 'rb') as f:
                cls.data = f.read()
        except BaseException:
            cls.rill.close()
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.rill.close()
        shutil.rmtree(cls.dir, ignore_errors=True)  # about 80 MB: the media and its recording

    def path(self):
        return '/recordings/%s/%s' % (self.item['id'], os.path.basename(self.item['path']))

    def downloads(self):
        status, _, body = http_get(self.rill.api_url('/api/v1/clients'))
        self.assertEqual(status, 200)
        return [c for c in json.loads(body)['items'] if c['proto'] == 'download']

    def get(self, path, headers=None, method='GET'):
        return fetch(self.rill.http_port, path, headers, method)

    def test_file_past_32_mib_whole_and_a_range_across_the_middle(self):
        size = len(self.data)
        self.assertGreater(size, 32 << 20)
        status, headers, digest, length = self.get(self.path())
        self.assertEqual(status, 200)
        self.assertEqual(int(headers['Content-Length']), size)
        self.assertEqual((length, digest), (size, hashlib.sha256(self.data).hexdigest()))
        first, last = 10 << 20, size - (5 << 20)
        status, headers, digest, length = self.get(self.path(), {'Range': 'bytes=%d-%d' % (first, last)})
        self.assertEqual(status, 206)
        self.assertEqual(headers['Content-Range'], 'bytes %d-%d/%d' % (first, last, size))
        self.assertEqual((length, digest), (last - first + 1, hashlib.sha256(self.data[first:last + 1]).hexdigest()))

    def check_conditionals(self, path, whole_digest, size):
        status, headers, _, _ = self.get(path, method='HEAD')
        self.assertEqual(status, 200)
        etag, date = headers['ETag'], headers['Last-Modified']
        self.assertRegex(etag, r'^"[^"]+"$')  # strong
        self.assertEqual(self.get(path, method='HEAD')[1]['ETag'], etag)  # the same request, the same tag
        status, headers, _, length = self.get(path, {'If-None-Match': 'W/"other", ' + etag})
        self.assertEqual((status, length, headers['ETag']), (304, 0, etag))
        self.assertEqual(self.get(path, {'If-None-Match': '"other"'})[0], 200)
        # If-Modified-Since (§13.1.3): 304 from the Last-Modified date on, ignored under If-None-Match.
        status, headers, _, length = self.get(path, {'If-Modified-Since': date})
        self.assertEqual((status, length, headers['ETag']), (304, 0, etag))
        self.assertEqual(self.get(path, {'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'})[0], 200)
        self.assertEqual(self.get(path, {'If-Modified-Since': 'not a date'})[0], 200)
        self.assertEqual(self.get(path, {'If-None-Match': '"other"', 'If-Modified-Since': date})[0], 200)
        for validator in (etag, date):
            status, headers, _, length = self.get(path, {'Range': 'bytes=100-199', 'If-Range': validator})
            self.assertEqual((status, length, headers.get('Content-Range')), (206, 100, 'bytes 100-199/%d' % size))
        for validator in ('"other"', 'W/' + etag, 'Thu, 01 Jan 1970 00:00:00 GMT'):
            status, headers, digest, length = self.get(path, {'Range': 'bytes=100-199', 'If-Range': validator})
            self.assertEqual((status, length, digest), (200, size, whole_digest), validator)
            self.assertNotIn('Content-Range', headers)

    def test_conditionals_on_the_file(self):
        self.check_conditionals(self.path(), hashlib.sha256(self.data).hexdigest(), len(self.data))

    def test_conditionals_on_recording_mp4(self):
        path = '/rec/cam/recording.mp4?' + urllib.parse.urlencode({'duration': '2'})
        status, headers, digest, size = self.get(path)
        self.assertEqual(status, 200, self.rill.log_tail())
        self.assertEqual(int(headers['Content-Length']), size)
        self.check_conditionals(path, digest, size)

    def test_reload_waits_for_a_download(self):
        old = set(self.rill.worker_pids())
        s = self.open_download(64 * 1024)
        reader = SlowReader(s, 64 * 1024)  # all along, the reload included
        try:
            self.assertTrue(self.rill.reload())
            self.assertTrue(wait_until(lambda: set(self.rill.worker_pids()) - old, 10), self.rill.log_tail())
            # At 64 KiB/s for shutdown_timeout + 1 s: the old worker retires meanwhile, and waits,
            # while what the kernel took (bytes_out) stands still as it is read out.
            time.sleep(SHUTDOWN_TIMEOUT + 1)
            self.assertTrue(old <= set(self.rill.worker_pids()), 'the retiring worker left during the download')
            received = reader.stop()
            read_to_end(s, received)
        finally:
            reader.stop()
            s.close()
        self.assert_whole_file(received)
        self.assertTrue(wait_until(lambda: not old & set(self.rill.worker_pids()), 10),
                        'the retiring worker stayed after its download ended')

    def test_slow_readers_hold_little_memory_and_are_listed(self):
        worker = self.rill.worker_pids()[0]
        before = rss_kb(worker)
        request = ('GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' % self.path()).encode()
        readers = []
        for _ in range(SLOW_READERS):
            s = socket.create_connection(('127.0.0.1', self.rill.http_port), timeout=5)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            s.sendall(request)
            readers.append(s)
        listed, peak, got = [], before, [0] * SLOW_READERS
        try:
            step = 0.125
            for _ in range(int(SLOW_SECONDS / step)):  # 64 KiB/s each: 8 KiB every 1/8 s
                t = time.monotonic()
                for i, s in enumerate(readers):
                    got[i] += len(s.recv(int(SLOW_RATE * step)))
                peak = max(peak, rss_kb(worker))
                time.sleep(max(0.0, step - (time.monotonic() - t)))
            listed = self.downloads()
            status, _, body = http_get(self.rill.api_url('/metrics'))
            self.assertIn('rill_connections{proto="download"} %d' % SLOW_READERS, body.decode())
            # Counted as accepted too, under the same label (each test before this one downloads).
            accepted = re.search(r'^rill_connections_accepted_total\{proto="download"\} (\d+)$', body.decode(), re.M)
            self.assertGreaterEqual(int(accepted.group(1)) if accepted else 0, SLOW_READERS, body.decode())
        finally:
            for s in readers:
                s.close()
        self.assertEqual(len(listed), SLOW_READERS, listed)
        for c in listed:
            self.assertEqual((c['kind'], c['proto'], c['app'], c['name']), ('player', 'download', 'rec', 'cam'))
        self.assertTrue(all(0 < g < len(self.data) // 4 for g in got), got)
        # Each download queues at most 256 KiB (plus a 128 KiB piece being read); the old answer
        # read up to 32 MiB into memory per request. Not under ASan: its quarantine holds every
        # piece freed (test_memory.sanitized).
        if not sanitized(rilltest.rill_binary()):
            self.assertLess(peak - before, 16 * 1024, (before, peak))

        self.assertTrue(wait_until(lambda: self.downloads() == [], 5, 0.1), 'downloads listed after their clients left')

    def assert_whole_file(self, received):
        """`received` is a 200 response whose body is the recording, byte for byte."""
        head, _, body = bytes(received).partition(b'\r\n\r\n')
        self.assertTrue(head.startswith(b'HTTP/1.1 200'), head)
        self.assertEqual(hashlib.sha256(body).hexdigest(), hashlib.sha256(self.data).hexdigest())

    def access_lines(self):
        with open(self.access_log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def open_download(self, rcvbuf):
        s = socket.create_connection(('127.0.0.1', self.rill.http_port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.sendall(('GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' % self.path()).encode())
        return s

    def send_timeouts(self):
        status, _, body = http_get(self.rill.api_url('/metrics'))
        self.assertEqual(status, 200)
        m = re.search(r'^rill_download_send_timeouts_total (\d+)$', body.decode(), re.M)
        self.assertIsNotNone(m, body.decode())
        return int(m.group(1))

    def test_a_client_that_stops_reading_is_closed_after_http_timeout(self):
        timeouts_before = self.send_timeouts()
        stalled = self.open_download(16 * 1024)  # never read
        slow = self.open_download(64 * 1024)
        reader = SlowReader(slow, 64 * 1024)  # all along
        stalled_addr = '127.0.0.1:%d' % stalled.getsockname()[1]
        reader_addr = '127.0.0.1:%d' % slow.getsockname()[1]
        started = time.monotonic()
        closed_after, listed = None, []
        try:
            self.assertTrue(wait_until(lambda: {stalled_addr, reader_addr} <= {c['addr'] for c in self.downloads()},
                                       5, 0.05), self.downloads())
            # The kernel buffers fill within a moment; the server checks every http.timeout / 4.
            while time.monotonic() - started < HTTP_TIMEOUT * 1.25 + 4:
                listed = [c['addr'] for c in self.downloads()]
                if stalled_addr not in listed:
                    closed_after = time.monotonic() - started
                    break
                time.sleep(0.25)
            self.assertIsNotNone(closed_after, 'a download nobody reads still open: %r' % listed)
            self.assertGreaterEqual(closed_after, HTTP_TIMEOUT)
            self.assertIn(reader_addr, listed)  # the slow reader is no stalled client
            received = reader.stop()
            read_to_end(slow, received)
        finally:
            reader.stop()
            stalled.close()
            slow.close()
        self.assert_whole_file(received)

        def lines():
            return {line['peer']: line for line in self.access_lines()
                    if line.get('peer') in (stalled_addr, reader_addr)}
        self.assertTrue(wait_until(lambda: len(lines()) == 2, 5, 0.1), lines())
        got = lines()
        self.assertEqual((got[stalled_addr]['protocol'], got[stalled_addr]['command'],
                          got[stalled_addr]['close_reason']), ('recording', 'download', 'send timeout'))
        self.assertLess(got[stalled_addr]['bytes_out'], len(self.data) // 4)
        self.assertEqual(got[reader_addr]['close_reason'], 'sent')
        self.assertIn('took no byte within http.timeout', self.rill.log_text())
        # Counted once, the slow reader not at all (published within a second).
        self.assertTrue(wait_until(lambda: self.send_timeouts() == timeouts_before + 1, 5, 0.2),
                        (timeouts_before, self.send_timeouts()))


if __name__ == '__main__':
    unittest.main()
