"""The Prometheus and Grafana pack (docs/api.md, "Prometheus and Grafana"): the alerting rules
(packaging/prometheus/rill-alerts.yml) and the dashboard (packaging/grafana/rill-dashboard.json),
checked with the real tools of Debian's `prometheus` package.

- promtool check rules on the alerts, promtool test rules with tests/prometheus/rill-alerts.test.yml
  (each alert fires when it should and not otherwise);
- the dashboard's structure (ids, every template variable defined, a stream selector) and every
  family that the dashboard or an alert names exists in docs/api.md's metrics table;
- a real Prometheus (loopback, a free port, its TSDB in a temp dir, 1 s scrapes with the API
  token) scraping a running Rill (2 workers, one stream published with ffmpeg, 3 RTMP + 2 HTTP-FLV
  players, a push relay to a closed port): every dashboard query (template variables replaced by
  this run's values) and every alert expression evaluates with "status": "success", every
  dashboard query returns data, sum(rill_stream_players) is the 5 players started, the rules load
  and evaluate healthy, the relay-down expression sees the push, and a worker killed with SIGKILL
  shows in rill_worker_restarts_total and the respawn alert's expression.

Skipped when prometheus / promtool are not installed (scripts/deps --test installs them).

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_prometheus
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from muxplayers import MuxPlayers
from rilltest import (HOST, SOURCE_DIR, Rill, ffmpeg_publish, free_port, make_test_media, require_tool, run,
                      stop_process, to_yaml, wait_until)

ALERTS = os.path.join(SOURCE_DIR, 'packaging', 'prometheus', 'rill-alerts.yml')
ALERT_TESTS = os.path.join(SOURCE_DIR, 'tests', 'prometheus', 'rill-alerts.test.yml')
DASHBOARD = os.path.join(SOURCE_DIR, 'packaging', 'grafana', 'rill-dashboard.json')
API_DOC = os.path.join(SOURCE_DIR, 'docs', 'api.md')
TOKEN = 'prometheus-test-token'
RTMP_PLAYERS, FLV_PLAYERS = 3, 2
# Grafana's own variables, as Grafana would fill them in for a short time range.
GRAFANA_BUILTINS = {'__rate_interval': '10s', '__interval': '1s', '__range': '1m'}
_VAR = re.compile(r'\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]')
_METRIC = re.compile(r'\b(rill_[a-z0-9_]+)')


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def all_panels(dash):
    for p in dash['panels']:
        yield p
        yield from p.get('panels', [])  # a collapsed row keeps its panels inside


def dashboard_queries(dash):
    """[(panel title, expr)] of every query of every panel."""
    return [(p['title'], t['expr']) for p in all_panels(dash) for t in p.get('targets', []) if t.get('expr')]


def alert_rules():
    """[(alert name, expr)], read with a small line parser (the test needs no YAML library):
    `- alert: NAME` then `expr: EXPR` on one line or folded (>-) over the indented lines below."""
    with open(ALERTS) as f:
        lines = f.read().splitlines()
    rules = []
    for i, line in enumerate(lines):
        m = re.match(r'\s*- alert: (\S+)', line)
        if not m:
            continue
        j = i + 1
        while not re.match(r'\s*expr:', lines[j]):
            j += 1
        expr = lines[j].split('expr:', 1)[1].strip()
        if expr in ('>-', '>', '|'):
            indent = len(lines[j]) - len(lines[j].lstrip())
            parts = []
            for k in range(j + 1, len(lines)):
                if lines[k].strip() and len(lines[k]) - len(lines[k].lstrip()) <= indent:
                    break
                parts.append(lines[k].strip())
            expr = ' '.join(p for p in parts if p)
        rules.append((m.group(1), expr))
    return rules


def documented_families():
    """The families in docs/api.md's metrics table (`| `rill_x` | type | ...`)."""
    with open(API_DOC) as f:
        return set(re.findall(r'^\| `(rill_[a-z0-9_]+)` \|', f.read(), re.M))


def family_of(name, families):
    """A summary's _sum/_count samples belong to their family."""
    for suffix in ('_sum', '_count'):
        if name not in families and name.endswith(suffix) and name[:-len(suffix)] in families:
            return name[:-len(suffix)]
    return name


def substitute(expr, values):
    """expr with Grafana's template variables replaced by `values` (a KeyError names one that is
    neither a dashboard variable nor a Grafana built-in)."""
    return _VAR.sub(lambda m: values[m.group(1) or m.group(2) or m.group(3)], expr)


