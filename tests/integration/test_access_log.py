"""The access log (docs/operations.md, "The access log"): one line per RTMP publish and play
(ffmpeg, rtmpdump), per HTTP-FLV player and per HLS request, in nginx-rtmp's combined format
(read back with the regular expression an nginx-rtmp log parser uses) and in JSON; close
reasons (client closed, kicked through the API, refused; idle timeout, slow player and server
stopped, each provoked by a raw client); and no token nor secret in any log
line, metric or API answer after authenticated sessions with debug logging on. Also the main
log's formats: log.format: json, and text lines without their own time under the journal.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_access_log
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest
import urllib.request

import rilltest
import rtmpclient as rc
from hlsutil import Playlist, hls_config, make_gop1_media
from rilltest import HOST, Rill, wait_until

SECRET = 'access-log-s3cret'
API_TOKEN = 'access-log-api-token'

# nginx-rtmp's combined format ($remote_addr [$time_local] $command "$app" "$name" "$args" -
# $bytes_received $bytes_sent "$pageurl" "$flashver" ($session_readable_time)) as a log parser
# reads it; Rill's protocol and close reason follow it.
NGINX_RTMP = re.compile(r'^(?P<addr>\S+) \[(?P<time>[^\]]+)\] (?P<command>\S+) "(?P<app>[^"]*)" "(?P<name>[^"]*)" '
                        r'"(?P<args>[^"]*)" - (?P<bytes_in>\d+) (?P<bytes_out>\d+) "(?P<referer>[^"]*)" '
                        r'"(?P<agent>[^"]*)" \((?P<duration>[^)]*)\)')
RILL_TAIL = re.compile(r'\) (?P<protocol>\S+) "(?P<close_reason>[^"]*)"$')
# nginx's HTTP combined format, for the request lines (HLS).
NGINX_HTTP = re.compile(r'^(?P<addr>\S+) - \S+ \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<target>\S+) HTTP/1\.[01]" '
                        r'(?P<status>\d+) (?P<bytes_out>\d+) "(?P<referer>[^"]*)" "(?P<agent>[^"]*)" (?P<ms>\d+)ms '
                        r'(?P<protocol>\S+)$')
READABLE = re.compile(r'^(\d+d )?(\d+h )?(\d+m )?\d+s$')


def token(action, stream):
    res = rilltest.rill_cli('token', '--secret', SECRET, '--' + action, 'live/' + stream, '--ttl', '1h')
    if res.returncode != 0:
        raise AssertionError('rill token failed: %s' % res.stderr)
    return res.stdout.strip()


def sign_of(query):
    return re.search(r'sign=([0-9a-f]+)', query).group(1)


def api(r, method, path):
    conn = http.client.HTTPConnection(HOST, r.api_port, timeout=10)
    try:
        conn.request(method, path, headers={'Authorization': 'Bearer ' + API_TOKEN})
        resp = conn.getresponse()
        return resp.status, resp.read().decode('utf-8', 'replace')
    finally:
        conn.close()


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


def parse_line(line):
    """One access line, combined or JSON, as a dict of the same field names."""
    if line.startswith('{'):
        return json.loads(line)
    m = NGINX_RTMP.match(line)
    if m:
        d = m.groupdict()
        tail = RILL_TAIL.search(line)
        d.update(tail.groupdict() if tail else {})
        d['command'] = d['command'].lower()
        for k in ('bytes_in', 'bytes_out'):
            d[k] = int(d[k])
        return d
    m = NGINX_HTTP.match(line)
    if m:
        d = m.groupdict()
        d['status'] = int(d['status'])
        d['bytes_out'] = int(d['bytes_out'])
        d['duration_ms'] = int(d.pop('ms'))
        return d
    raise AssertionError('access line in no known format: %r' % line)


@unittest.skipIf(shutil.which('ffmpeg') is None or shutil.which('rtmpdump') is None, 'needs ffmpeg and rtmpdump')
class AccessLogTest(unittest.TestCase):

    def run_sessions(self, access_format):
        cfg = hls_config()
        cfg['apps']['live']['auth'] = {'secret': SECRET, 'publish': 'token', 'play': 'token'}
        cfg['api'] = {'token': API_TOKEN}
        logs = tempfile.mkdtemp(prefix='rill-access-')
        self.addCleanup(shutil.rmtree, logs, True)
        cfg_log = os.path.join(logs, 'access.log')
        cfg['log'] = {'access_format': access_format, 'access_log': cfg_log}
        with Rill(cfg) as r:
            queries = {'publish': token('publish', 'cam'), 'play': token('play', 'cam')}
            offset = r.log_offset()
            pub = rilltest.ffmpeg_publish(r.rtmp_url('cam?' + queries['publish']), make_gop1_media())
            try:
                self.assertTrue(r.wait_for_log(r'publish start: live/cam', 15, since=offset), r.log_tail())
                play_url = r.rtmp_url('cam?' + queries['play'])
                ff = rilltest.run(['ffmpeg', '-v', 'error', '-rw_timeout', '8000000', '-i', play_url, '-t', '1',
                                   '-f', 'null', '-'], timeout=30)
                self.assertEqual(ff.returncode, 0, ff.stderr)
                self.rtmpdump_play(r, queries['play'])
                refused = rilltest.run(['ffprobe', '-v', 'error', '-rw_timeout', '8000000', r.rtmp_url('cam')],
                                       timeout=30)
                self.assertNotEqual(refused.returncode, 0)
                flv = urllib.request.Request(r.http_url('/live/cam.flv?' + queries['play']),
                                             headers={'User-Agent': 'flv-test/1.0', 'Referer': 'http://page.example/'})
                with urllib.request.urlopen(flv, timeout=10) as resp:
                    self.assertEqual(resp.read(13)[:3], b'FLV')
                    resp.read(64 * 1024)
                pl_url = r.http_url('/live/cam.m3u8?' + queries['play'])
                pl = wait_until(lambda: Playlist(urllib.request.urlopen(pl_url, timeout=5).read().decode()), 15)
                self.assertTrue(pl and pl.segments)
                seg = urllib.request.urlopen(r.http_url('/live/' + pl.segments[-1]['uri']), timeout=5).read()
                self.assertGreater(len(seg), 0)
                self.kick_one_flv_player(r, queries['play'])
            finally:
                rilltest.stop_process(pub)
            wait_until(lambda: re.search(r'PUBLISH|"command":"publish"', read(cfg_log)), 10)
            self.assert_no_secret(r, cfg_log, queries)
            return [parse_line(line) for line in read(cfg_log).splitlines() if line.strip()]

    def rtmpdump_play(self, r, play_query):
        """rtmpdump plays for about 1.5 s, then stops on SIGINT (its -B counts stream time)."""
        p = subprocess.Popen(['rtmpdump', '-q', '--live', '-r', 'rtmp://%s:%d/live' % (HOST, r.rtmp_port),
                              '-y', 'cam?' + play_query, '-f', 'RILLTEST 1,0,0,1', '-p', 'http://page.example/watch',
                              '-o', '/dev/null'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            p.wait(1.5)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
        try:
            p.wait(5)
        finally:
            rilltest.stop_process(p)

    def kick_one_flv_player(self, r, play_query):
        conn = http.client.HTTPConnection(HOST, r.http_port, timeout=10)
        try:
            conn.request('GET', '/live/cam.flv?' + play_query, headers={'User-Agent': 'kicked-player'})
            resp = conn.getresponse()
            self.assertEqual(resp.read(13)[:3], b'FLV')

            def player_id():
                _, body = api(r, 'GET', '/api/v1/clients?kind=player')
                ids = [c['id'] for c in json.loads(body)['items'] if c.get('proto') == 'flv']
                return ids[0] if ids else None
            pid = wait_until(player_id, 5)
            self.assertIsNotNone(pid)
            self.assertEqual(api(r, 'DELETE', '/api/v1/clients/%d' % pid)[0], 204)
            wait_until(lambda: not resp.read(64 * 1024), 5)  # until the server's end
        finally:
            conn.close()

    def assert_no_secret(self, r, access_log, queries):
        secrets = [SECRET] + [sign_of(q) for q in queries.values()]
        texts = {'main log': r.log_text(), 'access log': read(access_log)}
        for path in ('/metrics', '/api/v1/streams', '/api/v1/clients', '/api/v1/server'):
            texts[path] = api(r, 'GET', path)[1]
        for where, text in texts.items():
            for secret in secrets:
                self.assertNotIn(secret, text, '%s shows a secret' % where)
        self.assertIn('sign=REDACTED', texts['access log'])

    def check_lines(self, lines):
        def one(**want):
            found = [l for l in lines if all(l.get(k) == v for k, v in want.items())]
            self.assertTrue(found, 'no line with %s in\n%s' % (want, '\n'.join(map(str, lines))))
            return found[0]

        publish = one(protocol='rtmp', command='publish')
        self.assertEqual((publish['app'], publish['name']), ('live', 'cam'))
        self.assertRegex(publish['args'], r'^expires=\d+&sign=REDACTED$')
        self.assertGreater(publish['bytes_in'], 10000)
        self.assertEqual(publish['close_reason'], 'client closed')
        self.assertTrue(publish['agent'].startswith('FMLE/3.0'), publish)  # ffmpeg's flashVer
        players = [l for l in lines if l.get('protocol') == 'rtmp' and l.get('command') == 'play' and l['args']]
        self.assertEqual(len(players), 2, lines)  # ffmpeg's and rtmpdump's
        for player in players:
            self.assertGreater(player['bytes_out'], 1000)
            self.assertEqual(player['close_reason'], 'client closed')
            self.assertRegex(player['args'], r'^expires=\d+&sign=REDACTED$')
        self.assertEqual(one(agent='RILLTEST 1,0,0,1')['referer'], 'http://page.example/watch')
        refused = one(protocol='rtmp', command='play', args='')
        self.assertTrue(refused['close_reason'].startswith('refused: '), refused)
        flv = one(protocol='http-flv', agent='flv-test/1.0')
        self.assertEqual((flv['command'], flv['referer'], flv['close_reason']), ('play', 'http://page.example/', 'client closed'))
        self.assertGreater(flv['bytes_out'], 1000)
        self.assertEqual(one(protocol='http-flv', agent='kicked-player')['close_reason'], 'kicked')
        playlist = [l for l in lines if l.get('protocol') == 'hls' and '.m3u8' in l['target']]
        self.assertTrue(playlist and playlist[-1]['status'] == 200, lines)
        self.assertIn('sign=REDACTED', playlist[-1]['target'])
        self.assertTrue([l for l in lines if l.get('protocol') == 'hls' and '.ts?' in l['target']], lines)
        for l in lines:
            if 'duration' in l:
                self.assertRegex(l['duration'], READABLE)
            elif 'command' in l:
                self.assertTrue(0 <= l['duration_ms'] < 60000, l)

    def test_combined_format(self):
        lines = self.run_sessions('combined')
        self.assertTrue(all('time' in l for l in lines))
        self.check_lines(lines)

    def test_json_format(self):
        lines = self.run_sessions('json')
        self.assertTrue(all(l['time'] and l['addr'] == HOST for l in lines))
        self.check_lines(lines)


def stalled_flv_player(port, agent):
    """An HTTP-FLV player that never reads, with a small receive buffer: its queue fills at once."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect((HOST, port))
    s.sendall(b'GET /live/cam.flv HTTP/1.1\r\nHost: x\r\nUser-Agent: %s\r\n\r\n' % agent.encode())
    return s


