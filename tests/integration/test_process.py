"""Process model: master + workers, supervision, signals, reload, pid file, CLI, systemd unit."""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from rilltest import (BUILD_DIR, Rill, SOURCE_DIR, fd_count, fd_targets, ffmpeg_publish, free_port,
                      make_test_media, pid_alive, port_open, proc_children, proc_cmdline,
                      proc_state, process_log, require_tool, rill_binary, rill_cli, run,
                      stop_process, to_yaml, wait_until)


def socket_inodes(pid):
    return {t for t in fd_targets(pid).values() if t.startswith('socket:')}


def cmake_cache(name):
    """The value of `name` in the build's CMakeCache.txt, or None."""
    try:
        with open(os.path.join(BUILD_DIR, 'CMakeCache.txt')) as f:
            for line in f:
                if line.startswith(name + ':'):
                    return line.split('=', 1)[1].strip()
    except OSError:
        pass
    return None


def expects_jemalloc():
    """Whether the build under test links jemalloc as its malloc (see CMakeLists.txt)."""
    if not BUILD_DIR or cmake_cache('RILL_ALLOCATOR') != 'jemalloc':
        return False
    if any(cmake_cache(o) in ('ON', 'TRUE', '1') for o in ('RILL_SANITIZE', 'RILL_SANITIZE_UB', 'RILL_FUZZ')):
        return False
    lib = cmake_cache('JEMALLOC_LIBRARY')
    return bool(lib) and not lib.endswith('NOTFOUND')


class MasterWorkersTest(unittest.TestCase):

    def test_master_and_two_workers_with_titles(self):
        with Rill({'workers': 2}) as r:
            master_title = proc_cmdline(r.pid)
            self.assertTrue(master_title.startswith('rill: master'), master_title)
            self.assertIn(r.config_path, master_title)
            pids = r.wait_workers(2)
            self.assertEqual(sorted(proc_cmdline(p) for p in pids), ['rill: worker 0', 'rill: worker 1'])
            with open('/proc/%d/comm' % pids[0]) as f:
                self.assertTrue(f.read().startswith('rill: worker'))
            # The master holds one socket per slot and address (2 x 3: rtmp, http, api); each
            # worker holds only its own slot's three, and no two workers share one.
            master_socks = socket_inodes(r.pid)
            self.assertEqual(len(master_socks), 6, fd_targets(r.pid))
            w0 = socket_inodes(pids[0]) & master_socks
            w1 = socket_inodes(pids[1]) & master_socks
            self.assertEqual(len(w0), 3)
            self.assertEqual(len(w1), 3)
            self.assertFalse(w0 & w1)
            # The worker has no pid file or second log descriptor of the master's.
            for p in pids:
                targets = list(fd_targets(p).values())
                self.assertNotIn(r.pid_file, targets)
                self.assertLessEqual(targets.count(r.log_path), 1)
            with open(r.pid_file) as f:
                self.assertEqual(int(f.read().strip()), r.pid)
            self.assertTrue(port_open(r.rtmp_port))
            self.assertTrue(port_open(r.http_port))

    def test_killed_worker_is_respawned_in_its_slot(self):
        with Rill({'workers': 2}) as r:
            pids = r.wait_workers(2)
            victim, other = pids
            title = proc_cmdline(victim)
            os.kill(victim, signal.SIGKILL)
            t0 = time.monotonic()
            new = wait_until(lambda: [p for p in r.worker_pids()
                                      if p not in pids and proc_cmdline(p).startswith('rill: worker')],
                             timeout=1.0, interval=0.01)
            elapsed = time.monotonic() - t0
            self.assertTrue(new, 'no new worker within 1 s: %s\n%s' % (r.workers(), r.log_tail()))
            self.assertLess(elapsed, 1.0)
            self.assertEqual(proc_cmdline(new[0]), title)  # same slot
            self.assertTrue(pid_alive(other))  # the other worker is untouched
            self.assertTrue(port_open(r.rtmp_port))
            self.assertTrue(port_open(r.http_port))
            self.assertTrue(r.wait_for_log(r'worker \d \(pid %d, generation 0\) killed by signal 9' % victim, 5))
            # reaped: no zombie child left
            self.assertTrue(wait_until(lambda: all(proc_state(p) != 'Z'
                                                   for p in proc_children(r.pid, include_zombies=True)), 2))

    def test_master_killed_workers_follow(self):
        r = Rill({'workers': 2})
        with r:
            pids = r.wait_workers(2)
            os.kill(r.pid, signal.SIGKILL)
            r.proc.wait(5)
            self.assertTrue(wait_until(lambda: not any(pid_alive(p) for p in pids), 5),
                            'workers outlived the master: %s' % [(p, proc_cmdline(p)) for p in pids])
            # The pid file is stale now (no live master holds it): a new master takes it over.
            self.assertTrue(os.path.exists(r.pid_file))
            r.start()
            with open(r.pid_file) as f:
                self.assertEqual(int(f.read().strip()), r.pid)
            self.assertEqual(r.stop(), 0)

    def test_second_instance_is_refused(self):
        with Rill() as r:
            # Same pid file: refused by the pid file lock.
            res = run([rill_binary(), '-c', r.config_path], timeout=15)
            self.assertEqual(res.returncode, 1)
            self.assertIn('already running', res.stderr)
            self.assertIn(str(r.pid), res.stderr)
            # Other pid file, same ports: refused (a SO_REUSEPORT group is never joined).
            other_pid = os.path.join(r.tmpdir, 'other.pid')
            res = run([rill_binary(), '-c', r.config_path, '-p', other_pid], timeout=15)
            self.assertEqual(res.returncode, 1)
            self.assertIn('Address already in use', res.stderr)
            self.assertFalse(os.path.exists(other_pid))
            self.assertTrue(r.running())


