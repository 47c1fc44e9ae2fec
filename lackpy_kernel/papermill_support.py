"""papermill runs lackpy notebooks: ``papermill in.ipynb out.ipynb -p name other.txt``.

papermill writes the ``-p`` parameters into a cell of the notebook's language. lackpy's
literals are Python's and an assignment is a lackpy cell, so the lackpy translator is
papermill's Python one, registered for the language ``lackpy``.

papermill loads packages' engines (the ``papermill.engine`` entry point) but has no entry
point for translators, so this module is loaded as an engine, ``lackpy``: papermill's own
nbclient engine under a second name, and loading it registers the translator.
"""

from __future__ import annotations

from papermill.engines import NBClientEngine
from papermill.translators import PythonTranslator, papermill_translators

LANGUAGE = "lackpy"


class LackpyTranslator(PythonTranslator):
    """Parameters as lackpy assignments (``name = "other.txt"``): Python literals."""


class LackpyEngine(NBClientEngine):
    """papermill's nbclient engine; it exists so that papermill loads this module."""


papermill_translators.register(LANGUAGE, LackpyTranslator)
