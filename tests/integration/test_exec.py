"""apps.NAME.exec (docs/abr.md): children started on publish, logged, restarted after a crash,
stopped with the stream, capped by exec_max, never outliving their worker; and an ffmpeg
transcoder hook that publishes NAME_lo into NAME's rendition group without looping into
NAME_lo_lo, restarted after kill -9, stopped with the publisher, gone with its worker, and whose
segments are cut at the source's media times with the source's sequence numbers."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

from hlsutil import Playlist, hls_config, make_gop1_media
from rilltest import Rill, ffmpeg_publish, http_get, pid_alive, proc_cmdline, stop_process, wait_until

FPS = 25  # make_gop1_media's frame rate

# `exec` keeps the pid: the child's pid is the one sh prints, and the one the worker signals.
SLEEPER = ['sh', '-c', 'echo started {name} $$ from {addr}; exec sleep 30']


def api_json(r, path):
    status, _, body = http_get(r.api_url(path))
    assert status == 200, (path, status, body)
    return json.loads(body)


def exec_pid(r, name, other_than=0, timeout=8.0):
    """The pid of the stream's first exec child once it runs (and is not `other_than`), or None."""
    def running():
        status, _, body = http_get(r.api_url('/api/v1/streams/live/' + name))
        children = json.loads(body).get('exec', []) if status == 200 else []
        pid = children[0]['pid'] if children else 0
        return pid if pid and pid != other_than else None
    return wait_until(running, timeout=timeout, interval=0.1)


def child_pid(r, name, since=0, timeout=8.0):
    m = r.wait_for_log(r'exec live/%s \[\d+\]: started %s (\d+) from 127\.0\.0\.1' % (name, name),
                       timeout=timeout, since=since)
    return int(m.group(1)) if m else None


class ExecHooksTest(unittest.TestCase):

    def test_child_lifecycle(self):
        config = {'exec_max': 1,
                  'apps': {'live': {'exec': [{'on': 'publish', 'command': SLEEPER, 'restart': '200ms'}]}}}
        with Rill(config) as r:
            pub = ffmpeg_publish(r.rtmp_url('a'))
            try:
                pid = child_pid(r, 'a')
                self.assertIsNotNone(pid, r.log_tail())
                self.assertTrue(pid_alive(pid))
                # The API lists the child with the stream.
                view = api_json(r, '/api/v1/streams/live/a')
                self.assertEqual([c['pid'] for c in view.get('exec', [])], [pid], view)
                # exec_max 1: a second stream's child is refused, and the refusal logged.
                since = r.log_offset()
                pub_b = ffmpeg_publish(r.rtmp_url('b'))
                try:
                    self.assertTrue(r.wait_for_log(r"exec live/b: sh on publish refused: 1 children are running, "
                                                   r"this worker's share of exec_max 1 over 1 workers",
                                                   since=since), r.log_tail())
                finally:
                    stop_process(pub_b)
                # kill -9 of the child: started again (restart 200ms).
                since = r.log_offset()
                os.kill(pid, signal.SIGKILL)
                self.assertTrue(r.wait_for_log(r'pid %d killed by signal 9.*restarting in 200 ms' % pid,
                                               since=since), r.log_tail())
                pid2 = child_pid(r, 'a', since=since)
                self.assertIsNotNone(pid2, r.log_tail())
                self.assertNotEqual(pid2, pid)
                view = api_json(r, '/api/v1/streams/live/a')
                self.assertEqual(view['exec'][0]['restarts'], 1, view)
                self.assertIn('killed by signal 9', view['exec'][0]['last_exit'])
                # The publisher leaves: the child is stopped with SIGTERM.
                since = r.log_offset()
                stop_process(pub)
                self.assertTrue(wait_until(lambda: not pid_alive(pid2), timeout=5), r.log_tail())
                self.assertTrue(r.wait_for_log(r'pid %d killed by signal 15' % pid2, since=since),
                                r.log_tail())
            finally:
                stop_process(pub)

    def test_no_orphan_after_worker_kill(self):
        config = {'apps': {'live': {'exec': [{'on': 'publish', 'command': SLEEPER}]}}}
        with Rill(config) as r:
            pub = ffmpeg_publish(r.rtmp_url('k'))
            try:
                pid = child_pid(r, 'k')
                self.assertIsNotNone(pid, r.log_tail())
                worker = r.wait_workers(1)[0]
                os.kill(worker, signal.SIGKILL)
                # PR_SET_PDEATHSIG: the child dies with its worker (gone, or a zombie of init).
                self.assertTrue(wait_until(lambda: not pid_alive(pid), timeout=5),
                                'exec child %d outlived its worker' % pid)
                r.wait_workers(1, exclude=(worker,))
            finally:
                stop_process(pub)

    def test_hop_marker_and_names(self):
        # The child publishes {name}_x with the hop marker: hooks do not run for it.
        hook = {'on': 'publish', 'names': ['s*'],
                'command': ['sh', '-c', 'echo started {name} $$ from {addr}; exec sleep 30']}
        config = {'apps': {'live': {'exec': [hook]}}}
        with Rill(config) as r:
            pub = ffmpeg_publish(r.rtmp_url('s1'))
            other = ffmpeg_publish(r.rtmp_url('t1'))
            hop = ffmpeg_publish(r.rtmp_url('s2?rill_hop=exec'))
            try:
                self.assertIsNotNone(child_pid(r, 's1'), r.log_tail())
                time.sleep(1.0)
                log = r.log_text()
                self.assertNotIn('exec live/t1', log)  # names: s* only
                self.assertNotIn('exec live/s2', log)  # the hop marker
            finally:
                for p in (pub, other, hop):
                    stop_process(p)


