"""The base of the tests that run on a real reactor (twisted.trial.unittest.TestCase).

trial's own mktemp() makes its directories below the current directory (the repository
root under pytest); these tests take theirs from the system's temporary directory and
remove them when the test ends, so no test leaves files in the repository."""

import shutil
import tempfile

from twisted.trial import unittest


class TestCase(unittest.TestCase):
    def mktemp(self) -> str:
        """A new directory's path for this test (created, removed after the test)."""
        directory = tempfile.mkdtemp(prefix="hedwig-test-")
        self.addCleanup(shutil.rmtree, directory, True)
        return directory
