"""The tests' database backend: what each environment chooses, and the container backend itself
(skipped, with the reason, where no Docker daemon answers)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.support.backends import (
    DEFAULT_IMAGE,
    Backend,
    BackendError,
    Choice,
    asked_backend,
    choose_backend,
    docker_unavailable,
)
from tests.support.postgres import PostgresForTests

URL = "postgresql://me@db.example:5432/postgres"
DOWN = "DockerException: no socket"


class Probe:
    """A Docker probe with a fixed answer that counts its calls."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.calls = 0

    def __call__(self) -> str | None:
        self.calls += 1
        return self.answer


NEEDS_DOCKER = "WORKMEM_TEST_POSTGRES=container needs Docker, which is not reachable"

CHOICES: list[tuple[str, dict[str, str], str | None, Choice, int]] = [
    ("nothing set", {}, None, Choice(Backend.EMBEDDED), 0),
    ("embedded asked", {"WORKMEM_TEST_POSTGRES": "embedded"}, DOWN, Choice(Backend.EMBEDDED), 0),
    ("blank is unset", {"WORKMEM_TEST_POSTGRES": "  "}, None, Choice(Backend.EMBEDDED), 0),
    (
        "a server's URL",
        {"WORKMEM_TEST_DATABASE_URL": URL},
        None,
        Choice(Backend.CONFIGURED, URL),
        0,
    ),
    (
        "embedded with a URL",
        {"WORKMEM_TEST_POSTGRES": "Embedded", "WORKMEM_TEST_DATABASE_URL": f" {URL} "},
        None,
        Choice(Backend.CONFIGURED, URL),
        0,
    ),
    ("an empty URL", {"WORKMEM_TEST_DATABASE_URL": ""}, None, Choice(Backend.EMBEDDED), 0),
    (
        "container, Docker answers",
        {"WORKMEM_TEST_POSTGRES": "container"},
        None,
        Choice(Backend.CONTAINER, image=DEFAULT_IMAGE),
        1,
    ),
    (
        "container in capitals",
        {"WORKMEM_TEST_POSTGRES": " CONTAINER "},
        None,
        Choice(Backend.CONTAINER, image=DEFAULT_IMAGE),
        1,
    ),
    (
        "container of another image",
        {
            "WORKMEM_TEST_POSTGRES": "container",
            "WORKMEM_TEST_POSTGRES_IMAGE": "pgvector/pgvector:pg17",
        },
        None,
        Choice(Backend.CONTAINER, image="pgvector/pgvector:pg17"),
        1,
    ),
    (
        "container, no Docker",
        {"WORKMEM_TEST_POSTGRES": "container"},
        DOWN,
        Choice(Backend.CONTAINER, image=DEFAULT_IMAGE, unavailable=f"{NEEDS_DOCKER} ({DOWN})"),
        1,
    ),
]


@pytest.mark.parametrize(
    ("environment", "docker", "choice", "probes"),
    [case[1:] for case in CHOICES],
    ids=[case[0] for case in CHOICES],
)
def test_the_environment_chooses_the_backend(
    environment: dict[str, str], docker: str | None, choice: Choice, probes: int
) -> None:
    probe = Probe(docker)
    assert choose_backend(environment, probe) == choice
    assert probe.calls == probes, "Docker is looked for only when a container is asked for"


REFUSED: list[tuple[str, dict[str, str], str]] = [
    (
        "an unknown backend",
        {"WORKMEM_TEST_POSTGRES": "docker"},
        "WORKMEM_TEST_POSTGRES='docker': expected 'embedded' or 'container'",
    ),
    (
        "a container and a URL",
        {"WORKMEM_TEST_POSTGRES": "container", "WORKMEM_TEST_DATABASE_URL": URL},
        "WORKMEM_TEST_POSTGRES=container and WORKMEM_TEST_DATABASE_URL are both set: unset one",
    ),
]


@pytest.mark.parametrize(
    ("environment", "message"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED]
)
def test_a_contradictory_environment_is_refused(environment: dict[str, str], message: str) -> None:
    probe = Probe(None)
    with pytest.raises(BackendError) as refused:
        choose_backend(environment, probe)
    assert str(refused.value) == message
    with pytest.raises(BackendError):
        asked_backend(environment)
    assert probe.calls == 0


def test_an_unreachable_docker_is_named() -> None:
    """The probe of a daemon that is not there says why, in one line."""
    reason = docker_unavailable()
    if reason is None:
        pytest.skip("a Docker daemon answers here")
    assert reason.strip() == reason
    assert "\n" not in reason
    assert ": " in reason, "the error's type and text"


@pytest.fixture(scope="module")
def container() -> Iterator[PostgresForTests]:
    choice = choose_backend({"WORKMEM_TEST_POSTGRES": "container"}, docker_unavailable)
    if choice.unavailable is not None:
        pytest.skip(choice.unavailable)
    server = PostgresForTests.start(choice)
    yield server
    server.stop()


@pytest.mark.e2e
def test_the_container_backend_serves_migrated_databases(container: PostgresForTests) -> None:
    urls = container.create_app_database("wmcontainer")
    plain = urls.app.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(plain) as connection:
        user = connection.execute("SELECT current_user").fetchone()
        vector = connection.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
    assert user == ("workmem_app",)
    assert vector is not None, "pgvector is installed by the migrations"
