"""The suite's shared warm start is kept between sessions only under the digest of what
builds it (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import conftest


def test_the_key_is_stable_and_moves_with_what_builds_the_model(monkeypatch):
    key = conftest._warm_start_key()
    assert key == conftest._warm_start_key() and len(key) == 16
    monkeypatch.setattr(conftest, "WARM_TINY_STEPS", conftest.WARM_TINY_STEPS + 1)
    assert conftest._warm_start_key() != key


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIMATH_TEST_CACHE", str(tmp_path))
    assert conftest._warm_start_cache() == tmp_path
    monkeypatch.setenv("VERIMATH_TEST_CACHE", "off")
    assert conftest._warm_start_cache() is None
    monkeypatch.delenv("VERIMATH_TEST_CACHE")
    assert conftest._warm_start_cache().name == "verimath-test-cache"
    assert isinstance(conftest._warm_start_cache(), Path)
