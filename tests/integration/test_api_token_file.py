"""api.token_file (docs/api.md): the API token read from a file at start and on reload.

The daemon starts with the token in a file (a trailing newline, as `echo` writes it): the API
answers 401 without the token and 200 with it. A new token in the file takes over on SIGHUP; an
emptied file fails the reload and the old token keeps working. `rill -t` names an unreadable file.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_api_token_file
"""

import os
import shutil
import tempfile
import unittest

from rilltest import Rill, http_get, wait_until

TOKEN = 'file-token-1234'


class ApiTokenFileTest(unittest.TestCase):
    def status(self, rill, token=None):
        headers = {'Authorization': 'Bearer ' + token} if token else {}
        return http_get(rill.api_url('/api/v1/server'), headers=headers)[0]

    def test_token_from_file_at_start_and_reload(self):
        d = tempfile.mkdtemp(prefix='rill-token-')
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, 'api-token')
        with open(path, 'w') as f:
            f.write(TOKEN + '\n')
        rill = Rill({'api': {'token_file': path}})
        self.addCleanup(rill.close)
        self.assertEqual(self.status(rill), 401)
        self.assertEqual(self.status(rill, 'wrong-token'), 401)
        self.assertEqual(self.status(rill, TOKEN), 200)

        with open(path, 'w') as f:
            f.write('second-token-5678\n')
        self.assertTrue(rill.reload(), rill.log_tail())
        # The retired workers may take a connection or two while they leave.
        self.assertTrue(wait_until(lambda: [self.status(rill, 'second-token-5678') for _ in range(4)] == [200] * 4,
                                   10), rill.log_tail())
        self.assertEqual(self.status(rill, TOKEN), 401)

        # An empty file fails the reload; the running configuration (and its token) stays.
        open(path, 'w').close()
        self.assertFalse(rill.reload(), rill.log_tail())
        self.assertIn('api.token_file %s is empty' % path, rill.log_tail())
        self.assertEqual(self.status(rill, 'second-token-5678'), 200)

        os.remove(path)
        res = rill.cli('-t', '-c', rill.config_path)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn('cannot read api.token_file ' + path, res.stderr + res.stdout)


if __name__ == '__main__':
    unittest.main()
