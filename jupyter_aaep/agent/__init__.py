"""The engine: one request from start to end (loop, tool dispatch, context, prompts, tool registry).

It knows nothing of chats that outlive a request or of storage: no ``sqlite3`` and no import of
``chats`` or ``store`` (``tests/test_layers.py`` checks it).
"""
