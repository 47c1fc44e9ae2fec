"""lackpy as a jupyter-ai persona: ``@lackpy`` in a JupyterLab chat runs ``lackpy acp``.

jupyter-ai 3 loads the chat personas registered under the ``jupyter_ai.personas`` entry
point; its ACP client package (``jupyter-ai-acp-client``) gives the base class that starts
an ACP agent and speaks to it. lackpy registers :class:`LackpyPersona` there (the
optional extra ``jupyter-ai`` installs the client). Each chat is an ACP session whose
workspace is the chat file's folder: its ``.lackpy/`` config, kits and templates apply.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any

try:
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
    from jupyter_ai_persona_manager import PersonaDefaults
except ImportError as exc:  # only jupyter-ai loads this module, so its manager is there
    from jupyter_ai_persona_manager import PersonaRequirementsUnmet

    raise PersonaRequirementsUnmet(
        f"the lackpy persona needs jupyter-ai's ACP client ({exc}); install it with: "
        "pip install 'lackpy-kernel[jupyter-ai]'") from exc

from lackpy_kernel.install import spec_source_dir

NAME = "lackpy"
COMMAND = [sys.executable, "-m", "lackpy_kernel", "acp"]


class LackpyPersona(BaseAcpPersona):  # type: ignore[misc]  # jupyter-ai is untyped
    """The chat persona ``lackpy``: each message is a prompt to ``lackpy acp`` (run by
    this Python), answered with the program (a tool call), its result, and a request for
    permission before any file changes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=COMMAND, **kwargs)
        self._notebook_guidance_sent = True  # advice to a model on notebook tools: none here

    async def process_message(self, message: Any) -> None:
        """Send the message without the ``@lackpy`` that addressed it, so that the prompt
        is what the person asked (a template's pattern matches it)."""
        mention = re.compile(rf"(^|\s)@{re.escape(self.as_user().mention_name)}\b:?")
        body = mention.sub(" ", message.body).strip()
        await super().process_message(dataclasses.replace(message, body=body))

    @property
    def defaults(self) -> PersonaDefaults:
        """The persona's name, description and avatar (the kernel's logo)."""
        return PersonaDefaults(
            name=NAME,
            description="lackpy: a prompt becomes a validated program, run in the sandbox; "
                        "file changes wait for your approval",
            avatar_path=str(spec_source_dir() / "logo-svg.svg"),
            system_prompt="unused",  # lackpy writes programs, not chat replies
        )