def transcoder_processes(source_url):
    """Pids of live processes reading `source_url` (`-i URL`): the exec'd transcoders."""
    found = []
    for d in os.listdir('/proc'):
        if d.isdigit() and pid_alive(int(d)):
            argv = proc_cmdline(int(d)).split(' ')
            if any(a == '-i' and b == source_url for a, b in zip(argv, argv[1:])):
                found.append(int(d))
    return found


def group_alive(pgid):
    """Whether a live (not zombie) process is in process group `pgid`."""
    for d in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % d) as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(')') + 2:].split()  # state, ppid, pgrp, ...
        if d.isdigit() and int(fields[2]) == pgid and fields[0] not in ('Z', 'X'):
            return True
    return False


# docs/abr.md's recipe (lighter x264 settings): the source's timestamps kept (-copyts), a keyframe
# where the source has one, none of its own.
TRANSCODE = ['ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', '-copyts', '-i',
             'rtmp://127.0.0.1:{port}/live/{name}', '-c:v', 'libx264', '-preset', 'ultrafast', '-bf', '0',
             '-tune', 'zerolatency', '-s', '320x180', '-force_key_frames', 'source',
             '-x264-params', 'keyint=infinite:scenecut=0', '-enc_time_base:v', '-1',
             '-c:a', 'copy', '-f', 'flv', 'rtmp://127.0.0.1:{port}/live/{group}_lo?{hop}']


def transcoder_rill(command):
    """A Rill (not started) whose app live groups *_hi and *_lo and runs `command` on publish of
    *_hi ({port} its RTMP port), restarted 200 ms after an exit."""
    r = Rill(start=False)
    cmd = [a.replace('{port}', str(r.rtmp_port)) for a in command]
    config = hls_config(variants=[{'suffix': '_hi'}, {'suffix': '_lo'}])
    config['apps']['live']['exec'] = [{'on': 'publish', 'names': ['*_hi'], 'command': cmd,
                                       'restart': '200ms'}]
    r.write_config(config)
    return r


def audio_hashes(url):
    """MD5s of the audio packets of the segment at `url`: the transcoder copies the audio, so
    segments cut at the same media times carry the same packets."""
    out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'a', '-show_entries', 'packet=data_hash',
                          '-show_data_hash', 'md5', '-of', 'csv=p=0', url],
                         capture_output=True, text=True, timeout=10).stdout.split()
    return set(out)


def first_pts(url):
    """The start time (s) of the video of the segment at `url`, as ffprobe reads it."""
    out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v', '-show_entries',
                          'stream=start_time', '-of', 'csv=p=0', url],
                         capture_output=True, text=True, timeout=10).stdout.split()
    return float(out[0]) if out else None  # the program's and the stream's: the same


