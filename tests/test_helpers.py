"""Environment flags (`helpers.getenv`, `helpers.env_value`): read at each call, parsed once per value."""
from __future__ import annotations

import os

import pytest

from lazytensor import helpers

pytestmark = pytest.mark.fast


def test_a_flag_follows_every_change_of_the_environment(monkeypatch):
    monkeypatch.delenv("LT_TEST_FLAG", raising=False)
    assert helpers.getenv("LT_TEST_FLAG") == 0 and helpers.getenv("LT_TEST_FLAG", 7) == 7
    for text, value in (("3", 3), ("3", 3), (" 12 ", 12), ("", 0), ("  ", 0), ("-1", -1), ("0", 0), ("1", 1)):
        monkeypatch.setenv("LT_TEST_FLAG", text)
        assert helpers.getenv("LT_TEST_FLAG") == value
    os.environ["LT_TEST_FLAG"] = "5"  # directly, not through monkeypatch
    assert helpers.getenv("LT_TEST_FLAG") == 5
    del os.environ["LT_TEST_FLAG"]
    assert helpers.getenv("LT_TEST_FLAG", 4) == 4
    monkeypatch.setenv("LT_TEST_FLAG", "x")
    with pytest.raises(ValueError):
        helpers.getenv("LT_TEST_FLAG")


def test_a_value_is_parsed_once_until_it_changes(monkeypatch):
    calls = []

    def parse(text: str) -> str:
        calls.append(text)
        return text.upper()

    monkeypatch.setenv("LT_TEST_TEXT", "a,b")
    assert [helpers.env_value("LT_TEST_TEXT", parse) for _ in range(3)] == ["A,B"] * 3
    assert calls == ["a,b"]
    monkeypatch.setenv("LT_TEST_TEXT", "a,b")  # set again, to the same text: parsed again, to the same value
    monkeypatch.setenv("LT_TEST_TEXT", "c")
    assert helpers.env_value("LT_TEST_TEXT", parse) == "C" and calls[-1] == "c"
    monkeypatch.delenv("LT_TEST_TEXT")
    assert helpers.env_value("LT_TEST_TEXT", parse) == "" and calls[-1] == ""
    assert helpers.env_value("LT_TEST_TEXT", str.strip) == ""  # another parse of the same variable: its own result
    assert helpers.env_value("LT_TEST_TEXT", parse) == ""
