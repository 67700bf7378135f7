"""Request dependencies shared by every feature: the database and the settings."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.config import Settings
from app.db import Database


def get_database(request: Request) -> Database:
    found: Database = request.app.state.database
    return found


def get_settings(request: Request) -> Settings:
    found: Settings = request.app.state.settings
    return found


DatabaseDep = Annotated[Database, Depends(get_database)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
