"""The lackpy ACP server: ``lackpy acp``, an Agent Client Protocol agent over stdio.

An editor or chat (Zed, jupyter-ai, marimo) starts ``lackpy acp`` and speaks ACP on its
stdin and stdout. Each ACP session is a ``LackpySession`` in the session's working
directory (the workspace), kept in ``.lackpy/acp/`` so ``session/load`` can bring it
back; the MCP servers the client passes become tool sources of that session. A prompt
is delegated as ``%delegate`` does it (templates, rules, replay, models): each tier tried
is reported as the agent's thought, the program as a tool call whose content is the
program (growing as a model streams it), and the program's result as the agent's
message. Modes: ``run`` (the default) runs the program in the sandbox, its file changes
shown as a diff and committed only when ``session/request_permission`` says yes;
``plan`` shows the program and stops; ``agent`` runs the agent loop, each tool call shown
and its file changes asked for the same way. Slash commands: ``/create NAME`` saves the
last program that ran well as a template (the ratchet), ``/kit`` shows or sets the kit.
``persona`` is lackpy's jupyter-ai persona (the ``jupyter-ai`` extra), which runs this
server for ``@lackpy`` in a JupyterLab chat.

This package only translates; the session and the service do the work.
"""

from __future__ import annotations

try:
    import acp  # noqa: F401 - the optional extra, checked before the modules that use it
except ImportError as exc:
    raise ImportError(
        f"the lackpy ACP server needs the Agent Client Protocol SDK ({exc}); "
        "install it with: pip install 'lackpy-kernel[acp]'"
    ) from exc

from ._agent import MAX_SESSIONS, MODES, LackpyAgent
from ._stdio import main, serve

__all__ = ["MAX_SESSIONS", "MODES", "LackpyAgent", "main", "serve"]
