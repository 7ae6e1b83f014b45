"""Shared harness for Rill's integration tests (Python standard library only).

Typical use::

    import unittest
    from rilltest import Rill, wait_until, make_test_media, ffmpeg_publish, stop_process

    class PlayTest(unittest.TestCase):
        def test_publish(self):
            media = make_test_media()                       # cached FLV, built once
            with Rill({'workers': 2}) as rill:              # temp dir, free ports, started
                pub = ffmpeg_publish(rill.rtmp_url('cam'), media)
                self.addCleanup(stop_process, pub)
                ...                                         # rill.http_url('/live/cam.flv')

What it provides:
  * locating the binary: env RILL_BIN, else RILL_BUILD_DIR/rill, else RILL_SOURCE_DIR/build*/rill;
  * ``Rill``: a context manager around one daemon: writes the configuration into a fresh temp
    dir (workers 1, RTMP and HTTP on free 127.0.0.1 ports, pid file, runtime_dir and log file
    in the temp dir, app ``live``), starts it, waits until both ports accept and the workers
    are up, and ALWAYS stops it (and every process it forked) when the block ends;
  * process inspection: worker pids, titles, /proc/PID/fd counts;
  * ``wait_until``, ``free_port``, ``port_open``, ``run``, ``to_yaml``;
  * test media: ``make_test_media`` (ffmpeg lavfi testsrc2 + sine -> H.264/AAC FLV, cached under
    RILL_BUILD_DIR/test-media, safe with tests running in parallel) and ``ffmpeg_publish``.

Environment:
  RILL_BIN         the rill binary
  RILL_BUILD_DIR   the build directory (binary fallback, test-media cache)
  RILL_SOURCE_DIR  the source tree (conf/, binary fallback)
  RILL_KEEP_TMP=1  keep every Rill temp dir (the path is printed); failed ``with`` blocks keep
                   theirs anyway
"""

import atexit
import errno
import fcntl
import glob
import http.server
import json
import os
import re
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

__all__ = [
    'HOST', 'SOURCE_DIR', 'BUILD_DIR', 'rill_binary', 'free_port', 'port_open', 'port_listening', 'wait_port', 'wait_until',
    'run', 'rill_cli', 'to_yaml', 'deep_merge', 'DELETE', 'Rill', 'RillStartError',
    'proc_children', 'proc_cmdline', 'proc_state', 'proc_starttime', 'fd_targets', 'process_log', 'pid_alive', 'fd_count', 'descendants',
    'have_tool', 'require_tool', 'make_test_media', 'ffmpeg_publish', 'stop_process', 'http_get', 'FormBackend',
]

HOST = '127.0.0.1'
START_TIMEOUT = 10.0

# -------------------------------------------------------------------------------------------
# Locations

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get('RILL_SOURCE_DIR') or os.path.normpath(os.path.join(_HERE, '..', '..'))
BUILD_DIR = os.environ.get('RILL_BUILD_DIR') or ''


def rill_binary():
    """Path of the rill binary: RILL_BIN, RILL_BUILD_DIR/rill, or the newest SOURCE_DIR/build*/rill."""
    candidates = []
    if os.environ.get('RILL_BIN'):
        candidates.append(os.environ['RILL_BIN'])
    if BUILD_DIR:
        candidates.append(os.path.join(BUILD_DIR, 'rill'))
    found = sorted(glob.glob(os.path.join(SOURCE_DIR, 'build*', 'rill')), key=os.path.getmtime, reverse=True)
    candidates.extend(found)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise RuntimeError('rill binary not found: set RILL_BIN (tried %s)' % (candidates or 'nothing'))


def _short_tmp_base():
    # runtime_dir holds Unix sockets (108-byte path limit; the config allows 80 characters).
    base = tempfile.gettempdir()
    return base if len(base) <= 40 else '/tmp'


# -------------------------------------------------------------------------------------------
# Small helpers

