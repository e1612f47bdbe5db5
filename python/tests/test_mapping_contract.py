"""CPython's own mapping tests (``test.mapping_tests``, the suite that
checks ``dict``, ``os.environ`` and ``UserDict``) run against
``hashfile.Reader``: every read-only test as CPython wrote it; the ones
that write check instead that a Reader has no writing methods."""

from __future__ import annotations

import tempfile
import unittest
from test import mapping_tests

import hashfile


class ReaderMappingProtocol(mapping_tests.BasicTestMappingProtocol):
    def _reference(self):
        # CPython's reference holds a tuple, which a store gives back as a
        # list (docs/PYTHON.md): the same data, with a list.
        return {"1": "2", "key1": "value1", "key2": [1, 2, 3]}

    def _empty_mapping(self):
        return self._full_mapping({})

    def _full_mapping(self, data):
        directory = tempfile.mkdtemp(prefix="hashfile-mapping-")
        path = f"{directory}/m.hf"
        hashfile.build(path, data)
        return hashfile.open(path)

    def _check_read_only(self):
        reader = self._full_mapping(self.reference)
        for name in ("__setitem__", "__delitem__", "update", "setdefault", "pop", "popitem", "clear"):
            self.assertFalse(hasattr(reader, name), name)

    # The tests that write: a Reader is read-only.
    def test_write(self):
        self._check_read_only()

    def test_update(self):
        self._check_read_only()

    def test_setdefault(self):
        self._check_read_only()

    def test_popitem(self):
        self._check_read_only()

    def test_pop(self):
        self._check_read_only()


class MemoReaderMappingProtocol(ReaderMappingProtocol):
    """The same suite through a memo of two values, which every test
    empties and fills again."""

    def _full_mapping(self, data):
        directory = tempfile.mkdtemp(prefix="hashfile-mapping-")
        path = f"{directory}/m.hf"
        hashfile.build(path, data)
        return hashfile.open(path, memo=2)


if __name__ == "__main__":
    unittest.main()
