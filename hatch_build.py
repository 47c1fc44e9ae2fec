"""Build the JupyterLab extension (``extension/``) into the wheel when Node.js can, and say so when not.

hatchling runs this hook (``[tool.hatch.build.hooks.custom]`` in pyproject.toml) before it builds a
wheel, standard or editable. The extension is TypeScript, built by JupyterLab's builder (``jlpm``, the
yarn JupyterLab ships, and ``jupyter-builder``, both from the build requirements), which needs Node.js
in the range JupyterLab's bundler (rspack) accepts: ``^20.19.0 || >=22.12.0``.

- A standard wheel where ``lackpy_kernel/labextension/package.json`` is there already (built by an
  earlier install or ``jlpm build``): nothing to build.
- Otherwise, with a suitable ``node`` on ``PATH`` (an editable install always): ``jlpm install`` and
  ``jlpm run build:prod`` in ``extension/``; a failure there fails a wheel's build, as any broken
  build should, and an editable install goes on without the extension, saying so.
- No suitable ``node``: everything else is installed, and the build says that the Lab extension was
  left out and how to add it. ``python -m lackpy_kernel install`` and ``lackpy doctor`` say so again
  (pip shows a build's output only with ``-v``).

This file imports nothing of lackpy_kernel: it runs in pip's build environment, before the package is
installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILT = Path("lackpy_kernel", "labextension", "package.json")
SOURCE = "extension"
# what the wheel installs when the extension was built: where JupyterLab looks for prebuilt extensions
SHARED = {
    str(BUILT.parent): "share/jupyter/labextensions/lackpy-kernel",
    f"{SOURCE}/install.json": "share/jupyter/labextensions/lackpy-kernel/install.json",
}
# JupyterLab's bundler (@rspack/core) loads on these; jupyter-builder refuses others mid-build.
NODE_RANGE = "^20.19.0 || >=22.12.0"
NODE_HINT = (
    "Node.js 20.19+ (Debian 13: apt-get install nodejs; Debian 12 and Ubuntu 22.04/24.04 carry an "
    "older one: use NodeSource's packages, https://github.com/nodesource/distributions, or "
    "conda install -c conda-forge nodejs)"
)
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def node_suits(version: tuple[int, int, int]) -> bool:
    """True when JupyterLab's bundler runs on this Node.js version (``^20.19.0 || >=22.12.0``)."""
    return (20, 19, 0) <= version < (21, 0, 0) or version >= (22, 12, 0)


def node_problem(path: str | None = None) -> str | None:
    """Why this machine cannot build the extension (no ``node``, or one too old), or None when it can.

    ``path`` is the search path (``PATH`` when None). ``nodejs`` counts as ``node``, as jlpm has it.
    """
    node = shutil.which("node", path=path) or shutil.which("nodejs", path=path)
    if node is None:
        return "there is no node (Node.js) on PATH"
    try:
        shown = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{node} --version failed ({exc})"
    found = _VERSION.search(shown)
    if found is None:
        return f"{node} --version said {shown.strip()!r}, not a version"
    version = (int(found[1]), int(found[2]), int(found[3]))
    if not node_suits(version):
        return f"{node} is Node.js {'.'.join(map(str, version))}, and the build needs {NODE_RANGE}"
    return None


def left_out(problem: str, editable: bool) -> str:
    """What the build says when it leaves the extension out: why, and how to add it."""
    again = "pip install -e '.[lab]'" if editable else "pip install '.[lab]'"
    return (
        f"lackpy-kernel: the JupyterLab extension (live validation, the approval dialog, traces) was "
        f"left out of this install: {problem}. Everything else is installed. To add the extension, "
        f"install {NODE_HINT}, then run {again} again in this folder; or install a built wheel of "
        f"lackpy-kernel, which carries the extension and needs no Node.js."
    )


class LabExtensionHook(BuildHookInterface):
    """Build ``extension/`` into ``lackpy_kernel/labextension`` before a wheel, or say why not."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if version == "standard" and (root / BUILT).is_file():
            self.app.display_info(f"lackpy-kernel: the JupyterLab extension is built already ({BUILT})")
        elif (problem := node_problem()) is not None:
            self.app.display_warning(left_out(problem, editable=version == "editable"))
        else:
            try:
                self._build(root)
            except subprocess.CalledProcessError as exc:
                if version != "editable":
                    raise
                self.app.display_warning(  # as before: an editable install goes on without it
                    f"lackpy-kernel: the JupyterLab extension did not build ({exc}); everything "
                    f"else is installed. `cd {SOURCE} && jlpm build` tries again.")
        if (root / BUILT).is_file():  # a prebuilt extension: JupyterLab finds it in share/jupyter
            build_data["shared_data"].update(SHARED)

    def _build(self, root: Path) -> None:
        jlpm = shutil.which("jlpm")
        if jlpm is None:
            raise RuntimeError(
                "lackpy-kernel: jlpm (JupyterLab's yarn) is missing from the build environment; "
                "pyproject.toml's [build-system] requires jupyter-builder, which brings it"
            )
        self.app.display_info("lackpy-kernel: building the JupyterLab extension (jlpm build:prod)")
        for step in ([jlpm, "install"], [jlpm, "run", "build:prod"]):
            subprocess.run(step, cwd=root / SOURCE, check=True)