class PromtoolTest(unittest.TestCase):

    def setUp(self):
        require_tool('promtool')

    def test_check_rules(self):
        res = run(['promtool', 'check', 'rules', ALERTS], timeout=30)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn('SUCCESS: 6 rules found', res.stdout + res.stderr)

    def test_rule_unit_tests(self):
        res = run(['promtool', 'test', 'rules', ALERT_TESTS], timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn('SUCCESS', res.stdout + res.stderr)
        # Every alert of the file has a test case in the unit tests.
        with open(ALERT_TESTS) as f:
            tested = set(re.findall(r'alertname: (\S+)', f.read()))
        self.assertEqual({name for name, _ in alert_rules()}, tested)


class PackFilesTest(unittest.TestCase):
    """No tool needed: the files agree with each other and with docs/api.md."""

    def test_dashboard_structure(self):
        dash = load_dashboard()
        variables = {v['name']: v for v in dash['templating']['list']}
        self.assertEqual(set(variables), {'datasource', 'instance', 'app', 'stream'})
        self.assertEqual(variables['stream']['type'], 'query')
        self.assertIn('label_values(', variables['stream']['query'])
        ids = [p['id'] for p in all_panels(dash)]
        self.assertEqual(len(ids), len(set(ids)), 'panel ids repeat')
        titles = ' '.join(p['title'] for p in all_panels(dash))
        for word in ('Streams', 'Players by protocol', 'Bandwidth', 'CPU per worker', 'Memory per worker',
                     'Event loop lag', 'Open file descriptors', 'Worker restarts', 'Input bitrate',
                     'Dropped frames', 'HLS segments', 'Relays'):
            self.assertIn(word, titles)
        values = dict(GRAFANA_BUILTINS, datasource='x', instance='x', app='x', stream='x')
        for title, expr in dashboard_queries(dash):
            substitute(expr, values)  # every variable is known
        for p in all_panels(dash):
            if p['type'] != 'row':
                self.assertEqual(p['datasource'], {'type': 'prometheus', 'uid': '${datasource}'}, p['title'])

    def test_every_family_named_is_documented(self):
        families = documented_families()
        self.assertIn('rill_stream_players', families)
        exprs = [e for _, e in dashboard_queries(load_dashboard())] + [e for _, e in alert_rules()]
        exprs += [v['query'] for v in load_dashboard()['templating']['list'] if v['type'] == 'query']
        named = {family_of(n, families) for e in exprs for n in _METRIC.findall(e)}
        self.assertEqual(named - families, set(), 'not in the metrics table of docs/api.md')


class Prometheus:
    """A prometheus server on a free loopback port, its TSDB in a temp dir, scraping `target`
    every second with the bearer token and evaluating the alerting rules every second."""

    def __init__(self, target, token):
        self.dir = tempfile.mkdtemp(prefix='rill-prometheus-')
        self.port = free_port()
        self.config = os.path.join(self.dir, 'prometheus.yml')
        with open(self.config, 'w') as f:
            f.write(to_yaml({
                'global': {'scrape_interval': '1s', 'scrape_timeout': '1s', 'evaluation_interval': '1s'},
                'rule_files': [ALERTS],
                'scrape_configs': [{'job_name': 'rill', 'static_configs': [{'targets': [target]}],
                                    'authorization': {'type': 'Bearer', 'credentials': token}}]}))
        self.log_path = os.path.join(self.dir, 'prometheus.log')
        self.proc = None

    def start(self):
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(
                ['prometheus', '--config.file=' + self.config, '--storage.tsdb.path=' + os.path.join(self.dir, 'data'),
                 '--web.listen-address=%s:%d' % (HOST, self.port), '--log.level=info'],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)
        if not wait_until(lambda: self.proc.poll() is not None or self.ready(), 20, 0.2) or self.proc.poll() is not None:
            raise AssertionError('prometheus did not become ready\n' + self.log())
        return self

    def ready(self):
        try:
            with urllib.request.urlopen('http://%s:%d/-/ready' % (HOST, self.port), timeout=2) as resp:
                return resp.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def api(self, path, **params):
        url = 'http://%s:%d/api/v1/%s?%s' % (HOST, self.port, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:  # 400/422: a bad query, answered in JSON
            return json.load(e)

    def query(self, expr):
        """The answer of /api/v1/query for `expr` now."""
        return self.api('query', query=expr)

    def vector(self, expr):
        """[(labels, value)] of an instant query that must succeed."""
        ans = self.query(expr)
        if ans.get('status') != 'success':
            raise AssertionError('%s: %s' % (expr, ans))
        return [(r['metric'], float(r['value'][1])) for r in ans['data']['result']]

    def log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()[-4000:]
        except OSError:
            return ''

    def stop(self):
        stop_process(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


class PrometheusScrapeTest(unittest.TestCase):

    def setUp(self):
        for tool in ('prometheus', 'promtool', 'ffmpeg'):
            require_tool(tool)
        self.media = make_test_media()

    def test_dashboard_and_alerts_on_a_real_prometheus(self):
        started = time.monotonic()
        closed = free_port()  # nothing listens there: the push relay stays down
        config = {'workers': 2, 'api': {'token': TOKEN},
                  'apps': {'live': {'push': [{'url': 'rtmp://%s:%d/live' % (HOST, closed), 'reconnect': '1s'}]}}}
        with Rill(config) as r:
            pub = ffmpeg_publish(r.rtmp_url('cam1'), self.media)
            self.addCleanup(stop_process, pub)
            mux = MuxPlayers(HOST, r.rtmp_port, r.http_port)
            self.addCleanup(mux.stop)
            prom = Prometheus('%s:%d' % (HOST, r.api_port), TOKEN)
            self.addCleanup(prom.stop)
            try:
                self.run_checks(r, pub, mux, prom)
            finally:
                mux.stop()
                stop_process(pub)
                prom.stop()
        self.assertLess(time.monotonic() - started, 55)

    def run_checks(self, r, pub, mux, prom):
        instance = '%s:%d' % (HOST, r.api_port)
        self.assertTrue(wait_until(lambda: 'rill_stream_bitrate_in_kbps{app="live",stream="cam1"}' in self.metrics(r),
                                   15, 0.2), 'stream not published: ' + run(['cat', pub.log_path]).stdout)
        mux.add_rtmp('live', 'cam1', RTMP_PLAYERS)
        mux.add_flv('live', 'cam1', FLV_PLAYERS)
        mux.start()
        prom.start()
        # Scraped (with the token) for a few seconds: every rate() over $__rate_interval has samples.
        self.assertTrue(wait_until(lambda: prom.vector('count_over_time(up{job="rill"}[10s]) >= 5 and up == 1'),
                                   20, 0.5), 'no successful scrapes\n' + prom.log() + str(prom.api('targets')))
        players = 'sum(rill_stream_players{app="live",stream="cam1"})'
        self.assertTrue(wait_until(lambda: prom.vector(players) == [({}, RTMP_PLAYERS + FLV_PLAYERS)], 15, 0.5),
                        '%s: %s, players: %s' % (players, prom.vector(players),
                                                 [(s.kind, s.closed, s.error) for s in mux.snapshot()]))
        self.assertEqual(sorted((m['proto'], v) for m, v in prom.vector('sum by (proto) (rill_stream_players)')),
                         [('flv', FLV_PLAYERS), ('hls', 0), ('rtmp', RTMP_PLAYERS)])
        self.assertFalse([s for s in mux.snapshot() if s.closed], 'a player was closed')

        self.check_dashboard(prom, instance)
        self.check_alerts(prom)
        self.check_worker_restart(r, prom)

    def metrics(self, r):
        req = urllib.request.Request('http://%s:%d/metrics' % (HOST, r.api_port),
                                     headers={'Authorization': 'Bearer ' + TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.read().decode()
        except (OSError, urllib.error.URLError):
            return ''

    def check_dashboard(self, prom, instance):
        dash = load_dashboard()
        values = dict(GRAFANA_BUILTINS, instance=instance, app='live', stream='cam1')
        # The template variables' queries list this run's server, app and stream.
        for v in dash['templating']['list']:
            if v['type'] != 'query':
                continue
            m = re.fullmatch(r'label_values\((.*), (\w+)\)', v['query'])
            self.assertTrue(m, v['query'])
            found = {labels.get(m.group(2)) for labels, _ in prom.vector(substitute(m.group(1), values))}
            self.assertIn(values[v['name']], found, v['query'])
        empty = []
        for title, expr in dashboard_queries(dash):
            q = substitute(expr, values)
            ans = prom.query(q)
            self.assertEqual(ans.get('status'), 'success', '%s: %s -> %s' % (title, q, ans))
            if not ans['data']['result']:
                empty.append('%s: %s' % (title, q))
        self.assertEqual(empty, [], 'dashboard queries without data')

    def check_alerts(self, prom):
        rules = alert_rules()
        self.assertEqual(len(rules), 6)
        for name, expr in rules:
            ans = prom.query(expr)
            self.assertEqual(ans.get('status'), 'success', '%s: %s -> %s' % (name, expr, ans))
            for metric in set(_METRIC.findall(expr)):
                self.assertTrue(prom.vector('count({__name__="%s"})' % metric), '%s: no series %s' % (name, metric))
        exprs = dict(rules)
        down = prom.vector(exprs['RillRelayDown'])
        self.assertEqual([(m['kind'], m['app'], m['stream']) for m, _ in down], [('push', 'live', 'cam1')])
        self.assertEqual(prom.vector(exprs['RillStreamNoInput']), [])
        self.assertEqual(prom.vector(exprs['RillWorkerFileDescriptors']), [])
        self.assertEqual(prom.vector(exprs['RillWorkerRespawned']), [])
        self.assertEqual(prom.vector(exprs['RillRecordingFailed']), [])
        # The server loaded the file and evaluates every rule without error.

        def healthy():
            groups = prom.api('rules').get('data', {}).get('groups', [])
            got = [(x['name'], x['health']) for g in groups for x in g['rules']]
            return sorted(got) == sorted((name, 'ok') for name, _ in rules) and got
        self.assertTrue(wait_until(healthy, 10, 0.5), prom.api('rules'))

    def check_worker_restart(self, r, prom):
        victim = r.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        r.wait_workers(2, timeout=15, exclude=(victim,))
        self.assertTrue(wait_until(lambda: prom.vector('sum(rill_worker_restarts_total)') == [({}, 1)], 15, 0.5),
                        prom.vector('rill_worker_restarts_total'))
        respawned = dict(alert_rules())['RillWorkerRespawned']
        self.assertTrue(wait_until(lambda: len(prom.vector(respawned)) == 1, 10, 0.5), prom.vector(respawned))


if __name__ == '__main__':
    unittest.main()
