"""A healthy publisher and players of live/cam, for tests that check that something else (a flood,
malformed sessions, stalled players) leaves them alone."""

import time

import rilltest
from muxplayers import MuxPlayers
from test_worker_link import make_relay_media


def start_healthy(test, rill, players=4, media=None, settle_s=1.5):
    """ffmpeg publishing live/cam (the light relay media unless `media`), then `players` RTMP and
    `players` HTTP-FLV players of it; both stopped by test's cleanups. Returns (publisher, MuxPlayers)."""
    pub = rilltest.ffmpeg_publish(rill.rtmp_url('cam'), media or make_relay_media())
    test.addCleanup(rilltest.stop_process, pub)
    test.assertTrue(rill.wait_for_log(r'publishing live/cam', 15), 'no publisher\n' + rill.diagnostics())
    mux = MuxPlayers(rilltest.HOST, rill.rtmp_port, rill.http_port, max_frames=10)
    test.addCleanup(mux.stop)
    mux.add_rtmp('live', 'cam', players)
    mux.add_flv('live', 'cam', players)
    mux.start()
    time.sleep(settle_s)
    return pub, mux
