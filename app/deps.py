"""Request dependencies shared by every feature: the database and the settings.

Each is built once by the lifespan in ``main`` and kept in a typed slot of the application's
state (``app.web.state``). What one feature alone uses is that feature's ``dependencies``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.config import Settings
from app.db import Database
from app.web.state import Slot

DATABASE = Slot[Database]("database")
SETTINGS = Slot[Settings]("settings")

DatabaseDep = Annotated[Database, Depends(DATABASE.read)]
SettingsDep = Annotated[Settings, Depends(SETTINGS.read)]
