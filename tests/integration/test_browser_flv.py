"""A real browser plays Rill's live HTTP-FLV: headless Chromium + mpegts.js (MSE).

The page is served from ANOTHER origin (a Python http.server on its own 127.0.0.1 port), so
the stream is fetched cross-origin and CORS has to be right. The browser is driven by the
shared tests/browser/play.js. Skipped only when /usr/bin/chromium, node or
tests/browser/node_modules is missing.
"""

import functools
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

from rilltest import HOST, SOURCE_DIR, Rill, ffmpeg_publish, process_log, require_tool, stop_process, wait_until

CHROMIUM = '/usr/bin/chromium'
BROWSER_DIR = os.path.join(SOURCE_DIR, 'tests', 'browser')
NODE_MODULES = os.path.join(BROWSER_DIR, 'node_modules')
MPEGTS_JS = os.path.join(NODE_MODULES, 'mpegts.js', 'dist', 'mpegts.js')
DRIVER = os.path.join(BROWSER_DIR, 'play.js')  # the shared driver: samples the page's <video> as JSON
SAMPLE_SECONDS = 10

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rill http-flv</title></head>
<body>
<video id="v" muted autoplay playsinline width="640" height="360"></video>
<script src="mpegts.js"></script>
<script>
window.__log = [];
(function () {
  const v = document.getElementById('v');
  const features = mpegts.getFeatureList();
  window.__log.push('features ' + JSON.stringify(features));
  const player = mpegts.createPlayer({type: 'flv', isLive: true, url: %(url)s},
                                     {enableStashBuffer: false, liveBufferLatencyChasing: false});
  player.on(mpegts.Events.ERROR, function (type, detail, info) {
    window.__log.push('error ' + type + ' ' + detail + ' ' + JSON.stringify(info));
  });
  player.on(mpegts.Events.MEDIA_INFO, function (info) {
    window.__log.push('media ' + info.mimeType);
  });
  player.attachMediaElement(v);
  player.load();
  v.muted = true;
  const p = v.play();
  if (p && p.catch) p.catch(function (e) { window.__log.push('play() rejected: ' + e); });
  window.__player = player;
})();
</script>
</body></html>
"""


def _samples_in(obj):
    """Every dict inside a driver's JSON that carries currentTime (any nesting)."""
    found = []
    if isinstance(obj, dict):
        if 'currentTime' in obj:
            found.append(obj)
        for v in obj.values():
            if isinstance(v, (dict, list)):
                found.extend(_samples_in(v))
    elif isinstance(obj, list):
        for v in obj:
            found.extend(_samples_in(v))
    return found


def _parse_json(text):
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class BrowserFlvTest(unittest.TestCase):

    def setUp(self):
        if not os.path.exists(CHROMIUM):
            self.skipTest('%s is not installed' % CHROMIUM)
        if not os.path.isdir(os.path.join(NODE_MODULES, 'playwright-core')) or not os.path.exists(MPEGTS_JS):
            self.skipTest('tests/browser/node_modules (playwright-core, mpegts.js) is not installed')
        require_tool('node')
        require_tool('ffmpeg')

    def serve_page(self, flv_url):
        """A web server on another origin serving the player page; returns the page URL."""
        root = tempfile.mkdtemp(prefix='rill-page-')
        self.addCleanup(shutil.rmtree, root, True)
        shutil.copy(MPEGTS_JS, os.path.join(root, 'mpegts.js'))
        with open(os.path.join(root, 'index.html'), 'w') as f:
            f.write(PAGE % {'url': json.dumps(flv_url)})
        server = http.server.ThreadingHTTPServer((HOST, 0), functools.partial(_QuietHandler, directory=root))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def shutdown():
            server.shutdown()
            server.server_close()
            thread.join(5)
        self.addCleanup(shutdown)
        return 'http://%s:%d/index.html' % (HOST, server.server_address[1])

    def run_driver(self, script, page_url, seconds):
        """Run a Node driver in its own process group (killed with all of Chromium on timeout)."""
        proc = subprocess.Popen(['node', script, page_url, str(seconds)], cwd=BROWSER_DIR,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)

        def kill():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait(5)
        self.addCleanup(kill)
        try:
            out, err = proc.communicate(timeout=seconds + 45)
        except subprocess.TimeoutExpired:
            kill()
            out, err = proc.communicate()
            self.fail('%s did not finish within %d s\nstdout: %s\nstderr: %s' % (
                os.path.basename(script), seconds + 45, out[-2000:], err[-2000:]))
        finally:
            # Chromium helpers that outlived the driver.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        return proc.returncode, out, err

    def test_chromium_plays_live_flv_cross_origin(self):
        with Rill() as rill:
            pub = ffmpeg_publish(rill.rtmp_url('browser'))
            self.addCleanup(stop_process, pub)

            def live():
                try:
                    with socket.create_connection((HOST, rill.http_port), timeout=2) as s:
                        s.sendall(b'HEAD /live/browser.flv HTTP/1.0\r\n\r\n')
                        return s.recv(64).startswith(b'HTTP/1.0 200') or None
                except OSError:
                    return None
            self.assertTrue(wait_until(live, 10, 0.1), 'stream never became playable\n' + process_log(pub))

            page_url = self.serve_page(rill.http_url('/live/browser.flv'))
            self.assertNotEqual(page_url.split('/')[2], '%s:%d' % (HOST, rill.http_port))

            rc, out, err = self.run_driver(DRIVER, page_url, SAMPLE_SECONDS)
            report = 'play.js exit %s\nstdout: %s\nstderr: %s' % (rc, out[-4000:], err[-2000:])
            data = _parse_json(out)
            samples = _samples_in(data) if data is not None else []
            self.assertTrue(samples, 'no samples from the browser driver\n' + report)

            frames = max(int(s.get('totalVideoFrames') or 0) for s in samples)
            times = [float(s.get('currentTime') or 0) for s in samples]
            advance = max(times) - min(times)
            diag = '%s\nsamples: %s\n--- rill log ---\n%s' % (report, json.dumps(samples), rill.log_tail(20))
            sys.stderr.write('\nchromium: %d frames decoded, currentTime %.2f -> %.2f s in %d samples\n' % (
                frames, min(times), max(times), len(samples)))
            self.assertGreater(frames, 0, 'no video frame decoded\n' + diag)
            self.assertGreaterEqual(advance, 5.0, 'currentTime advanced %.2f s in %d s\n%s' % (
                advance, SAMPLE_SECONDS, diag))
            self.assertIn('http-flv: ', rill.log_text())


if __name__ == '__main__':
    unittest.main()