class PrivilegesTest(unittest.TestCase):

    def test_workers_switch_to_configured_user(self):
        if os.geteuid() != 0:
            self.skipTest('needs root')
        try:
            import pwd
            nobody = pwd.getpwnam('nobody')
        except KeyError:
            self.skipTest('no user nobody')
        r = Rill({'workers': 2, 'user': 'nobody'}, start=False)
        os.chmod(r.tmpdir, 0o755)  # the workers reopen the log by path as nobody
        with r:
            pids = r.wait_workers(2)

            def uids(pid):
                with open('/proc/%d/status' % pid) as f:
                    line = next(l for l in f if l.startswith('Uid:'))
                return [int(x) for x in line.split()[1:]]

            self.assertEqual(uids(r.pid)[0], 0)
            for p in pids:
                self.assertEqual(uids(p), [nobody.pw_uid] * 4)
            self.assertEqual(os.stat(r.log_path).st_uid, nobody.pw_uid)
            self.assertEqual(os.stat(r.runtime_dir).st_uid, nobody.pw_uid)
            # Log rotation still works for the unprivileged workers.
            os.rename(r.log_path, r.log_path + '.1')
            r.signal(signal.SIGUSR1)
            for who in ('master', 'worker 0', 'worker 1'):
                self.assertTrue(r.wait_for_log(r'\[%s\] log files reopened' % who, 5), r.log_text())
            # The parent-death signal survives the credential change.
            os.kill(r.pid, signal.SIGKILL)
            r.proc.wait(5)
            self.assertTrue(wait_until(lambda: not any(pid_alive(p) for p in pids), 5))

    def test_unknown_user_refused_at_startup(self):
        r = Rill({'user': 'no-such-user-rill'}, start=False)
        with self.assertRaises(AssertionError) as cm:
            r.start()
        r.close()
        self.assertIn("unknown user 'no-such-user-rill'", str(cm.exception))