def free_port(host=HOST):
    """A TCP port that is free right now (bind port 0 and read what the kernel chose)."""
    with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(port, host=HOST, timeout=0.5):
    """True when a TCP connection to host:port succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_listening(port):
    """True when some socket in this network namespace LISTENs on TCP `port` (read from
    /proc/net/tcp{,6}, so nothing connects: the server sees no probe connection). Falls back
    to port_open() where /proc/net is unavailable."""
    found_table = False
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        found_table = True
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == '0A' and int(fields[1].rsplit(':', 1)[1], 16) == port:
                return True
    return False if found_table else port_open(port)


def wait_until(predicate, timeout=10.0, interval=0.05):
    """Call predicate() until it returns something truthy or `timeout` seconds have passed.

    Returns the last value predicate() returned (falsy on timeout), so tests write
    ``self.assertTrue(wait_until(lambda: ..., 5), 'what did not happen')``. An exception
    raised by predicate() counts as falsy until the last try, where it propagates.
    """
    deadline = time.monotonic() + timeout
    while True:
        last_try = time.monotonic() >= deadline
        try:
            value = predicate()
        except Exception:
            if last_try:
                raise
            value = None
        if value or last_try:
            return value
        time.sleep(interval)


def wait_port(port, host=HOST, timeout=10.0):
    return wait_until(lambda: port_open(port, host), timeout)


def run(cmd, timeout=60, check=False, env=None, input=None, cwd=None):
    """subprocess.run with text output captured; kills the command (and raises) on timeout."""
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL if input is None else None, input=input,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise AssertionError('command timed out after %ss: %s\nstdout: %s\nstderr: %s' % (
            timeout, ' '.join(map(str, cmd)), e.stdout, e.stderr))
    if check and res.returncode != 0:
        raise AssertionError('command failed (exit %d): %s\nstdout: %s\nstderr: %s' % (
            res.returncode, ' '.join(map(str, cmd)), res.stdout, res.stderr))
    return res


def rill_cli(*args, timeout=30, env=None):
    """Run the rill binary with ARGS (e.g. '-t', '-c', path) and return the CompletedProcess."""
    return run([rill_binary()] + [str(a) for a in args], timeout=timeout, env=env)


def http_get(url, timeout=5.0, headers=None):
    """(status, headers dict, body bytes) of a GET; HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def have_tool(name):
    return shutil.which(name) is not None


def require_tool(name):
    """Skip the calling test when an external tool (ffmpeg, rtmpdump, nginx, ...) is missing."""
    if not have_tool(name):
        raise unittest.SkipTest('%s is not installed' % name)


# -------------------------------------------------------------------------------------------
# YAML output (the harness needs no YAML parser: it only writes configuration files)

class _Delete:
    def __repr__(self):
        return 'DELETE'


DELETE = _Delete()  # in an override dict: remove that key from the defaults

_PLAIN_KEY = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.\-]*$')


def _scalar(v):
    if v is None:
        return 'null'
    if v is True:
        return 'true'
    if v is False:
        return 'false'
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict) and not v:
        return '{}'
    if isinstance(v, (list, tuple)) and not v:
        return '[]'
    return json.dumps(str(v))  # a JSON string is a valid YAML double-quoted scalar


def _is_scalar(v):
    return not isinstance(v, (dict, list, tuple)) or not v


def _key(k):
    k = str(k)
    return k if _PLAIN_KEY.match(k) and k not in ('true', 'false', 'null', 'yes', 'no', 'on', 'off') \
        else json.dumps(k)


def _emit(obj, indent, out):
    pad = ' ' * indent
    if isinstance(obj, dict):
        for k, v in obj.items():
            if _is_scalar(v):
                out.append('%s%s: %s' % (pad, _key(k), _scalar(v)))
            else:
                out.append('%s%s:' % (pad, _key(k)))
                _emit(v, indent + 2, out)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            if _is_scalar(item):
                out.append('%s- %s' % (pad, _scalar(item)))
            else:
                sub = []
                _emit(item, indent + 2, sub)
                sub[0] = pad + '- ' + sub[0][indent + 2:]
                out.extend(sub)
    else:
        out.append(pad + _scalar(obj))


def to_yaml(obj):
    """Block-style YAML for dicts/lists/str/int/float/bool/None (strings are always quoted)."""
    out = []
    _emit(obj, 0, out)
    return '\n'.join(out) + '\n'


