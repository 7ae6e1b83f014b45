"""Headless Chromium for the browser tests: tests/browser/play.js (playwright-core driving
Debian's /usr/bin/chromium) loads a page, samples its first <video> once a second and returns
what the page logged (see play.js for the JSON it prints)."""

import json
import os

import rilltest

BROWSER_DIR = os.path.join(rilltest.SOURCE_DIR, 'tests', 'browser')
CHROMIUM = '/usr/bin/chromium'
PLAYWRIGHT = os.path.join(BROWSER_DIR, 'node_modules', 'playwright-core')
PLAY_JS = os.path.join(BROWSER_DIR, 'play.js')


def play_page(test, page, seconds):
    """Runs play.js on `page` for `seconds`; returns (its JSON, a diagnostic text for failure
    messages). Fails `test` when the driver printed no JSON or exited non-zero."""
    r = rilltest.run(['node', PLAY_JS, page, str(seconds), CHROMIUM], timeout=seconds + 90, cwd=BROWSER_DIR)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        test.fail('play.js printed no JSON (exit %d)\nstdout: %s\nstderr: %s' % (
            r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    diag = json.dumps({k: out.get(k) for k in ('samples', 'log', 'console', 'pageErrors', 'driverError')},
                      indent=1)[:6000]
    test.assertEqual(r.returncode, 0, diag)
    return out, diag
