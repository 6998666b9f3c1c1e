"""The chats that live across requests: the chat record, the runner, persistence, saving notices.

Built on the engine (``agent``) and kept in the store (``store``); neither imports this package.
"""
