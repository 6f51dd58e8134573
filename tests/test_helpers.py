"""Environment flags (`helpers.getenv`, `helpers.env_value`, `helpers.any_set`): read at each call, parsed once per
value."""
from __future__ import annotations

import os

import numpy as np
import pytest

import lazytensor as lt
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


def test_any_set_follows_every_change_of_the_environment(monkeypatch):
    names = ("LT_TEST_A", "LT_TEST_B")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    assert not helpers.any_set(names)
    monkeypatch.setenv("LT_TEST_B", "")  # set to nothing is set
    assert helpers.any_set(names) and not helpers.any_set(names[:1])
    os.environ["LT_TEST_A"] = "0"  # directly, not through monkeypatch
    monkeypatch.delenv("LT_TEST_B")
    assert helpers.any_set(names) and helpers.any_set(names[:1])
    del os.environ["LT_TEST_A"]
    assert not helpers.any_set(names)


def test_a_realize_watches_its_launches_exactly_where_a_flag_says_so(monkeypatch, capfd):
    """The cached launch path skips the flags' parsing where none is set, but `LT_DEBUG=0` still watches
    nothing and `LT_DEBUG=1` every launch, cached or not."""
    x = lt.asarray(np.ones(8, np.float32))
    for _ in range(2):  # the second realize launches the cached plan
        (x * 2).realize()
    monkeypatch.setenv("LT_DEBUG", "0")
    (x * 2).realize()
    assert "lt: " not in capfd.readouterr().err
    monkeypatch.setenv("LT_DEBUG", "1")
    (x * 2).realize()
    assert "lt: " in capfd.readouterr().err
