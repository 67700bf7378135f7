"""``python -m app.cli``: the ``workmem`` command."""

from app.cli import main

main()