def deep_merge(base, override):
    """A copy of base with override merged in: dicts recursively, anything else replaced;
    a DELETE value removes the key."""
    result = dict(base)
    for k, v in override.items():
        if v is DELETE:
            result.pop(k, None)
        elif isinstance(v, dict) and isinstance(result.get(k), dict):
            result[k] = deep_merge(result[k], v)
        else:
            result[k] = v
    return result


# -------------------------------------------------------------------------------------------
# /proc helpers

def _read(path, mode='r'):
    with open(path, mode) as f:
        return f.read()


def proc_stat(pid):
    """(state, ppid) from /proc/PID/stat, or None if the process does not exist."""
    try:
        data = _read('/proc/%d/stat' % pid)
    except OSError:
        return None
    rest = data[data.rindex(')') + 2:].split()  # the comm field may hold spaces and ')'
    return rest[0], int(rest[1])


def proc_starttime(pid):
    """Start time of PID in clock ticks since boot (with the pid, identifies a process)."""
    try:
        data = _read('/proc/%d/stat' % pid)
    except OSError:
        return None
    return int(data[data.rindex(')') + 2:].split()[19])


def proc_state(pid):
    """'R', 'S', 'Z', ... or None if the process does not exist."""
    st = proc_stat(pid)
    return st[0] if st else None


def pid_alive(pid):
    """True for an existing process that is not a zombie."""
    state = proc_state(pid)
    return state is not None and state not in ('Z', 'X')


def proc_cmdline(pid):
    """The process title as ps shows it ('rill: worker 0'), '' if gone."""
    try:
        raw = _read('/proc/%d/cmdline' % pid, 'rb')
    except OSError:
        return ''
    parts = [p for p in raw.split(b'\0') if p]
    return ' '.join(p.decode('utf-8', 'replace') for p in parts)


def proc_children(pid, include_zombies=False):
    """Direct children of PID (via /proc/PID/task/*/children, else a /proc scan), sorted."""
    kids = set()
    tasks = glob.glob('/proc/%d/task/*/children' % pid)
    if tasks:
        for t in tasks:
            try:
                kids.update(int(x) for x in _read(t).split())
            except OSError:
                pass
    else:
        for d in os.listdir('/proc'):
            if d.isdigit():
                st = proc_stat(int(d))
                if st and st[1] == pid:
                    kids.add(int(d))
    if not include_zombies:
        kids = {k for k in kids if pid_alive(k)}
    return sorted(kids)


def descendants(pid):
    """Every live descendant of PID, depth first."""
    out = []
    for c in proc_children(pid):
        out.append(c)
        out.extend(descendants(c))
    return out


def fd_count(pid):
    """Number of open descriptors of PID."""
    return len(os.listdir('/proc/%d/fd' % pid))


def fd_targets(pid):
    """{fd: readlink target} of PID."""
    out = {}
    for fd in os.listdir('/proc/%d/fd' % pid):
        try:
            out[int(fd)] = os.readlink('/proc/%d/fd/%s' % (pid, fd))
        except OSError:
            pass
    return out


# -------------------------------------------------------------------------------------------
# Everything the harness starts is killed at interpreter exit at the latest.

_live_procs = set()


def _track(p):
    _live_procs.add(p)
    return p


def _kill_tree(pid, sig=signal.SIGKILL):
    for p in [pid] + descendants(pid):
        try:
            os.kill(p, sig)
        except OSError:
            pass


@atexit.register
def _kill_leftovers():
    for p in list(_live_procs):
        if p.poll() is None:
            _kill_tree(p.pid)
            try:
                p.wait(5)
            except Exception:
                pass


# -------------------------------------------------------------------------------------------
# The daemon

class RillStartError(AssertionError):
    pass


