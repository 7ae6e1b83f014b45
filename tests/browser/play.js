#!/usr/bin/env node
// Loads a player page in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core) and samples its <video> once a second. Generic: the page decides what plays
// (hls.js, mpegts.js, a plain <video src>); this script only watches the first <video>.
//
//   node play.js PAGE_URL SECONDS [CHROMIUM]
//
// Prints one JSON object on stdout:
//   {"samples": [{"t": ms since load, "currentTime": s, "totalVideoFrames": n,
//                 "droppedVideoFrames": n, "readyState": n, "paused": bool, "error": code|null,
//                 "bufferedEnd": s|null}],
//    "log": [what the page pushed into window.__log], "console": [...], "pageErrors": [...],
//    "driverError": "..." (only when the driver itself failed)}
// Exit status 0 once sampling ran (the caller judges the samples), 2 on a driver failure.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                       '--disable-background-networking', '--disable-component-update', '--disable-sync',
                       '--autoplay-policy=no-user-gesture-required'];

async function main() {
  const [pageUrl, secondsArg, exe] = process.argv.slice(2);
  if (!pageUrl) {
    console.error('usage: play.js PAGE_URL SECONDS [CHROMIUM]');
    process.exit(2);
  }
  const seconds = Number(secondsArg || 10);
  // A fresh profile per run. browserType.launch() refuses a userDataDir option; a persistent
  // context is how playwright takes one.
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rill-chromium-'));
  const out = { samples: [], log: [], console: [], pageErrors: [] };
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: exe || '/usr/bin/chromium',
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 30000,
    });
    const page = context.pages()[0] || await context.newPage();
    page.on('console', (m) => { if (out.console.length < 200) out.console.push(m.type() + ': ' + m.text()); });
    page.on('pageerror', (e) => { if (out.pageErrors.length < 50) out.pageErrors.push(String(e)); });
    const t0 = Date.now();
    await page.goto(pageUrl, { waitUntil: 'load', timeout: 15000 });
    for (let i = 0; i < seconds; i++) {
      await page.waitForTimeout(1000);
      const s = await page.evaluate(() => {
        const v = document.querySelector('video');
        if (!v) return { error: 'no video element' };
        const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : {};
        const b = v.buffered;
        return {
          currentTime: v.currentTime,
          totalVideoFrames: q.totalVideoFrames || 0,
          droppedVideoFrames: q.droppedVideoFrames || 0,
          readyState: v.readyState,
          paused: v.paused,
          error: v.error ? v.error.code : null,
          bufferedEnd: b && b.length ? b.end(b.length - 1) : null,
        };
      });
      s.t = Date.now() - t0;
      out.samples.push(s);
    }
    out.log = await page.evaluate(() => (window.__log || []).slice(0, 200));
  } catch (e) {
    out.driverError = String((e && e.stack) || e);
  } finally {
    if (context) await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(out.driverError ? 2 : 0);
}

main();
