"""The package's version, in one place: hatch reads it for the wheel and the sdist, and
``scripts/set-version`` copies it into ``labextension/package.json`` (a test checks they agree)."""

__version__ = "0.1.0"