class ReloadTest(unittest.TestCase):

    def test_reload_with_broken_config_changes_nothing(self):
        with Rill({'workers': 2}) as r:
            old = r.wait_workers(2)
            offset = r.log_offset()
            self.assertFalse(r.reload('workers: [2\nrtmp: {listen: \n'))  # not even YAML
            self.assertRegex(r.log_since(offset),
                             r'reload failed, keeping the running configuration: .*rill\.yaml:\d+:\d+')
            self.assertFalse(r.reload({'workers': 2, 'no_such_key': 1}))  # YAML, but invalid
            time.sleep(0.3)
            self.assertEqual(r.worker_pids(), old)
            self.assertTrue(port_open(r.rtmp_port))
            # Fixed again: the next reload works.
            self.assertTrue(r.reload({'workers': 2}))
            r.wait_workers(2, exclude=old)

    def test_reload_starts_a_new_generation(self):
        with Rill({'workers': 2}) as r:
            old = r.wait_workers(2)
            time.sleep(0.2)
            fds_before = fd_count(r.pid)
            socks_before = socket_inodes(r.pid)
            self.assertTrue(r.reload({'workers': 2, 'log': {'level': 'info'}}))
            new = r.wait_workers(2, exclude=old)  # the old generation has exited
            self.assertEqual(sorted(proc_cmdline(p) for p in new), ['rill: worker 0', 'rill: worker 1'])
            for p in new:  # the master's log descriptor is not inherited, only the worker's own
                self.assertEqual(list(fd_targets(p).values()).count(r.log_path), 1, fd_targets(p))
            for p in new:
                self.assertTrue(r.wait_for_log(r'\[worker \d\] worker process started \(pid %d, generation 1,' % p, 5))
            # Same addresses: the very same sockets are kept, nothing leaks.
            self.assertEqual(socket_inodes(r.pid), socks_before)
            self.assertEqual(fd_count(r.pid), fds_before)
            # The old workers have exited; the master reaps them on SIGCHLD, a moment later on a
            # loaded machine: no zombie stays.
            self.assertTrue(wait_until(lambda: proc_children(r.pid, include_zombies=True) == new, 5),
                            proc_children(r.pid, include_zombies=True))
            self.assertTrue(port_open(r.rtmp_port))
            # A few more reloads: still no leak.
            for _ in range(3):
                cur = r.worker_pids()
                self.assertTrue(r.reload())
                r.wait_workers(2, exclude=cur)
            self.assertEqual(fd_count(r.pid), fds_before)

    def test_reload_changes_worker_count_and_listeners(self):
        with Rill({'workers': 1}) as r:
            old = r.wait_workers(1)
            old_http = r.http_port
            new_http = free_port()
            self.assertTrue(r.reload({'workers': 3, 'http': {'listen': ['127.0.0.1:%d' % new_http]}}))
            new = r.wait_workers(3, exclude=old)
            self.assertEqual(sorted(proc_cmdline(p) for p in new),
                             ['rill: worker 0', 'rill: worker 1', 'rill: worker 2'])
            self.assertTrue(wait_until(lambda: port_open(new_http), 5))
            self.assertTrue(wait_until(lambda: not port_open(old_http), 5), 'old HTTP port still open')
            self.assertEqual(len(socket_inodes(r.pid)), 9)  # 3 slots x (rtmp + http + api)
            # And back down to 1.
            self.assertTrue(r.reload({'workers': 1, 'http': {'listen': ['127.0.0.1:%d' % new_http]}}))
            r.wait_workers(1, exclude=new)
            self.assertEqual(len(socket_inodes(r.pid)), 3)
            self.assertTrue(port_open(new_http))

    def test_reload_with_taken_port_changes_nothing(self):
        with Rill() as r:
            old = r.wait_workers(1)
            blocker = socket.socket()
            blocker.bind(('127.0.0.1', 0))
            blocker.listen(1)
            self.addCleanup(blocker.close)
            port = blocker.getsockname()[1]
            self.assertFalse(r.reload({'http': {'listen': ['127.0.0.1:%d' % port]}}))
            self.assertIn('Address already in use', r.log_text())
            self.assertEqual(r.worker_pids(), old)
            self.assertTrue(port_open(r.http_port))


