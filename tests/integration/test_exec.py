"""apps.NAME.exec (docs/abr.md): children started on publish, logged, restarted after a crash,
stopped with the stream, capped by exec_max, never outliving their worker; and an ffmpeg
transcoder hook that publishes NAME_lo without looping into NAME_lo_lo."""

import json
import os
import re
import signal
import time
import unittest

from rilltest import (Rill, ffmpeg_publish, http_get, pid_alive, require_tool, run, stop_process,
                      wait_until)

# `exec` keeps the pid: the child's pid is the one sh prints, and the one the worker signals.
SLEEPER = ['sh', '-c', 'echo started {name} $$ from {addr}; exec sleep 30']


def api_json(r, path):
    status, _, body = http_get(r.api_url(path))
    assert status == 200, (path, status, body)
    return json.loads(body)


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
                    self.assertTrue(r.wait_for_log(r'exec live/b: sh on publish refused: exec_max 1',
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


class ExecTranscoderTest(unittest.TestCase):

    def test_ffmpeg_makes_lo_rendition(self):
        require_tool('ffprobe')
        transcode = ['ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', '-i',
                     'rtmp://127.0.0.1:{port}/live/{name}', '-c:v', 'libx264', '-preset', 'ultrafast',
                     '-tune', 'zerolatency', '-s', '320x180', '-c:a', 'copy', '-f', 'flv',
                     'rtmp://127.0.0.1:{port}/live/{name}_lo?{hop}']
        r = Rill(start=False)
        cmd = [a.replace('{port}', str(r.rtmp_port)) for a in transcode]
        r.write_config({'apps': {'live': {'exec': [{'on': 'publish', 'command': cmd, 'restart': '1s'}]}}})
        with r:
            pub = ffmpeg_publish(r.rtmp_url('t'))
            try:
                def probe():
                    try:
                        res = run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                                   'stream=width,height', '-of', 'csv=p=0', r.rtmp_url('t_lo')], timeout=6)
                    except AssertionError:
                        return None
                    return res.stdout.strip() if res.returncode == 0 else None
                self.assertTrue(wait_until(lambda: probe() == '320,180', timeout=12, interval=0.5),
                                r.log_tail())
                streams = http_get(r.api_url('/api/v1/streams'))[2].decode()
                self.assertIn('t_lo', streams)
                self.assertNotIn('t_lo_lo', streams)
                self.assertNotIn('exec live/t_lo', r.log_text())
            finally:
                stop_process(pub)


if __name__ == '__main__':
    unittest.main()
