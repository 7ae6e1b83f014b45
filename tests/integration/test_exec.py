"""apps.NAME.exec (docs/abr.md): children started on publish, logged, restarted after a crash,
stopped with the stream, capped by exec_max, never outliving their worker; and an ffmpeg
transcoder hook that publishes NAME_lo into NAME's rendition group without looping into
NAME_lo_lo, restarted after kill -9, stopped with the publisher, gone with its worker."""

import json
import os
import signal
import time
import unittest

from hlsutil import hls_config, make_gop1_media
from rilltest import Rill, ffmpeg_publish, http_get, pid_alive, proc_cmdline, stop_process, wait_until

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


class ExecTranscoderTest(unittest.TestCase):
    """docs/abr.md's recipe: the publisher sends t_hi, the hook's ffmpeg makes t_lo ({group}_lo),
    and t.m3u8 is the multivariant playlist of both."""

    def test_ffmpeg_rendition_joins_group_restarts_stops_dies_with_worker(self):
        transcode = ['ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', '-i',
                     'rtmp://127.0.0.1:{port}/live/{name}', '-c:v', 'libx264', '-preset', 'ultrafast',
                     '-tune', 'zerolatency', '-s', '320x180', '-force_key_frames', 'expr:gte(t,n_forced*1)',
                     '-c:a', 'copy', '-f', 'flv', 'rtmp://127.0.0.1:{port}/live/{group}_lo?{hop}']
        r = Rill(start=False)
        cmd = [a.replace('{port}', str(r.rtmp_port)) for a in transcode]
        source = 'rtmp://127.0.0.1:%d/live/t_hi' % r.rtmp_port
        config = hls_config(variants=[{'suffix': '_hi'}, {'suffix': '_lo'}])
        config['apps']['live']['exec'] = [{'on': 'publish', 'names': ['*_hi'], 'command': cmd,
                                           'restart': '200ms'}]
        r.write_config(config)
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
                self.assertEqual(transcoder_processes(source), [pid2])
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