class StopTest(unittest.TestCase):

    def _stop_with(self, sig, expect_log):
        with Rill({'workers': 2}) as r:
            pids = r.wait_workers(2)
            self.assertTrue(os.path.exists(r.pid_file))
            self.assertEqual(r.stop(sig), 0)
            self.assertFalse(any(pid_alive(p) for p in pids))
            self.assertFalse(os.path.exists(r.pid_file))
            self.assertFalse(port_open(r.rtmp_port))
            self.assertFalse(port_open(r.http_port))
            self.assertIn(expect_log, r.log_text())
            self.assertIn('master exiting', r.log_text())

    def test_sigterm_fast_stop(self):
        self._stop_with(signal.SIGTERM, 'SIGTERM received: fast stop')

    def test_sigint_fast_stop(self):
        self._stop_with(signal.SIGINT, 'SIGINT received: fast stop')

    def test_sigquit_graceful_stop(self):
        self._stop_with(signal.SIGQUIT, 'SIGQUIT received: graceful stop')

    def test_reload_and_graceful_stop_with_a_live_publisher(self):
        require_tool('ffmpeg')
        media = make_test_media()
        with Rill({'workers': 2, 'shutdown_timeout': '2s'}) as r:
            pub = ffmpeg_publish(r.rtmp_url('cam'), media)
            self.addCleanup(stop_process, pub)
            time.sleep(1.5)
            self.assertIsNone(pub.poll(), process_log(pub))
            old = r.worker_pids()
            self.assertTrue(r.reload())
            # A reload drops nothing: the old worker serving the publisher stays (docs/operations.md,
            # "Reload"); the other one, idle, exits at once. A stop still bounds both (below).
            self.assertTrue(wait_until(lambda: len(set(r.worker_pids()) & set(old)) == 1, 8),
                            'old generation: %s (was %s)' % (r.workers(), old))
            self.assertEqual(len(r.worker_pids()), 3, r.workers())
            pub2 = ffmpeg_publish(r.rtmp_url('cam2'), media)
            self.addCleanup(stop_process, pub2)
            time.sleep(1.5)
            self.assertIsNone(pub2.poll(), process_log(pub2))
            t0 = time.monotonic()
            self.assertEqual(r.stop(signal.SIGQUIT, timeout=10), 0)
            self.assertLess(time.monotonic() - t0, 2 + 1 + 2)


    def test_hung_worker_is_killed_after_shutdown_timeout(self):
        for sig in (signal.SIGTERM, signal.SIGQUIT):
            with Rill({'workers': 2, 'shutdown_timeout': '1s'}) as r:
                hung = r.wait_workers(2)[0]
                os.kill(hung, signal.SIGSTOP)  # handles nothing any more
                t0 = time.monotonic()
                self.assertEqual(r.stop(sig, timeout=10), 0)
                elapsed = time.monotonic() - t0
                self.assertGreaterEqual(elapsed, 0.9)
                self.assertLess(elapsed, 4)
                self.assertRegex(r.log_text(), r'worker \d \(pid %d\) did not exit within shutdown_timeout; '
                                               r'sending SIGKILL' % hung)
                self.assertFalse(pid_alive(hung))

class LogReopenTest(unittest.TestCase):

    def test_sigusr1_reopens_log_files(self):
        with Rill({'workers': 2}) as r:
            r.wait_workers(2)
            rotated = r.log_path + '.1'
            os.rename(r.log_path, rotated)
            r.signal(signal.SIGUSR1)
            self.assertTrue(wait_until(lambda: os.path.exists(r.log_path), 5), 'no new log file')
            for who in ('master', 'worker 0', 'worker 1'):
                self.assertTrue(r.wait_for_log(r'\[%s\] log files reopened' % who, 5),
                                '%s did not reopen:\n%s' % (who, r.log_text()))
            with open(rotated) as f:
                self.assertIn('reopening log files', f.read())
            # Later lines land in the new file.
            self.assertTrue(r.reload())
            self.assertIn('configuration reloaded', r.log_text())


class BackoffTest(unittest.TestCase):

    def test_crashing_worker_is_respawned_with_backoff(self):
        with Rill({'workers': 1}) as r:
            current = r.wait_workers(1)[0]
            gaps = []
            for _ in range(7):
                os.kill(current, signal.SIGKILL)
                t0 = time.monotonic()
                new = wait_until(lambda: [p for p in r.worker_pids()
                                          if p != current and proc_cmdline(p).startswith('rill: worker')],
                                 timeout=5, interval=0.005)
                self.assertTrue(new, r.log_tail())
                gaps.append(time.monotonic() - t0)
                current = new[0]
            # Deaths 1-3 (each < 1 s after its start): respawned at once; then 100, 200, 400,
            # 800 ms. Timing is only checked from below (a loaded machine is slower, not faster).
            outcomes = re.findall(r'killed by signal 9 \(SIGKILL\) after \d+ ms; (respawning(?: in \d+ ms)?)',
                                  r.log_text())
            self.assertEqual(outcomes, ['respawning'] * 3 + ['respawning in %d ms' % ms
                                                              for ms in (100, 200, 400, 800)], r.log_tail())
            for g, want in zip(gaps[3:], (0.1, 0.2, 0.4, 0.8)):
                self.assertGreaterEqual(g, want * 0.9, gaps)
            self.assertTrue(port_open(r.rtmp_port))


class CommandLineTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='rill-cli-')
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_config_test_option(self):
        good = self.write('good.yaml', to_yaml({
            'workers': 2, 'rtmp': {'listen': ['127.0.0.1:1935']}, 'apps': {'live': {}}}))
        res = rill_cli('-t', '-c', good)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.strip(), 'configuration OK')
        res = rill_cli('--test', '--config', good)
        self.assertEqual(res.returncode, 0, res.stderr)

        res = rill_cli('-t')  # the embedded default
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.strip(), 'configuration OK')

        bad = self.write('bad.yaml', 'workers: 2\nrtmp:\n  lissen: ["127.0.0.1:1935"]\n')
        res = rill_cli('-t', '-c', bad)
        self.assertEqual(res.returncode, 1)
        self.assertEqual(res.stdout, '')
        self.assertRegex(res.stderr, r'^%s:3:\d+: ' % re.escape(bad))

        broken = self.write('broken.yaml', 'workers: [2\n')
        res = rill_cli('-t', '-c', broken)
        self.assertEqual(res.returncode, 1)
        self.assertRegex(res.stderr, r'^%s:\d+:\d+: ' % re.escape(broken))

        res = rill_cli('-t', '-c', os.path.join(self.tmp, 'missing.yaml'))
        self.assertEqual(res.returncode, 1)
        self.assertIn('missing.yaml', res.stderr)

        nouser = self.write('nouser.yaml', to_yaml({'user': 'no-such-user-rill', 'apps': {'live': {}}}))
        res = rill_cli('-t', '-c', nouser)
        self.assertEqual(res.returncode, 1)
        self.assertIn("unknown user 'no-such-user-rill'", res.stderr)

    def test_startup_with_bad_config_fails(self):
        bad = self.write('bad.yaml', 'workers: many\n')
        res = run([rill_binary(), '-c', bad], timeout=15)
        self.assertEqual(res.returncode, 1)
        self.assertRegex(res.stderr, re.escape(bad) + r':1:\d+: ')

    def test_version_and_help(self):
        res = rill_cli('-v')
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout.splitlines()[0], r'^rill \d+\.\d+\.\d+')
        for lib in (r'libevent \d+\.\d+', r'OpenSSL \d+\.\d+', r'yaml-cpp \S+', r'spdlog \d+\.\d+\.\d+',
                    r'fmt \d+\.\d+\.\d+', r'libsystemd'):
            self.assertRegex(res.stdout, lib)
        self.assertEqual(rill_cli('--version').stdout, res.stdout)
        # The allocator (CMakeLists.txt, RILL_ALLOCATOR): jemalloc in a plain build where it was
        # found, and then it must really serve malloc(); sanitizer builds keep the C library's.
        if expects_jemalloc():
            self.assertRegex(res.stdout, r'malloc: jemalloc \d+\.\d+')
            self.assertNotIn('served by another allocator', res.stdout)
        elif BUILD_DIR:
            self.assertIn("malloc: the C library's", res.stdout)
        res = rill_cli('-h')
        self.assertEqual(res.returncode, 0)
        self.assertIn('Usage: rill', res.stdout)
        res = rill_cli('--no-such-option')
        self.assertEqual(res.returncode, 2)
        self.assertIn('unknown option', res.stderr)

    def test_signal_option(self):
        with Rill({'workers': 1}) as r:
            old = r.wait_workers(1)
            # reload through the pid file named in the config
            offset = r.log_offset()
            res = rill_cli('-s', 'reload', '-c', r.config_path)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertTrue(r.wait_for_log('configuration reloaded', 5, since=offset))
            r.wait_workers(1, exclude=old)
            # reopen through -p
            offset = r.log_offset()
            res = rill_cli('-s', 'reopen', '-p', r.pid_file)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertTrue(r.wait_for_log(r'\[master\] log files reopened', 5, since=offset))
            res = rill_cli('-s', 'bogus', '-p', r.pid_file)
            self.assertEqual(res.returncode, 1)
            self.assertIn("unknown signal 'bogus'", res.stderr)
            # stop
            res = rill_cli('--signal', 'stop', '--config', r.config_path)
            self.assertEqual(res.returncode, 0, res.stderr)
            r.proc.wait(10)
            self.assertEqual(r.stop(), 0)
            self.assertFalse(os.path.exists(r.pid_file))
            # nothing running now
            res = rill_cli('-s', 'stop', '-c', r.config_path)
            self.assertEqual(res.returncode, 1)
            self.assertIn('cannot open pid file %s' % r.pid_file, res.stderr)
            # a stale pid file
            dead = subprocess.Popen(['true'])
            dead.wait()
            with open(r.pid_file, 'w') as f:
                f.write('%d\n' % dead.pid)
            res = rill_cli('-s', 'quit', '-p', r.pid_file)
            self.assertEqual(res.returncode, 1)
            self.assertIn('no process with pid %d' % dead.pid, res.stderr)

    def test_signal_quit_and_pid_file_override(self):
        other = os.path.join(tempfile.mkdtemp(prefix='rill-pid-'), 'sub', 'master.pid')
        self.addCleanup(shutil.rmtree, os.path.dirname(os.path.dirname(other)), True)
        with Rill(args=['-p', other]) as r:
            self.assertFalse(os.path.exists(r.pid_file))  # -p wins over pid_file
            with open(other) as f:
                self.assertEqual(int(f.read()), r.pid)
            res = rill_cli('-s', 'quit', '-p', other)
            self.assertEqual(res.returncode, 0, res.stderr)
            r.proc.wait(10)
            self.assertEqual(r.stop(), 0)
            self.assertIn('SIGQUIT received: graceful stop', r.log_text())
            self.assertFalse(os.path.exists(other))

    def test_signal_option_without_pid_file(self):
        cfg = self.write('nopid.yaml', to_yaml({'pid_file': None, 'apps': {'live': {}}}))
        res = rill_cli('-s', 'reload', '-c', cfg)
        self.assertEqual(res.returncode, 1)
        self.assertIn('no pid file', res.stderr)