class ExecTranscoderTest(unittest.TestCase):
    """docs/abr.md's recipe: the publisher sends t_hi, the hook's ffmpeg makes t_lo ({group}_lo),
    and t.m3u8 is the multivariant playlist of both."""

    def test_transcoded_rendition_is_aligned_with_its_source(self):
        # The transcoder joins 1.5 s into the publish (as after a restart, or a slow start): the
        # source's timeline is well past 0 and its GOP half over.
        late = ['sh', '-c', 'sleep 1.5; exec "$0" "$@"'] + TRANSCODE
        with transcoder_rill(late) as r:
            pub = ffmpeg_publish(r.rtmp_url('a_hi'), media=make_gop1_media())
            try:
                def playlists():
                    out = []
                    for name in ('a_hi', 'a_lo'):
                        status, _, body = http_get(r.http_url('/live/%s.m3u8' % name))
                        if status != 200:
                            return None
                        out.append({seg['seq']: seg for seg in Playlist(body.decode()).segments})
                    return out if len(set(out[0]) & set(out[1])) >= 3 else None
                both = wait_until(playlists, timeout=15, interval=0.3)
                self.assertTrue(both, 'a_hi and a_lo list no 3 common sequence numbers\n' + r.log_tail())
                hi, lo = both
                common = sorted(set(hi) & set(lo))
                for seq in common:
                    # The same cut points: equal durations within one frame (and EXTINF's 1 ms) ...
                    self.assertLessEqual(abs(hi[seq]['duration'] - lo[seq]['duration']), 1.0 / FPS + 0.002,
                                         'segment %d: %s vs %s' % (seq, hi[seq], lo[seq]))
                # ... the same media times under the same numbers ...
                starts = {seq: [first_pts(r.http_url('/live/' + p[seq]['uri'])) for p in (hi, lo)]
                          for seq in (common[0], common[-1])}
                for seq, (h, l) in starts.items():
                    self.assertIsNotNone(h)
                    self.assertIsNotNone(l)
                    self.assertLessEqual(abs(h - l), 1.0 / FPS + 0.002,
                                         'segment %d starts at %.3f in a_hi, %.3f in a_lo' % (seq, h, l))
                # ... and the same media: the audio a_lo copies, packet for packet (the packets
                # next to a cut may fall on either side of it).
                for seq in common:
                    h, l = (audio_hashes(r.http_url('/live/' + p[seq]['uri'])) for p in (hi, lo))
                    self.assertGreaterEqual(len(h & l), len(h) - 2,
                                            'segment %d: %d of %d audio packets of a_hi in a_lo'
                                            % (seq, len(h & l), len(h)))
                sys.stderr.write('\naligned a_hi/a_lo (seq: duration hi/lo s): %s; starts %s\n' % (
                    ', '.join('%d: %.3f/%.3f' % (q, hi[q]['duration'], lo[q]['duration']) for q in common),
                    ', '.join('%d: %.3f/%.3f' % (q, h, l) for q, (h, l) in sorted(starts.items()))))
            finally:
                stop_process(pub)

    def test_ffmpeg_rendition_joins_group_restarts_stops_dies_with_worker(self):
        r = transcoder_rill(TRANSCODE)
        source = 'rtmp://127.0.0.1:%d/live/t_hi' % r.rtmp_port
        with r:
            pub = ffmpeg_publish(r.rtmp_url('t_hi'), media=make_gop1_media())
            try:
                pid = exec_pid(r, 't_hi')
                self.assertTrue(pid, r.log_tail())
                # t_lo joins the group: t.m3u8 lists t_hi and t_lo, t_lo at 320x180.
                def master():
                    status, _, body = http_get(r.http_url('/live/t.m3u8'))
                    text = body.decode() if status == 200 else ''
                    return text if 't_hi.m3u8' in text and 't_lo.m3u8' in text else None
                text = wait_until(master, timeout=12, interval=0.3)
                self.assertTrue(text, r.log_tail())
                self.assertRegex(text, r'RESOLUTION=320x180[^\n]*\nt_lo\.m3u8')
                self.assertNotIn('exec live/t_lo', r.log_text())  # the hop marker: no t_lo_lo
                # kill -9 of the ffmpeg: started again.
                os.kill(pid, signal.SIGKILL)
                pid2 = exec_pid(r, 't_hi', other_than=pid)
                self.assertTrue(pid2, r.log_tail())
                view = api_json(r, '/api/v1/streams/live/t_hi')['exec'][0]
                self.assertEqual((view['restarts'], view['last_exit']), (1, 'killed by signal 9 (Killed)'))
                # The API lists the child from its fork on; its argv is ffmpeg's once it has exec'd
                # (a moment later, longer under the sanitizers).
                self.assertTrue(wait_until(lambda: transcoder_processes(source) == [pid2], timeout=5),
                                (transcoder_processes(source), pid2))
                # The publisher leaves: the ffmpeg is stopped (SIGTERM to its group).
                since = r.log_offset()
                stop_process(pub)
                self.assertTrue(wait_until(lambda: not group_alive(pid2), timeout=6), r.log_tail())
                self.assertTrue(r.wait_for_log(r'stopping pid %d \(SIGTERM' % pid2, since=since))
                # Published again, then kill -9 of its worker: nothing of the hook is left.
                pub = ffmpeg_publish(r.rtmp_url('t_hi'), media=make_gop1_media())
                pid3 = exec_pid(r, 't_hi', other_than=pid2)
                self.assertTrue(pid3, r.log_tail())
                worker = r.wait_workers(1)[0]
                os.kill(worker, signal.SIGKILL)
                self.assertTrue(wait_until(lambda: not group_alive(pid3) and not transcoder_processes(source),
                                           timeout=5), 'the transcoder %d outlived its worker' % pid3)
            finally:
                stop_process(pub)


if __name__ == '__main__':
    unittest.main()
