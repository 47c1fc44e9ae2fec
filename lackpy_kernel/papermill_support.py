"""papermill runs lackpy notebooks: ``papermill in.ipynb out.ipynb -p name other.txt``.

papermill writes the ``-p`` parameters into a cell of the notebook's language. lackpy's
literals are Python's and an assignment is a lackpy cell, so the lackpy translator is
papermill's Python one, registered for the language ``lackpy``.

papermill loads packages' engines (the ``papermill.engine`` entry point) but has no entry
point for translators, so this module is loaded as an engine, ``lackpy``: papermill's own
nbclient engine under a second name, and loading it registers the translator.

papermill loads the engines while ``papermill.engines`` is being imported, and this
module's engine subclasses a class of that module; so ``LackpyEngine`` and
``LackpyTranslator`` are made on first use, and importing this module alone imports
nothing of papermill.
"""

from __future__ import annotations

from typing import Any

LANGUAGE = "lackpy"


def __getattr__(name: str) -> Any:
    """``LackpyEngine`` and ``LackpyTranslator``, defined (and the translator registered)
    the first time either is asked for."""
    if name in ("LackpyEngine", "LackpyTranslator"):
        _define()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _define() -> None:
    # Importing papermill.engines may load this module's engine, and so call _define,
    # before the import returns: the first call to get past the import defines them.
    from papermill.engines import NBClientEngine  # noqa: PLC0415 - see the module's docstring

    if "LackpyEngine" in globals():
        return
    from papermill.translators import PythonTranslator, papermill_translators  # noqa: PLC0415

    class LackpyTranslator(PythonTranslator):
        """Parameters as lackpy assignments (``name = "other.txt"``): Python literals."""

    class LackpyEngine(NBClientEngine):
        """papermill's nbclient engine; it exists so that papermill loads this module."""

    for made in (LackpyTranslator, LackpyEngine):
        made.__qualname__ = made.__name__
    papermill_translators.register(LANGUAGE, LackpyTranslator)
    globals().update(LackpyEngine=LackpyEngine, LackpyTranslator=LackpyTranslator)