@unittest.skipIf(shutil.which('ffmpeg') is None, 'needs ffmpeg')
class CloseReasonTest(unittest.TestCase):
    """The close reasons a raw client provokes: an RTMP peer silent past rtmp.idle_timeout, an
    HTTP-FLV player that never reads past the queue's hard_duration, and a player still attached
    when a graceful stop (SIGQUIT) reaches shutdown_timeout."""

    def test_idle_timeout_slow_player_and_server_stopped(self):
        logs = tempfile.mkdtemp(prefix='rill-access-')
        self.addCleanup(shutil.rmtree, logs, True)
        access = os.path.join(logs, 'access.log')
        cfg = {'shutdown_timeout': '1s', 'rtmp': {'idle_timeout': '1s', 'send_buffer': '4KiB'},
               'http': {'send_buffer': '4KiB'},
               'apps': {'live': {'queue': {'soft_duration': '200ms', 'hard_duration': '500ms'}}},
               'log': {'access_format': 'json', 'access_log': access}}
        r = Rill(cfg)
        try:
            pub = rilltest.ffmpeg_publish(r.rtmp_url('cam'), rilltest.make_test_media())
            self.addCleanup(rilltest.stop_process, pub)
            self.assertTrue(r.wait_for_log(r'publish start: live/cam', 15), r.log_tail())
            idle = rc.RtmpConnection(HOST, r.rtmp_port)  # connected, then silent
            self.addCleanup(idle.close)
            self.assertEqual(idle.connect('live', extra={'flashVer': 'idle-peer'})[0], '_result')
            stalled = stalled_flv_player(r.http_port, 'stalled-player')
            self.addCleanup(stalled.close)
            # A player that reads all along, there when the graceful stop comes.
            reader = subprocess.Popen(['ffmpeg', '-v', 'error', '-user_agent', 'attached-player', '-i',
                                       r.http_url('/live/cam.flv'), '-f', 'null', '-'],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.addCleanup(rilltest.stop_process, reader)

            def reasons():
                return {l.get('agent'): l['close_reason'] for l in map(json.loads, read(access).splitlines())}
            self.assertTrue(wait_until(lambda: {'idle-peer', 'stalled-player'} <= set(reasons()), 8),
                            '%s\n%s' % (read(access), r.log_tail()))
            self.assertEqual(reasons()['idle-peer'], 'idle timeout')
            self.assertEqual(reasons()['stalled-player'], 'slow player')
            # Both HTTP-FLV players were let in: the stalled one and ffmpeg.
            self.assertTrue(wait_until(lambda: len(re.findall(r'http-flv: \S+ playing live/cam', r.log_text())) >= 2,
                                       10), r.log_tail())
            self.assertEqual(r.stop(signal.SIGQUIT, timeout=10), 0)
            self.assertEqual(reasons().get('attached-player'), 'server stopped', read(access))
        finally:
            r.close()


class MainLogFormatTest(unittest.TestCase):
    """log.format: json, and the text lines without their time when stderr is the journal."""

    def test_json_lines(self):
        """Every line an object of the same fields; a publish's and a play's lines carry their stream."""
        with Rill({'workers': 1, 'log': {'format': 'json'}}) as r:
            self.assertTrue(wait_until(lambda: '"worker":0' in r.log_text(), 5), r.log_text())
            if shutil.which('ffmpeg'):
                pub = rilltest.ffmpeg_publish(r.rtmp_url('cam'), rilltest.make_test_media())
                try:
                    self.assertTrue(r.wait_for_log(r'publish start: live/cam', 15), r.log_tail())
                    with urllib.request.urlopen(r.http_url('/live/cam.flv'), timeout=10) as resp:
                        self.assertEqual(resp.read(13)[:3], b'FLV')
                finally:
                    rilltest.stop_process(pub)
                self.assertTrue(r.wait_for_log(r'publish stop: live/cam', 10), r.log_tail())
            lines = [json.loads(line) for line in r.log_text().splitlines() if line]
        self.assertTrue(all(set(l) - {'stream'} == {'time', 'level', 'worker', 'message'} for l in lines), lines)
        self.assertIn(None, [l['worker'] for l in lines])  # the master's
        self.assertTrue(all(re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$', l['time']) for l in lines))
        if not shutil.which('ffmpeg'):
            return
        about = {l['message']: l.get('stream') for l in lines if 'live/cam' in l['message']}
        for pattern in (r'^stream created: live/cam$', r'^publish start: live/cam', r'^rtmp: \S+ publishing live/cam$',
                        r'^http-flv: \S+ playing live/cam$', r'^http-flv: \S+ closed ', r'^rtmp: \S+ unpublished live/cam',
                        r'^publish stop: live/cam'):
            found = [m for m in about if re.search(pattern, m)]
            self.assertTrue(found, 'no line like %r in %s' % (pattern, sorted(about)))
            self.assertEqual(about[found[0]], 'live/cam', found[0])
        self.assertFalse([l for l in lines if 'stream' in l and 'live/cam' not in l['message']], lines)

    def test_no_time_of_its_own_under_the_journal(self):
        r = Rill({'log': {'file': rilltest.DELETE}}, start=False)
        try:
            open(r.stderr_path, 'ab').close()
            st = os.stat(r.stderr_path)  # what systemd puts in JOURNAL_STREAM: stderr's device and inode
            r.env = {'JOURNAL_STREAM': '%d:%d' % (st.st_dev, st.st_ino)}
            r.start()
            self.assertTrue(wait_until(lambda: '[worker 0]' in r.stderr_text(), 5), r.stderr_text())
            lines = [l for l in r.stderr_text().splitlines() if l.startswith('[')]
            self.assertTrue(lines)
            for line in lines:
                self.assertRegex(line, r'^\[(trace|debug|info|warning|error|critical)\] \[(master|worker \d+)\] ')
        finally:
            r.close()


if __name__ == '__main__':
    unittest.main()
