"""The Debian package (scripts/package, docs/operations.md "Debian package"): built from this
build, unpacked into a throwaway root with dpkg -x (nothing is installed on the machine), its
control data checked with dpkg-deb --info, the unit checked with systemd-analyze verify, and the
packaged binary run with -t on the packaged configuration; the Grafana dashboard and Prometheus
alerts are in /usr/share/rill (promtool check rules on them when installed). lintian, when
installed, reports no error.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_package
"""

import json
import os
import pwd
import re
import shutil
import tempfile
import unittest

import rilltest
from rilltest import SOURCE_DIR, require_tool, run
from test_memory import sanitized


def read(path):
    with open(path) as f:
        return f.read()


class PackageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        for tool in ('dpkg-deb', 'dpkg-shlibdeps', 'fakeroot'):
            require_tool(tool)
        if sanitized(rilltest.rill_binary()):
            raise unittest.SkipTest('packages are built from release builds, not sanitizer builds')
        build = os.path.dirname(rilltest.rill_binary())
        res = run([os.path.join(SOURCE_DIR, 'scripts', 'package'), build], timeout=300)
        if res.returncode != 0:
            raise AssertionError('scripts/package failed:\n%s\n%s' % (res.stdout, res.stderr))
        cls.deb = res.stdout.strip().splitlines()[-1]
        cls.root = tempfile.mkdtemp(prefix='rill-pkg-')
        run(['dpkg', '-x', cls.deb, cls.root], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, 'root', ''), ignore_errors=True)

    def test_name_and_control(self):
        self.assertRegex(os.path.basename(self.deb), r'^rill_\d+\.\d+\.\d+_amd64\.deb$')
        info = run(['dpkg-deb', '--info', self.deb], check=True).stdout
        for lib in ('libevent-core-2.1-7', 'libssl3', 'libyaml-cpp', 'libspdlog', 'libsystemd0', 'libc6'):
            self.assertRegex(info, r'Depends:.*%s' % re.escape(lib))
        conffiles = run(['sh', '-c', 'dpkg-deb --ctrl-tarfile "$0" | tar -xO ./conffiles', self.deb], check=True).stdout
        self.assertIn('/etc/rill/rill.yaml', conffiles.split())
        for script in ('postinst', 'postrm', 'prerm'):
            self.assertIn(script, info)
        # A package upgrade upgrades a running service's binary (SIGUSR2), it does not restart it.
        postinst = run(['sh', '-c', 'dpkg-deb --ctrl-tarfile "$0" | tar -xO ./postinst', self.deb], check=True).stdout
        self.assertIn('--signal=SIGUSR2 --kill-who=main rill.service', postinst)
        self.assertNotIn('systemctl restart', postinst)
        self.assertNotIn('try-restart', postinst)

    def test_files(self):
        r = self.root
        for path in ('usr/sbin/rill', 'etc/rill/rill.yaml', 'lib/systemd/system/rill.service',
                     'usr/lib/sysusers.d/rill.conf', 'etc/logrotate.d/rill', 'usr/share/man/man8/rill.8.gz',
                     'usr/share/doc/rill/copyright', 'usr/share/doc/rill/operations.md.gz'):
            self.assertTrue(os.path.exists(os.path.join(r, path)), path)
        self.assertTrue(os.access(os.path.join(r, 'usr/sbin/rill'), os.X_OK))
        self.assertIn('rill -s reopen', read(os.path.join(r, 'etc/logrotate.d/rill')))
        self.assertRegex(read(os.path.join(r, 'usr/lib/sysusers.d/rill.conf')), r'(?m)^u rill ')
        conf = read(os.path.join(r, 'etc/rill/rill.yaml'))
        self.assertRegex(conf, r'(?m)^user: rill$')
        self.assertRegex(conf, r'(?m)^runtime_dir: /run/rill$')
        man = run(['sh', '-c', 'zcat "$0" | head -3', os.path.join(r, 'usr/share/man/man8/rill.8.gz')], check=True).stdout
        self.assertIn('.TH RILL 8', man)

    def test_prometheus_and_grafana_pack(self):
        # docs/api.md "Prometheus and Grafana": the files as in the source tree, readable by all.
        for path, src in (('usr/share/rill/grafana/rill-dashboard.json', 'packaging/grafana/rill-dashboard.json'),
                          ('usr/share/rill/prometheus/rill-alerts.yml', 'packaging/prometheus/rill-alerts.yml')):
            full = os.path.join(self.root, path)
            self.assertTrue(os.path.isfile(full), path)
            self.assertEqual(os.stat(full).st_mode & 0o777, 0o644, path)
            self.assertEqual(read(full), read(os.path.join(SOURCE_DIR, src)), path)
        dash = json.loads(read(os.path.join(self.root, 'usr/share/rill/grafana/rill-dashboard.json')))
        self.assertEqual(dash['uid'], 'rill')
        if shutil.which('promtool'):
            res = run(['promtool', 'check', 'rules', os.path.join(self.root, 'usr/share/rill/prometheus/rill-alerts.yml')],
                      timeout=30)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)

    def test_unit_verifies(self):
        require_tool('systemd-analyze')
        unit = read(os.path.join(self.root, 'lib/systemd/system/rill.service'))
        self.assertIn('ExecStart=/usr/sbin/rill -c /etc/rill/rill.yaml', unit)
        self.assertIn('ProtectSystem=strict', unit)
        # The unit as installed, with its binary at the throwaway root's path (nothing is installed
        # here) and kill where this machine has it.
        unit = unit.replace('/usr/sbin/rill', os.path.join(self.root, 'usr/sbin/rill'))
        unit = unit.replace('/bin/kill', shutil.which('kill') or '/bin/kill')
        d = tempfile.mkdtemp(prefix='rill-unit-')
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, 'rill.service')
        with open(path, 'w') as f:
            f.write(unit)
        res = run(['systemd-analyze', 'verify', '--man=no', path], timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)

    def test_packaged_binary_checks_packaged_config(self):
        conf = read(os.path.join(self.root, 'etc/rill/rill.yaml'))
        try:
            pwd.getpwnam('rill')
        except KeyError:  # not installed here: check everything else as the current user
            conf = conf.replace('user: rill', 'user: %s' % pwd.getpwuid(os.getuid()).pw_name)
        path = os.path.join(self.root, 'etc/rill/rill-test.yaml')
        with open(path, 'w') as f:
            f.write(conf)
        res = run([os.path.join(self.root, 'usr/sbin/rill'), '-t', '-c', path], timeout=30)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn('configuration OK', res.stdout + res.stderr)

    def test_lintian_reports_no_error(self):
        require_tool('lintian')
        res = run(['lintian', '--no-tag-display-limit', self.deb], timeout=600)
        errors = [l for l in res.stdout.splitlines() if l.startswith('E:')]
        self.assertEqual(errors, [], res.stdout)


if __name__ == '__main__':
    unittest.main()
