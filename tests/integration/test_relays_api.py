"""GET/POST/DELETE /api/v1/relays and rill_relay_up (docs/api.md, docs/cluster.md), against an
origin and a 2-worker edge: the edge's pull is listed for the whole server, run-time pulls and
pushes are created on every worker under one id and removed again, bad requests get 4xx.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_relays_api
"""

import http.client
import json
import os
import unittest

from muxplayers import MuxPlayers
from rilltest import HOST, Rill, ffmpeg_publish, stop_process, wait_until
from test_cluster import edge_config, origin_config
from test_worker_link import make_relay_media


def call(r, method, path, body=None):
    """(status, parsed JSON or text) of one API request."""
    conn = http.client.HTTPConnection(HOST, r.api_port, timeout=10)
    try:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        conn.request(method, path, body=data, headers={'Content-Type': 'application/json'} if data else {})
        resp = conn.getresponse()
        text = resp.read().decode('utf-8')
        if resp.getheader('Content-Type', '').startswith('application/json') and text:
            return resp.status, json.loads(text)
        return resp.status, text
    finally:
        conn.close()


def relays(r):
    status, body = call(r, 'GET', '/api/v1/relays')
    assert status == 200, (status, body)
    return body['items']


class RelaysApiTest(unittest.TestCase):
    def start(self, config, name):
        r = Rill(config, name=name)
        self.addCleanup(r.close)
        return r

    def test_list_create_delete(self):
        media = make_relay_media()
        origin = self.start(origin_config(), 'relays-origin')
        pub = ffmpeg_publish(origin.rtmp_url('cam'), media=media)
        self.addCleanup(stop_process, pub)
        self.assertTrue(origin.wait_for_log(r'publishing live/cam', 15))
        edge = self.start(edge_config([origin], idle_close='30s'), 'relays-edge')

        # An edge pull started by a player is listed once for the whole server, with the
        # stream's source, and rill_relay_up says 1.
        m = MuxPlayers(HOST, edge.rtmp_port, edge.http_port, max_frames=100)
        self.addCleanup(m.stop)
        m.add_rtmp('live', 'cam', 1)
        m.start()
        self.assertTrue(wait_until(lambda: len(m.snapshot()[0].frames) >= 5, 20), edge.log_text()[-2000:])
        up = lambda: [x for x in relays(edge) if x['kind'] == 'edge-pull' and x['state'] == 'up']
        self.assertTrue(wait_until(lambda: len(up()) == 1, 10), relays(edge))
        item = up()[0]
        self.assertEqual((item['app'], item['name']), ('live', 'cam'))
        self.assertTrue(item['url'].startswith('rtmp://127.0.0.1:%d/live' % origin.rtmp_port), item)
        self.assertGreater(item['bytes'], 0)
        status, stream = call(edge, 'GET', '/api/v1/streams/live/cam')
        self.assertEqual((status, stream['source']), (200, 'edge-pull'), stream)
        status, metrics = call(edge, 'GET', '/metrics')
        self.assertIn('rill_relay_up{kind="edge-pull",app="live",stream="cam",url="%s"} 1' % item['url'], metrics)

        # A run-time pull of the origin's stream under another name: one id, one row (the worker
        # that runs it; the other stands by), playable; then deleted.
        status, created = call(edge, 'POST', '/api/v1/relays',
                               {'kind': 'pull', 'app': 'live', 'name': 'mirror', 'url': origin.rtmp_url('cam')})
        self.assertEqual(status, 201, created)
        self.assertEqual(created['workers'], 2)
        rid = created['id']
        mine = lambda: [x for x in relays(edge) if x['id'] == rid]
        self.assertTrue(wait_until(lambda: [x['state'] for x in mine()] == ['up'], 15), relays(edge))
        examples = os.environ.get('RILL_API_EXAMPLES')  # scripts/api-doc-examples
        if examples:
            with open(os.path.join(examples, 'relays.json'), 'w') as f:
                f.write(json.dumps(call(edge, 'GET', '/api/v1/relays')[1], indent=2, sort_keys=True) + '\n')
        m2 = MuxPlayers(HOST, edge.rtmp_port, edge.http_port, max_frames=100)
        self.addCleanup(m2.stop)
        m2.add_rtmp('live', 'mirror', 1)
        m2.start()
        self.assertTrue(wait_until(lambda: len(m2.snapshot()[0].frames) >= 5, 15))
        self.assertEqual(call(edge, 'DELETE', '/api/v1/relays/' + rid)[0], 204)
        self.assertTrue(wait_until(lambda: not mine(), 10), relays(edge))
        self.assertEqual(call(edge, 'DELETE', '/api/v1/relays/' + rid)[0], 404)

        # A run-time push to the origin: the stream published on the edge arrives there.
        status, created = call(edge, 'POST', '/api/v1/relays',
                               {'kind': 'push', 'app': 'live', 'name': 'fwd',
                                'url': 'rtmp://127.0.0.1:%d/live/pushed' % origin.rtmp_port})
        self.assertEqual(status, 201, created)
        local = ffmpeg_publish(edge.rtmp_url('fwd'), media=media)
        self.addCleanup(stop_process, local)
        self.assertTrue(origin.wait_for_log(r'publishing live/pushed', 20), edge.log_text()[-3000:])
        self.assertEqual(call(edge, 'DELETE', '/api/v1/relays/' + created['id'])[0], 204)

        # A pull of a name a local publisher holds waits in standby (docs/cluster.md).
        status, created = call(edge, 'POST', '/api/v1/relays',
                               {'kind': 'pull', 'app': 'live', 'name': 'fwd', 'url': origin.rtmp_url('cam')})
        self.assertEqual(status, 201, created)
        states = lambda: [x['state'] for x in relays(edge) if x['id'] == created['id']]
        self.assertTrue(wait_until(lambda: states() == ['standby'], 10), relays(edge))
        self.assertEqual(call(edge, 'DELETE', '/api/v1/relays/' + created['id'])[0], 204)

        # Bad requests.
        for body in ({'kind': 'dvr', 'app': 'live', 'name': 'x', 'url': 'rtmp://127.0.0.1/live'},
                     {'kind': 'pull', 'app': 'nope', 'name': 'x', 'url': 'rtmp://127.0.0.1/live'},
                     {'kind': 'pull', 'app': 'live', 'name': '..', 'url': 'rtmp://127.0.0.1/live'},
                     {'kind': 'pull', 'app': 'live', 'name': 'x', 'url': 'http://127.0.0.1/live'},
                     {'kind': 'pull', 'app': 'live', 'name': 'n' * 128, 'url': 'rtmp://127.0.0.1/' + 'a' * 390},
                     b'{not json', b'[1]'):
            status, err = call(edge, 'POST', '/api/v1/relays', body)
            self.assertEqual(status, 400, (body, err))
            self.assertIn('error', err)
        self.assertEqual(call(edge, 'POST', '/api/v1/relays', b'x' * 20000)[0], 413)
        self.assertEqual(call(edge, 'DELETE', '/api/v1/relays/no-such')[0], 404)
        self.assertEqual(call(edge, 'DELETE', '/api/v1/relays/bad%20id')[0], 404)


if __name__ == '__main__':
    unittest.main()
