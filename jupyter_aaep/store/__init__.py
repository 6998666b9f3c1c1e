"""The chat store: SQLite and files, standard library only.

It imports nothing else of the package, so it can be read, tested and changed on its own
(``tests/store/``; ``tests/test_layers.py`` checks the imports).
"""
