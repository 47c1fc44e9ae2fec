"""JupyterLab's side of lackpy: the Jupyter server extension behind the Lab extension.

The Lab extension (``extension/``, built into ``share/jupyter/labextensions/lackpy-kernel``)
asks ``POST /lackpy/validate`` for a cell's problems as the person types: the kernel is never
asked, so validation never waits for a running cell and never runs a program. The kernel
tells the front end the names its session knows in each ``execute_reply``'s metadata
(``metadata["lackpy"]["names"]`` and ``["tools"]``); the front end sends them with the cell.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VALIDATE_PATH"]

VALIDATE_PATH = "lackpy/validate"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension Jupyter loads (enabled by the wheel's jupyter_server_config.d)."""
    return [{"module": "lackpy_kernel.lab"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built Lab extension is (for ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "lackpy-kernel"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """Serve ``/lackpy/validate`` on ``server_app``."""
    from jupyter_server.utils import url_path_join

    from .handlers import ValidateHandler

    web_app = server_app.web_app
    route = url_path_join(web_app.settings["base_url"], VALIDATE_PATH)
    web_app.add_handlers(".*$", [(route, ValidateHandler)])
