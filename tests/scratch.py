# SPDX-License-Identifier: GPL-2.0
"""A test case with a scratch directory of its own, and a writer of files
in it."""
import json
import os
import tempfile
import unittest


class ScratchDirTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def write(self, name, data):
        """@data (bytes, text, or anything JSON takes) as the file @name
        below the scratch directory, its folders made; returns its path."""
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(data, bytes):
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w") as f:
                f.write(data if isinstance(data, str) else json.dumps(data))
        return path