class Rill:
    """One rill daemon in a temp dir. Use as a context manager (or call start()/close()).

    config:
      None    the defaults below;
      dict    merged over the defaults (nested dicts merge, lists and scalars replace,
              DELETE removes a key), e.g. ``{'workers': 2, 'apps': {'live': {'gop_cache': False}}}``;
      str     YAML text used as is after string.Template substitution of $rtmp_port,
              $http_port, $tmpdir, $pid_file, $log_file, $runtime_dir (and ${...} forms).
    Defaults: workers 1; rtmp.listen / http.listen 127.0.0.1 on free ports; pid_file,
    runtime_dir and log.file (level debug) in the temp dir; shutdown_timeout 5s; app ``live``.

    start() waits (``timeout`` s) until the RTMP and HTTP ports listen (checked in /proc/net/tcp:
    no probe connection reaches the server) and the expected number of workers carry their
    ``rill: worker N`` title; on failure it raises RillStartError with the log. Startup is
    retried with new ports (twice) when a port the harness picked was taken meanwhile by
    someone else (dict or default configs only).

    Leaving the ``with`` block stops rill with SIGTERM and checks that no worker is left; when
    the block raised, the daemon is killed outright, the log tail is printed to stderr and the
    temp dir is kept for inspection.
    """

    def __init__(self, config=None, *, args=(), env=None, timeout=START_TIMEOUT, start=True,
                 keep_tmp=None, name='rill'):
        self.tmpdir = tempfile.mkdtemp(prefix=name + '-test-', dir=_short_tmp_base())
        self.config_path = os.path.join(self.tmpdir, 'rill.yaml')
        self.log_path = os.path.join(self.tmpdir, 'rill.log')
        self.pid_file = os.path.join(self.tmpdir, 'rill.pid')
        self.runtime_dir = os.path.join(self.tmpdir, 'run')
        self.stdout_path = os.path.join(self.tmpdir, 'stdout.log')
        self.stderr_path = os.path.join(self.tmpdir, 'stderr.log')
        self.rtmp_port = free_port()
        self.http_port = free_port()
        while self.http_port == self.rtmp_port:
            self.http_port = free_port()
        self.api_port = self._other_free_port()
        self.args = list(args)
        self.env = env
        self.timeout = timeout
        self.keep_tmp = keep_tmp if keep_tmp is not None else bool(os.environ.get('RILL_KEEP_TMP'))
        self.proc = None
        self.returncode = None
        self._config = config
        self._known_workers = {}  # pid -> start time: every worker seen, to check none is left
        self._closed = False
        if start:
            try:
                self.start()
            except BaseException:
                self.close(failed=True)
                raise

    # ---- configuration --------------------------------------------------------------------

    def _other_free_port(self):
        port = free_port()
        while port in (self.rtmp_port, self.http_port):
            port = free_port()
        return port

    def default_config(self):
        return {
            'workers': 1,
            'pid_file': self.pid_file,
            'runtime_dir': self.runtime_dir,
            'shutdown_timeout': '5s',
            'log': {'level': 'debug', 'file': self.log_path},
            'rtmp': {'listen': ['%s:%d' % (HOST, self.rtmp_port)]},
            'http': {'listen': ['%s:%d' % (HOST, self.http_port)]},
            'api': {'listen': ['%s:%d' % (HOST, self.api_port)]},
            'apps': {'live': {}},
        }

    def config_text(self, config=None):
        """The YAML that write_config(config) would write."""
        if config is None:
            return to_yaml(self.default_config())
        if isinstance(config, dict):
            return to_yaml(deep_merge(self.default_config(), config))
        return string.Template(config).safe_substitute(
            rtmp_port=self.rtmp_port, http_port=self.http_port, tmpdir=self.tmpdir,
            pid_file=self.pid_file, log_file=self.log_path, runtime_dir=self.runtime_dir)

    def write_config(self, config=None):
        """(Re)write the configuration file (same ports, same temp dir); see the class doc.
        Written atomically, so a running master never reads half a file."""
        self._config = config
        tmp = self.config_path + '.tmp'
        with open(tmp, 'w') as f:
            f.write(self.config_text(config))
        os.replace(tmp, self.config_path)
        return self.config_path

    def expected_workers(self):
        cfg = self._config
        workers = 1
        if isinstance(cfg, dict) or cfg is None:
            workers = deep_merge(self.default_config(), cfg or {}).get('workers', 1)
        else:
            m = re.search(r'^workers:\s*(\S+)', self.config_text(cfg), re.M)
            workers = m.group(1) if m else 'auto'
        if isinstance(workers, int):
            return workers
        if str(workers).isdigit():
            return int(workers)
        return os.cpu_count() or 1

    def _listens(self, kind):
        text = self.config_text(self._config)
        port = self.rtmp_port if kind == 'rtmp' else self.http_port
        return (':%d' % port) in text

    # ---- lifecycle ------------------------------------------------------------------------

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        if self.proc and self.proc.poll() is None:
            raise RuntimeError('already running')
        for attempt in range(3):
            self.write_config(self._config)
            self._spawn()
            try:
                self._wait_ready()
                return self
            except RillStartError:
                in_use = 'Address already in use' in self.log_text() + self.stderr_text()
                self._kill_all()
                if not (in_use and attempt < 2 and
                        (self._config is None or isinstance(self._config, dict))):
                    raise
                self.rtmp_port, self.http_port = free_port(), free_port()
                self.api_port = self._other_free_port()
                try:
                    os.unlink(self.log_path)
                except OSError:
                    pass
        return self

    def _spawn(self):
        env = dict(os.environ)
        env.pop('NOTIFY_SOCKET', None)
        if self.env:
            env.update(self.env)
        cmd = [rill_binary(), '-c', self.config_path] + [str(a) for a in self.args]
        with open(self.stdout_path, 'ab') as out, open(self.stderr_path, 'ab') as err:
            self.proc = _track(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                                env=env, cwd=self.tmpdir))
        self.returncode = None
        self._known_workers = {}

    def _ready(self):
        if self.proc.poll() is not None:
            raise RillStartError('rill exited with code %s during startup\n%s' % (
                self.proc.returncode, self.diagnostics()))
        # Listening is checked in /proc/net/tcp rather than by connecting, so that the server
        # never sees (or logs, or counts) a probe connection.
        if self._listens('rtmp') and not port_listening(self.rtmp_port):
            return False
        if self._listens('http') and not port_listening(self.http_port):
            return False
        titled = [p for p in self.worker_pids() if proc_cmdline(p).startswith('rill: worker')]
        return len(titled) >= self.expected_workers()

    def _wait_ready(self):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._ready():
                self._remember(self.worker_pids())
                return
            time.sleep(0.05)
        raise RillStartError('rill did not become ready within %ss (rtmp %d, http %d, workers %s)\n%s' % (
            self.timeout, self.rtmp_port, self.http_port, self.worker_pids(), self.diagnostics()))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        """Send SIG to the master."""
        os.kill(self.pid, sig)

    def stop(self, sig=None, timeout=10.0):
        """Send SIG (default SIGTERM: fast stop; SIGQUIT: graceful), wait for the master to
        exit (SIGKILL and AssertionError after `timeout`), then assert that no worker is left.
        Returns the master's exit code. Idempotent."""
        sig = signal.SIGTERM if sig is None else sig
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self._remember(self.worker_pids())
            workers = set(self._known_workers)
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill_all()
                raise AssertionError('rill did not exit within %ss of %s\n%s' % (
                    timeout, signal.Signals(sig).name, self.diagnostics()))
        else:
            workers = set(self._known_workers)
        self.returncode = self.proc.returncode

        def remaining():
            return [p for p in workers if self._is_our_worker(p)]

        if not wait_until(lambda: not remaining(), 5.0):
            left = remaining()
            for p in left:
                _kill_tree(p)
            raise AssertionError('worker processes %s still alive after the master exited\n%s' % (
                left, self.diagnostics()))
        return self.returncode

    def _remember(self, pids):
        for p in pids:
            t = proc_starttime(p)
            if t is not None:
                self._known_workers.setdefault(p, t)

    def _is_our_worker(self, pid):
        """PID is still one of the workers this instance started (not a reused pid)."""
        t = self._known_workers.get(pid)
        return t is not None and pid_alive(pid) and proc_starttime(pid) == t

    def _kill_all(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._remember(self.worker_pids())
            _kill_tree(self.proc.pid)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for p in list(self._known_workers):
            if self._is_our_worker(p):
                _kill_tree(p)
        self.returncode = self.proc.returncode

    def close(self, failed=False):
        """Kill whatever is left (no questions asked) and remove the temp dir (kept when
        `failed` or RILL_KEEP_TMP)."""
        if self._closed:
            return
        self._closed = True
        self._kill_all()
        if self.proc is not None:
            _live_procs.discard(self.proc)
        if failed or self.keep_tmp:
            sys.stderr.write('rilltest: kept %s\n' % self.tmpdir)
        else:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self):
        if self.proc is None:
            try:
                self.start()
            except BaseException:
                self.close(failed=True)
                raise
        return self

    def __exit__(self, exc_type, exc, tb):
        failed = exc_type is not None
        try:
            if not failed and self.running():
                self.stop()
        except BaseException:
            failed = True
            raise
        finally:
            if failed:
                sys.stderr.write('\n--- rill log (%s) ---\n%s\n' % (self.log_path, self.log_tail()))
            self.close(failed=failed)
        return False

    # ---- inspection -----------------------------------------------------------------------

    def rtmp_url(self, stream, app='live'):
        return 'rtmp://%s:%d/%s/%s' % (HOST, self.rtmp_port, app, stream)

    def api_url(self, path='/'):
        return 'http://%s:%d%s' % (HOST, self.api_port, path)

    def http_url(self, path='/'):
        if not path.startswith('/'):
            path = '/' + path
        return 'http://%s:%d%s' % (HOST, self.http_port, path)

    def log_text(self):
        """The log file so far ('' if none yet)."""
        try:
            with open(self.log_path, 'r', errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def log_offset(self):
        """Current size of the log file, for wait_for_log(since=...)."""
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_since(self, offset):
        try:
            with open(self.log_path, 'rb') as f:
                f.seek(offset)
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def wait_for_log(self, pattern, timeout=10.0, since=0):
        """Wait until regex PATTERN matches the log (from byte `since`); returns the match or None."""
        rx = re.compile(pattern)
        return wait_until(lambda: rx.search(self.log_since(since)), timeout)

    def stderr_text(self):
        try:
            with open(self.stderr_path, 'r', errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def log_tail(self, lines=60):
        text = self.log_text() or self.stderr_text()
        return '\n'.join(text.splitlines()[-lines:])

    def diagnostics(self):
        return '--- log (last lines) ---\n%s\n--- stderr ---\n%s\n--- config ---\n%s' % (
            self.log_tail(), self.stderr_text()[-4000:], self.config_text(self._config))

    def worker_pids(self):
        """Live (non-zombie) children of the master, sorted; during a reload this includes the
        old generation until it has drained."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        return proc_children(self.proc.pid)

    def workers(self):
        """{pid: title} of the master's live children."""
        return {p: proc_cmdline(p) for p in self.worker_pids()}

    def wait_workers(self, count=None, timeout=10.0, exclude=()):
        """Wait until exactly `count` (default: expected_workers()) live workers exist, none of
        them in `exclude`, all titled; returns their sorted pids or fails."""
        count = self.expected_workers() if count is None else count
        exclude = set(exclude)

        def ok():
            pids = self.worker_pids()
            if len(pids) != count or exclude & set(pids):
                return None
            if not all(proc_cmdline(p).startswith('rill: worker') for p in pids):
                return None
            return pids

        pids = wait_until(ok, timeout)
        if not pids:
            raise AssertionError('expected %d workers (not %s), have %s\n%s' % (
                count, sorted(exclude), self.workers(), self.diagnostics()))
        self._remember(pids)
        return pids

    def reload(self, config=None, timeout=10.0):
        """Optionally rewrite the config, send SIGHUP and wait for the outcome in the log.
        Returns True ("configuration reloaded") or False ("reload failed")."""
        if config is not None:
            self.write_config(config)
        offset = self.log_offset()
        self.signal(signal.SIGHUP)
        m = self.wait_for_log(r'configuration reloaded|reload failed', timeout, since=offset)
        if not m:
            raise AssertionError('no reload outcome logged within %ss\n%s' % (timeout, self.diagnostics()))
        return m.group(0) == 'configuration reloaded'

    def cli(self, *args, timeout=30):
        """Run the rill binary with ARGS (e.g. '-s', 'reload', '-c', rill.config_path)."""
        return rill_cli(*args, timeout=timeout)


# -------------------------------------------------------------------------------------------
# Media

def _media_dir():
    base = BUILD_DIR or os.path.join(tempfile.gettempdir(), 'rill-build')
    d = os.path.join(base, 'test-media')
    os.makedirs(d, exist_ok=True)
    return d


def make_test_media(path=None, seconds=10, gop=50):
    """An FLV with `seconds` of 640x360 25 fps testsrc2 (H.264: ultrafast, zerolatency, GOP 50
    = keyframe every 2 s, yuv420p, 700 kbps) and a 440 Hz sine (AAC 64 kbps, 44.1 kHz).
    Another `gop` gives a fixed keyframe interval of that many frames (no scene-cut keyframes).

    Built once by ffmpeg and cached (default RILL_BUILD_DIR/test-media/...); concurrent callers
    wait on a lock and the file appears atomically, so parallel tests never see half a file.
    Skips the calling test if ffmpeg is missing. Returns the path."""
    if path is None:
        gop_tag = '' if gop == 50 else '-gop%d' % gop
        path = os.path.join(_media_dir(), 'testsrc2-640x360-25fps-h264-aac%s-%ds.flv' % (gop_tag, seconds))
    if os.path.exists(path):
        return path
    require_tool('ffmpeg')
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            return path
        tmp = '%s.tmp.%d.flv' % (path, os.getpid())
        cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
               '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25',
               '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100',
               '-t', str(seconds),
               '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-g', str(gop)]
        if gop != 50:
            cmd += ['-keyint_min', str(gop), '-sc_threshold', '0']
        cmd += ['-pix_fmt', 'yuv420p', '-b:v', '700k',
                '-c:a', 'aac', '-b:a', '64k',
                '-f', 'flv', tmp]
        try:
            run(cmd, timeout=120, check=True)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


class FormBackend:
    """An HTTP callback backend on a loopback port (a ThreadingHTTPServer on a thread): keeps every
    form POSTed to it in `forms` (each field's last value, plus '_content_type'; under `lock`) and
    answers with answer(), 200 "ok" unless a subclass says otherwise. `url` ends with `path`.
    close() when done."""

    def __init__(self, path='/auth'):
        self.forms = []
        self.lock = threading.Lock()
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length).decode()
                form = {k: v[-1] for k, v in urllib.parse.parse_qs(body, keep_blank_values=True).items()}
                form['_content_type'] = self.headers.get('Content-Type')
                with backend.lock:
                    backend.forms.append(form)
                backend.answer(self, form)

        self.server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = 'http://%s:%d%s' % (HOST, self.port, path)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def answer(self, h, form):
        try:
            h.send_response(200)
            h.send_header('Content-Length', '2')
            h.end_headers()
            h.wfile.write(b'ok')
        except OSError:
            pass  # rill gave up on it


