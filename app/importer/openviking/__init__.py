"""Import of an OpenViking file-based workspace (``viking/<account>/user/<user>/sessions/``).

``reader`` reads the file layout into the typed values of ``records`` (with ``parts`` and
``overview`` for the message and overview formats) and never touches the database; ``writer``
stores one session through the services; ``run`` is the edge that owns one transaction per
session; ``summary`` counts what a run did and ``console`` shows it.
"""
