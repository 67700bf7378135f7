"""With the database unreachable, requests answer 503 problem+json quickly, never 500."""

from __future__ import annotations

import httpx
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.support.servers import closed_port


async def test_requests_answer_503_while_the_database_is_down() -> None:
    url = f"postgresql+psycopg://nobody:secret@127.0.0.1:{closed_port()}/workmem"
    database = Database.from_url(url, pool_size=1)
    app = create_app(
        Settings(database_url=url, worker_enabled=False, prepare_idle_s=0), database=database
    )
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://t"
        ) as http,
    ):
        headers = {"Authorization": "Bearer wm_abcdefgh_" + "a" * 40}
        response = await http.get("/v1/sessions", headers=headers)
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        assert "secret" not in response.text
        assert (await http.get("/readyz")).status_code == 503
        assert (await http.get("/healthz")).status_code == 200
    await database.dispose()
