// Rill console: the live list of streams, a chart of their input bitrate and players, an
// embedded player and kick/drop buttons. Everything comes from the JSON API of this server
// (docs/api.md), refreshed every 2 s. No third-party code but hls.js and mpegts.js, served by
// Rill itself. The API token (api.token) is asked once and kept for the browser session; a
// "#token=..." in the address gives it without asking. "#play=app/name" starts the player.
'use strict';

const REFRESH_MS = 2000;
const HISTORY_POINTS = 150;  // 5 minutes of 2 s samples
const COLORS = ['#e63946', '#457b9d', '#2a9d8f', '#f4a261', '#6a4c93', '#8d99ae', '#264653', '#e76f51'];
window.__log = window.__log || [];

const state = { token: null, history: new Map(), selected: null, player: null, httpBase: null, errors: 0 };

function hashParams() {
  const out = new Map();
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(decodeURIComponent(part.slice(0, eq)), decodeURIComponent(part.slice(eq + 1)));
  }
  return out;
}

async function api(method, path) {
  const headers = state.token ? { Authorization: 'Bearer ' + state.token } : {};
  const resp = await fetch(path, { method, headers, cache: 'no-store' });
  if (resp.status === 401) {
    const token = window.prompt('API token (api.token of this server):');
    if (token === null) throw new Error('the API needs a token');
    state.token = token.trim();
    sessionStorage.setItem('rill-token', state.token);
    return api(method, path);
  }
  if (resp.status === 204) return null;
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

function text(el, value) { el.textContent = value; return el; }
function cell(row, value, cls) { const td = text(document.createElement('td'), value); if (cls) td.className = cls; row.appendChild(td); return td; }
function button(label, onclick, cls) { const b = text(document.createElement('button'), label); b.onclick = onclick; if (cls) b.className = cls; return b; }

function duration(s) {
  s = Math.floor(s);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + (s % 60) + 's';
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + ' ' + units[i];
}

function keyOf(s) { return s.app + '/' + s.name; }

function record(streams) {
  const now = Date.now();
  const seen = new Set();
  for (const s of streams) {
    const key = keyOf(s);
    seen.add(key);
    if (!state.history.has(key)) state.history.set(key, []);
    const h = state.history.get(key);
    h.push({ t: now, kbps: s.bitrate_in_kbps, players: s.players.total });
    if (h.length > HISTORY_POINTS) h.shift();
  }
  for (const key of [...state.history.keys()]) if (!seen.has(key)) state.history.delete(key);
}

function renderStreams(streams) {
  const body = document.querySelector('#streams tbody');
  body.replaceChildren();
  for (const s of streams) {
    const row = document.createElement('tr');
    row.dataset.key = keyOf(s);
    if (keyOf(s) === state.selected) row.className = 'selected';
    cell(row, keyOf(s));
    cell(row, s.video ? `${s.video.codec} ${s.video.width}x${s.video.height} ${s.video.fps} fps` : '—');
    cell(row, s.audio ? `${s.audio.codec} ${s.audio.sample_rate / 1000} kHz ${s.audio.channels} ch` : '—');
    cell(row, s.bitrate_in_kbps + ' kbit/s', 'num');
    cell(row, s.players.rtmp, 'num');
    cell(row, s.players.flv, 'num');
    cell(row, s.players.hls, 'num');
    cell(row, duration(s.uptime_s));
    cell(row, s.worker, 'num');
    const actions = cell(row, '');
    actions.appendChild(button('play', () => select(keyOf(s))));
    actions.appendChild(button('drop publisher', () => drop(s), 'danger'));
    body.appendChild(row);
  }
}

function drawChart() {
  const canvas = document.getElementById('chart');
  const g = canvas.getContext('2d');
  const w = canvas.width, h = canvas.height, pad = 40;
  g.clearRect(0, 0, w, h);
  const series = [...state.history.entries()];
  let maxKbps = 1, maxPlayers = 1;
  for (const [, pts] of series) for (const p of pts) { maxKbps = Math.max(maxKbps, p.kbps); maxPlayers = Math.max(maxPlayers, p.players); }
  const now = Date.now(), span = HISTORY_POINTS * REFRESH_MS;
  const x = (t) => pad + (w - 2 * pad) * (1 - (now - t) / span);
  g.strokeStyle = '#ccc';
  g.strokeRect(pad, 10, w - 2 * pad, h - pad - 10);
  g.fillStyle = '#555';
  g.fillText(Math.round(maxKbps) + ' kbit/s', 2, 20);
  g.fillText(maxPlayers + ' players', w - pad + 2, 20);
  const legend = document.getElementById('legend');
  legend.replaceChildren();
  let points = 0;
  series.forEach(([key, pts], i) => {
    const color = COLORS[i % COLORS.length];
    for (const [field, max, dash] of [['kbps', maxKbps, []], ['players', maxPlayers, [4, 3]]]) {
      g.strokeStyle = color;
      g.setLineDash(dash);
      g.beginPath();
      pts.forEach((p, j) => {
        const y = h - pad - (h - pad - 10) * (p[field] / max);
        if (j === 0) g.moveTo(x(p.t), y); else g.lineTo(x(p.t), y);
      });
      g.stroke();
    }
    g.setLineDash([]);
    points += pts.length;
    const item = document.createElement('span');
    const swatch = document.createElement('i');
    swatch.style.background = color;
    item.append(swatch, key + ' (solid: kbit/s, dashed: players)');
    legend.appendChild(item);
  });
  return points;
}

async function renderClients() {
  if (!state.selected) return;
  const [app, name] = state.selected.split('/');
  const list = await api('GET', `/api/v1/clients?app=${encodeURIComponent(app)}&name=${encodeURIComponent(name)}&limit=1000`);
  const body = document.querySelector('#clients tbody');
  body.replaceChildren();
  for (const c of list.items) {
    const row = document.createElement('tr');
    cell(row, c.id === null ? '—' : String(c.id));
    cell(row, c.kind);
    cell(row, c.proto);
    cell(row, c.addr + (c.user_agent ? ' ' + c.user_agent : ''));
    cell(row, c.since ? c.since.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');
    cell(row, c.bytes_out === undefined ? '—' : bytes(c.bytes_out), 'num');
    cell(row, c.worker === undefined ? '—' : c.worker, 'num');
    const actions = cell(row, '');
    if (c.id !== null) actions.appendChild(button('kick', () => kick(c), 'danger'));
    body.appendChild(row);
  }
}

async function kick(c) {
  if (!window.confirm(`Close ${c.kind} ${c.id} (${c.proto} ${c.addr})?`)) return;
  try { await api('DELETE', '/api/v1/clients/' + c.id); } catch (e) { showError(e); }
  refresh();
}

async function drop(s) {
  if (!window.confirm(`Disconnect the publisher of ${keyOf(s)}?`)) return;
  try { await api('DELETE', `/api/v1/streams/${encodeURIComponent(s.app)}/${encodeURIComponent(s.name)}`); } catch (e) { showError(e); }
  refresh();
}

function stopPlayer() {
  if (!state.player) return;
  try { state.player.destroy(); } catch (e) { /* already gone */ }
  state.player = null;
}

function play() {
  stopPlayer();
  if (!state.selected || !state.httpBase) return;
  const video = document.getElementById('video');
  const proto = document.getElementById('proto').value;
  if (proto === 'hls' && window.Hls && Hls.isSupported()) {
    const hls = new Hls({ liveSyncDurationCount: 2 });
    hls.loadSource(`${state.httpBase}/${state.selected}.m3u8`);
    hls.attachMedia(video);
    state.player = hls;
  } else if (proto === 'flv' && window.mpegts && mpegts.isSupported()) {
    const p = mpegts.createPlayer({ type: 'flv', isLive: true, url: `${state.httpBase}/${state.selected}.flv` });
    p.attachMediaElement(video);
    p.load();
    state.player = p;
  }
  video.play().catch(() => {});
}

function select(key) {
  state.selected = key;
  document.getElementById('playing').hidden = false;
  text(document.getElementById('playing-name'), key);
  play();
  renderClients().catch(showError);
}

function showError(e) { text(document.getElementById('error'), String(e.message || e)); }

function httpBase(server) {
  const listen = (server.http_listen || [])[0];
  if (!listen) return null;
  const colon = listen.lastIndexOf(':');
  let host = listen.slice(0, colon);
  if (host === '0.0.0.0' || host === '[::]') host = location.hostname;
  return `${location.protocol}//${host}:${listen.slice(colon + 1)}`;
}

async function refresh() {
  try {
    const [server, streams] = await Promise.all([api('GET', '/api/v1/server'), api('GET', '/api/v1/streams?limit=1000')]);
    state.httpBase = state.httpBase || httpBase(server);
    const t = server.totals;
    text(document.getElementById('server'),
         `v${server.version} · pid ${server.pid} · up ${duration(server.uptime_s)} · ${server.workers.length} workers · ` +
         `${t.streams} streams · players ${t.players.rtmp} RTMP / ${t.players.flv} FLV / ${t.players.hls} HLS · ` +
         `in ${t.bitrate_in_kbps} kbit/s · out ${t.bitrate_out_kbps} kbit/s`);
    record(streams.items);
    renderStreams(streams.items);
    const points = drawChart();
    text(document.getElementById('updated'), 'updated ' + new Date().toLocaleTimeString());
    text(document.getElementById('error'), '');
    window.__log.push({ t: Math.round(performance.now()), streams: streams.items.map(keyOf), chartPoints: points });
    if (window.__log.length > 500) window.__log.shift();
    const wanted = hashParams().get('play');
    if (wanted && !state.selected && state.history.has(wanted)) select(wanted);
    else if (state.selected) await renderClients();
  } catch (e) {
    showError(e);
  }
}

function start() {
  const params = hashParams();
  if (params.has('proto')) document.getElementById('proto').value = params.get('proto');
  state.token = params.get('token') || sessionStorage.getItem('rill-token');
  document.getElementById('proto').onchange = play;
  document.getElementById('forget').onclick = () => { sessionStorage.removeItem('rill-token'); state.token = null; };
  refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
