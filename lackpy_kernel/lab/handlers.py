"""``POST /lackpy/validate``: a cell's problems, for the Lab extension's underlines.

The request is JSON ``{"source": TEXT, "language": "lackpy" | "python", "names": [NAME, ...]
| null, "tools": [NAME, ...]}``; the answer ``{"problems": [{"line", "col", "end_line",
"end_col", "message"}, ...]}`` (1-based, end excluded). A bad request is a 400 whose
``message`` says what was wrong.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from lackpy_kernel.errors import UsageError

from .check import Language, check_cell

LANGUAGES: tuple[Language, ...] = ("lackpy", "python")


class ValidateHandler(APIHandler):
    """Answers a cell's problems; never runs anything and never asks the kernel."""

    @web.authenticated
    async def post(self) -> None:
        request = _request(self.request.body)
        try:  # on a thread: a large cell never holds up the server's other requests
            problems = await asyncio.to_thread(check_cell, request["source"], request["language"],
                                               request["names"], request["tools"])
        except UsageError as exc:
            raise web.HTTPError(413, str(exc)) from None
        self.finish(json.dumps({"problems": [problem.to_dict() for problem in problems]}))


def _request(body: bytes) -> dict[str, Any]:
    """The request's fields, checked; raises HTTPError 400 saying what is wrong."""
    try:
        data = json.loads(body or b"null")
    except ValueError as exc:
        raise web.HTTPError(400, f"the body is not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("source"), str):
        raise web.HTTPError(400, 'send {"source": "<the cell>", "language": "lackpy", '
                                 '"names": [...] or null, "tools": [...]}')
    language = data.get("language", "lackpy")
    if language not in LANGUAGES:
        raise web.HTTPError(400, f"language is one of {', '.join(LANGUAGES)}, not {language!r}")
    names, tools = data.get("names"), data.get("tools", [])
    if names is not None and not _strings(names):
        raise web.HTTPError(400, "names is a list of names (or null: not known yet)")
    if not _strings(tools):
        raise web.HTTPError(400, "tools is a list of names")
    return {"source": data["source"], "language": language, "names": names, "tools": tools}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
