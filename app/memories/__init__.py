"""Long-term memory: durable facts about a user, extracted from archives, embedded and searched.

Pure parts (``records``, ``text``, ``rules``, ``tool``, ``hashing``, ``changes``, ``ranking``)
decide; ``extraction`` calls the model and the embedder with no transaction open; ``jobs``
writes an archive's memory changes inside the archive's own transaction (SQL in ``store``);
``service`` and ``endpoints`` serve search, browse, audit and erasure (SQL in ``repository``).
"""
