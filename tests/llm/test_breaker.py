"""The provider's circuit breaker: its state machine as tables of events on a clock the test
sets (at, below and above the failure count and the cooling-off period), then in front of the
real SDK against the local OpenAI-compatible server while it fails and after it recovers."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client import REGISTRY

from app.archives.generation import WorkingMemoryGenerator
from app.archives.working_memory import WorkingMemory
from app.llm.breaker import (
    BreakerChatModel,
    BreakerConfig,
    CircuitBreaker,
    CircuitOpen,
    CircuitState,
)
from app.llm.fakes import ScriptedChatModel
from app.llm.openai_provider import OpenAIChatModel
from app.llm.ports import PermanentModelError, TransientModelError
from app.wm.sections import Section, empty_sections
from tests.support.fake_openai import ErrorReply, FakeOpenAI, ToolCallReply

CLOSED, OPEN, HALF = CircuitState.CLOSED, CircuitState.OPEN, CircuitState.HALF_OPEN


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# Each step: (seconds since the start, event, what the breaker answers, its state after).
# ``allow`` answers (allowed, state entered); ``ok``/``fail`` answer the state entered.
Step = tuple[float, str, object, CircuitState]

CASES: dict[str, list[Step]] = {
    "below the count stays closed": [
        (0, "allow", (True, None), CLOSED),
        (0, "fail", None, CLOSED),
        (0, "allow", (True, None), CLOSED),
        (0, "fail", None, CLOSED),
        (0, "allow", (True, None), CLOSED),
    ],
    "at the count opens": [
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (1, "fail", OPEN, OPEN),
        (1, "allow", (False, None), OPEN),
    ],
    "a success between failures resets the count": [
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "ok", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "allow", (True, None), CLOSED),
        (0, "fail", OPEN, OPEN),
    ],
    "open refuses until the cooling-off period has passed": [
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "fail", OPEN, OPEN),
        (59.9, "allow", (False, None), OPEN),
        (60, "allow", (True, HALF), HALF),
    ],
    "half-open lets one probe through, a success closes": [
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "fail", OPEN, OPEN),
        (61, "allow", (True, HALF), HALF),
        (61, "allow", (False, None), HALF),
        (62, "ok", CLOSED, CLOSED),
        (62, "allow", (True, None), CLOSED),
        (62, "fail", None, CLOSED),
        (62, "fail", None, CLOSED),
    ],
    "a failed probe opens again for a whole period": [
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "fail", OPEN, OPEN),
        (100, "allow", (True, HALF), HALF),
        (101, "fail", OPEN, OPEN),
        (160, "allow", (False, None), OPEN),
        (161, "allow", (True, HALF), HALF),
    ],
    "an abandoned probe lets the next call probe": [
        (0, "fail", None, CLOSED),
        (0, "fail", None, CLOSED),
        (0, "fail", OPEN, OPEN),
        (60, "allow", (True, HALF), HALF),
        (60, "abandon", None, HALF),
        (60, "allow", (True, None), HALF),
        (60, "allow", (False, None), HALF),
    ],
}


@pytest.mark.parametrize("steps", list(CASES.values()), ids=list(CASES))
def test_breaker_states(steps: list[Step]) -> None:
    clock = Clock()
    start = clock.now
    breaker = CircuitBreaker(BreakerConfig(failures=3, cooldown_s=60.0), clock)
    for at, event, answer, state in steps:
        clock.now = start + at
        if event == "allow":
            got: object = breaker.allow()
        elif event == "ok":
            got = breaker.succeeded()
        elif event == "fail":
            got = breaker.failed()
        else:
            breaker.abandoned()
            got = None
        assert (got, breaker.state) == (answer, state), (at, event)


@pytest.mark.parametrize(("failures", "cooldown_s"), [(0, 1.0), (-1, 1.0), (1, 0.0), (1, -5.0)])
def test_a_breaker_needs_a_count_and_a_period(failures: int, cooldown_s: float) -> None:
    with pytest.raises(ValueError, match="failures >= 1"):
        BreakerConfig(failures=failures, cooldown_s=cooldown_s)


def test_a_count_of_one_opens_at_the_first_failure() -> None:
    breaker = CircuitBreaker(BreakerConfig(failures=1, cooldown_s=5.0), Clock())
    assert breaker.failed() is OPEN


async def test_only_transient_errors_count_as_failures() -> None:
    """A 4xx or an unusable answer shows the provider is up: it resets the count."""
    clock = Clock()
    chat = ScriptedChatModel(
        [
            TransientModelError("timeout", code="timeout"),
            PermanentModelError("bad request", code="client_error"),
            TransientModelError("timeout", code="timeout"),
            TransientModelError("timeout", code="timeout"),
        ]
    )
    guarded = BreakerChatModel(
        chat, CircuitBreaker(BreakerConfig(failures=2, cooldown_s=30), clock), provider="p1"
    )
    raised = []
    for _ in range(5):
        with pytest.raises((TransientModelError, PermanentModelError)) as error:
            await guarded.call_tool(system="s", user="u", tool={"name": "t", "parameters": {}})
        raised.append(error.value.code)
    assert raised == ["timeout", "client_error", "timeout", "timeout", "circuit_open"]
    with pytest.raises(CircuitOpen, match="p1 failed repeatedly"):
        await guarded.call_tool(system="s", user="u", tool={"name": "t", "parameters": {}})
    assert len(chat.calls) == 4


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


KEEP_ALL = json.dumps({"sections": {s.value: {"op": "KEEP"} for s in Section}})


async def test_a_failing_provider_is_called_until_the_circuit_opens_then_not_at_all(
    fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """A large archive with the model down: the first batches call it, then every batch falls
    back at once; after the cooling-off period one probe goes out and, answered, closes it."""
    clock = Clock()
    provider = f"local-{fake_openai.port}"
    chat = OpenAIChatModel(
        base_url=fake_openai.base_url,
        api_key="sk-test",
        model="gpt-test",
        timeout_s=5.0,
        max_retries=0,
    )
    guarded = BreakerChatModel(
        chat, CircuitBreaker(BreakerConfig(failures=3, cooldown_s=60.0), clock), provider=provider
    )
    generator = WorkingMemoryGenerator(guarded, max_input_tokens=4_000)
    words = " ".join(f"w{n}" for n in range(400))
    messages = [{"role": "user", "content": f"m{n} {words}"} for n in range(60)]
    sections = empty_sections()
    sections[Section.SESSION_TITLE] = "Long archive"
    prior = WorkingMemory(archive_seq=1, covered_end_seq=0, sections=sections)
    fake_openai.script(*[ErrorReply(503, "down")] * 50)
    opened = sample("workmem_model_circuit_transitions_total", provider=provider, state="open")
    with caplog.at_level(logging.INFO, logger="app.llm.breaker"):
        generated = await generator.generate(prior, messages)
        assert generated.batches > 6
        assert generated.generator == "offline_fallback"
        assert len(fake_openai.requests) == 3, "three failed calls, then none"
        assert sample("workmem_model_circuit_open", provider=provider) == 1
        assert (
            sample("workmem_model_circuit_transitions_total", provider=provider, state="open")
            == opened + 1
        )
        assert sample("workmem_model_circuit_refused_total", provider=provider) == (
            generated.batches - 3
        )
        assert [r.message for r in caplog.records if r.name == "app.llm.breaker"] == [
            "model circuit opened: calls fall back at once"
        ]
        # The provider is back; the cooling-off period passes; the next call probes and closes.
        fake_openai.script(*[ToolCallReply(KEEP_ALL)] * 20)
        clock.now += 60.0
        again = await generator.generate(prior, messages[:2])
        assert again.generator == "llm_update"
        assert sample("workmem_model_circuit_open", provider=provider) == 0
        assert [r.message for r in caplog.records if r.name == "app.llm.breaker"][1:] == [
            "model circuit half-open: one call probes",
            "model circuit closed: calls go through",
        ]
    await chat.close()