class SdNotifyTest(unittest.TestCase):

    def test_ready_reloading_stopping(self):
        if 'not built in' in rill_cli('-v').stdout:
            self.skipTest('built without libsystemd')
        tmp = tempfile.mkdtemp(prefix='rill-notify-')
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, 'notify.sock')
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.bind(path)
        sock.settimeout(10)

        def messages_until(key):
            got = []
            while True:
                data, _ = sock.recvfrom(4096)
                fields = dict(l.split('=', 1) for l in data.decode().splitlines() if '=' in l)
                got.append(fields)
                if key in fields:
                    return got

        with Rill({'workers': 2}, env={'NOTIFY_SOCKET': path}) as r:
            ready = messages_until('READY')[-1]
            self.assertEqual(ready['READY'], '1')
            self.assertEqual(int(ready['MAINPID']), r.pid)
            self.assertIn('2 workers', ready.get('STATUS', ''))
            r.signal(signal.SIGHUP)
            self.assertIn('MONOTONIC_USEC', messages_until('RELOADING')[-1])
            self.assertEqual(messages_until('READY')[-1]['READY'], '1')
            # A failed reload still ends with READY=1.
            r.write_config('workers: [')
            r.signal(signal.SIGHUP)
            messages_until('RELOADING')
            messages_until('READY')
            r.write_config({'workers': 2})
            r.signal(signal.SIGTERM)
            self.assertEqual(messages_until('STOPPING')[-1]['STOPPING'], '1')
            r.proc.wait(10)
            self.assertEqual(r.stop(), 0)
            # Workers never notify (NotifyAccess=main would drop it anyway).
            sock.settimeout(0.2)
            with self.assertRaises(socket.timeout):
                sock.recvfrom(4096)


class SystemdUnitTest(unittest.TestCase):

    def test_unit_file_verifies(self):
        if not shutil.which('systemd-analyze'):
            self.skipTest('systemd-analyze is not installed')
        with open(os.path.join(SOURCE_DIR, 'conf', 'rill.service')) as f:
            unit = f.read()
        self.assertIn('Type=notify', unit)
        self.assertIn('KillMode=mixed', unit)
        self.assertIn('ExecReload=/bin/kill -HUP $MAINPID', unit)
        tmp = tempfile.mkdtemp(prefix='rill-unit-')
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, 'rill.service')
        with open(path, 'w') as f:
            f.write(unit.replace('/usr/local/bin/rill', rill_binary()))
        res = run(['systemd-analyze', 'verify', path], timeout=60)
        if res.returncode != 0 and ('Failed to' in res.stderr and 'bus' in res.stderr.lower()):
            self.skipTest('systemd-analyze cannot run here: %s' % res.stderr.strip())
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)


if __name__ == '__main__':
    unittest.main()
