"""HLS at a cluster edge (docs/cluster.md): an edge with no local publisher makes HLS from the
stream it pulls from its origin; headless Chromium plays it with hls.js; Debian's nginx with
proxy_cache in front of the edge absorbs most HLS requests thanks to Rill's Cache-Control.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_cluster_hls
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import rilltest
import test_browser_hls as browser
from hlsutil import Playlist, make_gop1_media, request
from rilltest import HOST, Rill, ffmpeg_publish, stop_process, wait_until

CLIENTS = 100       # HLS clients behind the cache, as the issue asks
CLIENT_SECONDS = 10
NGINX = shutil.which('nginx') or '/usr/sbin/nginx'

NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
error_log %(dir)s/error.log warn;
pid %(dir)s/nginx.pid;
events { worker_connections 1024; }
http {
  access_log %(dir)s/access.log;
  client_body_temp_path %(dir)s/body;
  proxy_temp_path %(dir)s/proxy;
  fastcgi_temp_path %(dir)s/fastcgi;
  uwsgi_temp_path %(dir)s/uwsgi;
  scgi_temp_path %(dir)s/scgi;
  proxy_cache_path %(dir)s/cache levels=1:2 keys_zone=hls:10m max_size=256m inactive=5m use_temp_path=off;
  server {
    listen %(host)s:%(port)d;
    location / {
      proxy_pass http://%(host)s:%(edge)d;
      proxy_http_version 1.1;
      proxy_cache hls;
      proxy_cache_lock on;          # concurrent misses of one object: one request to the edge
      proxy_cache_lock_timeout 5s;
      add_header X-Cache-Status $upstream_cache_status;
    }
  }
}
"""


class EdgeHls(unittest.TestCase):
    def setUp(self):
        self.media = make_gop1_media()
        self.origin = Rill({'apps': {'live': {}}}, name='hls-origin')
        self.addCleanup(self.origin.close)
        pub = ffmpeg_publish(self.origin.rtmp_url('cam'), self.media)
        self.addCleanup(stop_process, pub)
        self.assertTrue(self.origin.wait_for_log(r'publishing live/cam', 15))

    def edge(self, fragment):
        tmp = tempfile.mkdtemp(prefix='rill-edge-access-')
        self.addCleanup(shutil.rmtree, tmp, True)
        access = os.path.join(tmp, 'access.log')
        e = Rill({'workers': 2, 'worker_link': {'idle_grace': '200ms'},
                  'log': {'level': 'info', 'access_log': access},
                  'apps': {'live': {'edge': {'origins': [self.origin.rtmp_url('', 'live').rstrip('/')],
                                             'connect_timeout': '1s'},
                                    'hls': {'enabled': True, 'fragment': fragment, 'window': 5}}}},
                 name='hls-edge')
        self.addCleanup(e.close)
        e.access_path = access
        return e

    def wait_playlist(self, port, segments=3):
        def ready():
            status, _, body = request(port, 'GET', '/live/cam.m3u8')
            return status == 200 and len(Playlist(body.decode()).segments) >= segments
        return wait_until(ready, 30, interval=0.5)

    def edge_requests(self, e, since):
        with open(e.access_path, 'rb') as f:
            f.seek(since)
            return len(re.findall(rb'"GET /live/cam', f.read()))

    @unittest.skipIf(not os.path.exists(NGINX), 'nginx missing')
    def test_nginx_proxy_cache_absorbs_the_hls_requests(self):
        e = self.edge('2s')  # target duration 2 s: playlists cacheable for 1 s
        d = tempfile.mkdtemp(prefix='rill-nginx-')
        self.addCleanup(shutil.rmtree, d, True)
        port = rilltest.free_port()
        with open(os.path.join(d, 'nginx.conf'), 'w') as f:
            f.write(NGINX_CONF % {'dir': d, 'host': HOST, 'port': port, 'edge': e.http_port})
        ng = subprocess.Popen([NGINX, '-p', d, '-c', os.path.join(d, 'nginx.conf')], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(stop_process, ng)
        self.assertTrue(rilltest.wait_port(port, timeout=10), 'nginx did not start')
        # One request starts the edge's pull (an HLS request alone does); the clients come once
        # the playlist is there.
        self.assertTrue(self.wait_playlist(port), 'no playlist through nginx\n' + e.log_text()[-2000:])
        since = os.path.getsize(e.access_path)
        counts = [0] * CLIENTS
        errors = []

        def client(i):
            seen = set()
            end = time.monotonic() + CLIENT_SECONDS
            while time.monotonic() < end:
                status, _, body = request(port, 'GET', '/live/cam.m3u8')
                counts[i] += 1
                if status != 200:
                    errors.append(status)
                    time.sleep(0.5)
                    continue
                for uri in Playlist(body.decode()).segments[-2:]:
                    name = uri['uri']
                    if name in seen:
                        continue
                    seen.add(name)
                    st, _, _ = request(port, 'GET', '/live/' + name)
                    counts[i] += 1
                    if st != 200:
                        errors.append(st)
                time.sleep(0.5)  # hls.js reloads an unchanged playlist at half the target duration
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CLIENT_SECONDS + 30)
        total = sum(counts)
        at_edge = self.edge_requests(e, since)
        print('\n[cluster] nginx proxy_cache: %d HLS requests from %d clients, %d reached the edge (%.1f %%)'
              % (total, CLIENTS, at_edge, 100.0 * at_edge / max(total, 1)))
        self.assertFalse(errors, 'errors through the cache: %s' % errors[:10])
        self.assertGreater(total, CLIENTS * 10)
        self.assertLessEqual(at_edge, total * 0.10)

    @unittest.skipIf(browser._missing(), 'missing: %s' % ', '.join(browser._missing()))
    def test_chromium_plays_edge_hls_with_hlsjs(self):
        e = self.edge('1s')
        self.assertTrue(self.wait_playlist(e.http_port), 'no playlist at the edge\n' + e.log_text()[-2000:])
        src = e.http_url('/live/cam.m3u8')
        page = browser.BrowserHlsTest.serve_page(self, src)
        r = rilltest.run(['node', browser.PLAY_JS, page, '8', browser.CHROMIUM], timeout=100, cwd=browser.BROWSER_DIR)
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.fail('play.js printed no JSON (exit %d)\n%s\n%s' % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        diag = json.dumps({k: out.get(k) for k in ('samples', 'log', 'console', 'pageErrors')}, indent=1)[:5000]
        self.assertEqual(r.returncode, 0, diag)
        samples = out['samples']
        self.assertGreater(max(s.get('totalVideoFrames', 0) for s in samples), 0, diag)
        times = [s.get('currentTime', 0) for s in samples]
        self.assertGreaterEqual(max(times) - min(times), 3.0, diag)
        self.assertFalse([l for l in out['log'] if 'FATAL' in l], diag)


if __name__ == '__main__':
    unittest.main()