def ffmpeg_publish(url, media=None, loop=True, log_path=None, extra_args=(), realtime=True):
    """Start ``ffmpeg -re -stream_loop -1 -i MEDIA -c copy -f flv URL`` and return the Popen.

    stdin is /dev/null; ffmpeg's output goes to `log_path` (default: a temp file), available as
    ``proc.log_path``. Stop it with stop_process(proc) (also done at interpreter exit)."""
    require_tool('ffmpeg')
    media = media or make_test_media()
    if log_path is None:
        fd, log_path = tempfile.mkstemp(prefix='ffmpeg-publish-', suffix='.log')
        os.close(fd)
    cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'warning']
    if realtime:
        cmd.append('-re')
    if loop:
        cmd += ['-stream_loop', '-1']
    cmd += ['-i', media, '-c', 'copy'] + list(extra_args) + ['-f', 'flv', url]
    with open(log_path, 'ab') as log:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    p.log_path = log_path
    return _track(p)


def stop_process(p, timeout=5.0):
    """Stop a Popen: SIGTERM, then SIGKILL after `timeout` s. Returns its exit code."""
    if p is None:
        return None
    if p.poll() is None:
        try:
            p.terminate()
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout)
        except OSError as e:
            if e.errno != errno.ESRCH:
                raise
    _live_procs.discard(p)
    return p.returncode


def process_log(p):
    """The output of a process started by ffmpeg_publish ('' if none)."""
    path = getattr(p, 'log_path', None)
    if not path:
        return ''
    try:
        with open(path, 'r', errors='replace') as f:
            return f.read()
    except OSError:
        return ''
