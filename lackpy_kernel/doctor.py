"""``lackpy doctor``: what works on this machine and in this workspace, and what to fix.

:func:`diagnose` checks the workspace's config, the sandbox's OS walls, the optional extras,
the inference tiers (a model's server is asked over HTTP whether it is up and, with
``constrain = "grammar"``, whether it takes the grammar), the tool sources
and the Jupyter kernelspec; each check is one :class:`Finding`. The CLI prints the
:class:`Report`; the MCP server may serve it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import importlib.util
import os
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lackpy_kernel.config import LackpyConfig, config_path, load_config
from lackpy_kernel.errors import ConfigError
from lackpy_kernel.infer import KIND_MODEL
from lackpy_kernel.infer.models import ModelProvider
from lackpy_kernel.install import KERNEL_NAME, lab_extension_dir, lab_extension_missing
from lackpy_kernel.run.walls import os_walls
from lackpy_kernel.service import LackpyService

OK, OFF, FIX = "ok", "off", "fix"  # off: not up or not installed, yet nothing a user must fix
PROBE_TIMEOUT = 2.0  # seconds a model's server has to answer
GRAMMAR_TIMEOUT = 60.0  # seconds it has to answer one token under the grammar (constrain)
# The extras, each with the packages it installs (by their import names).
EXTRAS = {"ollama": ("ollama",), "openai": ("openai",), "anthropic": ("anthropic",),
          "mcp": ("mcp",), "temporal": ("temporalio",), "lab": ("jupyterlab", "jupyter_console"),
          "acp": ("acp",), "kibitzer": ("kibitzer",),
          "jupyter-ai": ("jupyter_ai_acp_client",)}
# Import names whose distribution is named otherwise, for the version shown.
_DISTRIBUTIONS = {"acp": "agent-client-protocol",
                  "jupyter_ai_acp_client": "jupyter-ai-acp-client"}
# What an installed extra gives beyond its packages.
_GIVES = {"jupyter-ai": "the @lackpy chat persona (lackpy_kernel.acp_server.persona)"}
INSTALL_KERNEL = "python -m lackpy_kernel install --sys-prefix"


@dataclass(frozen=True)
class Finding:
    """One check: its section ("walls", "tiers", ...), what it checked, ``state`` (OK, OFF or
    FIX) and what it found or what to do."""

    section: str
    name: str
    state: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Report:
    """Every finding, in the order they print."""

    findings: list[Finding]

    @property
    def ok(self) -> bool:
        """True when nothing needs fixing."""
        return all(finding.state != FIX for finding in self.findings)

    def text(self) -> str:
        """The report as ``lackpy doctor`` prints it: a heading per section, a line per
        finding, then how many things to fix."""
        lines: list[str] = []
        section = None
        for finding in self.findings:
            if finding.section != section:
                section = finding.section
                lines.append(section)
            lines.append(f"  {finding.state:4} {finding.name:22} {finding.detail}".rstrip())
        to_fix = sum(finding.state == FIX for finding in self.findings)
        lines.append("nothing to fix" if not to_fix else
                     f"{to_fix} thing{'s' if to_fix > 1 else ''} to fix (the lines marked fix)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for JSON: ``ok`` and the findings."""
        return {"ok": self.ok, "findings": [finding.to_dict() for finding in self.findings]}


def diagnose(workspace: str | os.PathLike[str] | None = None, *,
             timeout: float = PROBE_TIMEOUT) -> Report:
    """Check ``workspace`` (default: the current folder) and this machine; never raises for
    what it finds. A model's server has ``timeout`` seconds to answer."""
    root = Path(workspace or Path.cwd()).resolve()
    checked, config = _config(root)
    findings = [checked, *_walls(), *_extras()]
    if config is None:
        findings += [Finding(section, "-", OFF, "not checked: fix the config first")
                     for section in ("tiers", "tool sources")]
    else:
        findings += _service_checks(root, config, timeout)
    findings += [*_kernelspec(), *_lab_extension()]
    return Report(findings)


def _config(root: Path) -> tuple[Finding, LackpyConfig | None]:
    """The config's finding, and the config where it is valid."""
    path = config_path(root)
    name = str(path.relative_to(root))
    try:
        config = load_config(root)
    except ConfigError as exc:
        return Finding("config", name, FIX, str(exc)), None
    return Finding("config", name, OK, "valid" if path.is_file() else "none: the defaults"), config


def _walls() -> Iterator[Finding]:
    for wall in os_walls():
        yield Finding("walls", wall.name, OK if wall.up else OFF, wall.detail)


def _extras() -> Iterator[Finding]:
    for extra, packages in EXTRAS.items():
        missing = [package for package in packages if not _installed(package)]
        if not missing:
            versions = ", ".join(f"{package} {_version(package)}" for package in packages)
            gives = f": {_GIVES[extra]}" if extra in _GIVES else ""
            yield Finding("extras", extra, OK, versions + gives)
        else:
            yield Finding("extras", extra, OFF, f"{', '.join(missing)} not installed: "
                                                f"pip install 'lackpy-kernel[{extra}]'")


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # ValueError: blocked with sys.modules[package] = None
        return False


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(_DISTRIBUTIONS.get(package, package))
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _service_checks(root: Path, config: LackpyConfig, timeout: float) -> list[Finding]:
    with LackpyService(root, config) as service:
        return [*_tiers(service, timeout), *_tool_sources(service)]


def _tiers(service: LackpyService, timeout: float) -> Iterator[Finding]:
    for provider, listed in zip(service.inference_providers, service.providers_list(), strict=True):
        name = provider.name
        if not listed["available"]:
            is_model = getattr(provider, "kind", KIND_MODEL) == KIND_MODEL
            yield Finding("tiers", name, FIX if is_model else OFF, listed["reason"] or "unavailable")
        elif not isinstance(provider, ModelProvider):
            yield Finding("tiers", name, OK, "ready")
        else:
            yield _reach(provider, timeout)


def _reach(provider: ModelProvider, timeout: float) -> Finding:
    """Whether a model tier's server answers; for an API reached with a key, that the key is set."""
    url = provider.health_url()
    if url is None:
        return Finding("tiers", provider.name, OK, f"key set; requests go to {provider.where}")
    failure = _probe(url, timeout)
    if failure is None:
        return Finding("tiers", provider.name, OK, f"reachable: {url}{_grammar(provider)}")
    return Finding("tiers", provider.name, FIX,
                   f"unreachable: {url} ({failure}); start the server, or take "
                   f"{provider.name!r} out of [inference] order")


def _grammar(provider: ModelProvider) -> str:
    """With ``constrain = "grammar"``, whether the server took the grammar (asked for one
    token: ``ModelProvider.probe_grammar``), as a clause to add; "" without it."""
    if provider.generation.constrain != "grammar":
        return ""
    pool = concurrent.futures.ThreadPoolExecutor(1)  # its own loop, whatever the caller runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a refusal is said in the finding
        try:
            status = pool.submit(asyncio.run, provider.probe_grammar()).result(GRAMMAR_TIMEOUT)
        except concurrent.futures.TimeoutError:
            status = f"not answered within {GRAMMAR_TIMEOUT:g} s"
        except Exception as exc:  # what the provider raised: its message says what failed
            status = f"not asked ({exc})"
        finally:
            pool.shutdown(wait=False)
    if status == "taken":
        return "; the lackpy grammar: taken"
    return (f"; the lackpy grammar: {status}; programs are decoded without it (remove "
            "constrain, or use a server that takes llama.cpp's GBNF grammar)")


def _probe(url: str, timeout: float) -> str | None:
    """None when a GET of ``url`` is answered (a refusal for want of a key counts: the server
    is up), else what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return None
    except urllib.error.HTTPError as exc:
        return None if exc.code in (401, 403) else f"HTTP {exc.code} {exc.reason}"
    except urllib.error.URLError as exc:
        return str(exc.reason)
    except (OSError, ValueError) as exc:  # a timeout while reading; a malformed URL
        return str(exc) or type(exc).__name__


def _tool_sources(service: LackpyService) -> Iterator[Finding]:
    statuses = service.tool_sources.check()
    if not statuses:
        yield Finding("tool sources", "-", OFF,
                      "none configured ([tools.providers.NAME] in .lackpy/config.toml)")
    for status in statuses:
        if not status.ok:
            yield Finding("tool sources", status.name, FIX,
                          f"{status.plugin} {status.origin}: {status.error or status.state}")
            continue
        found = [f"tools: {', '.join(status.tools) or 'none'}", *status.problems]
        yield Finding("tool sources", status.name, OK,
                      f"{status.plugin} {status.origin}: {'; '.join(found)}")


def _kernelspec() -> Iterator[Finding]:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # noqa: PLC0415 - slow

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        yield Finding("jupyter", f"kernelspec {KERNEL_NAME}", OFF,
                      f"not installed (Jupyter cannot start the kernel): {INSTALL_KERNEL}")
        return
    python = spec.argv[0] if spec.argv else ""
    if not os.path.exists(python):
        yield Finding("jupyter", f"kernelspec {KERNEL_NAME}", FIX,
                      f"{spec.resource_dir} runs {python}, which is gone: {INSTALL_KERNEL}")
        return
    yield Finding("jupyter", f"kernelspec {KERNEL_NAME}", OK, f"{spec.resource_dir} (runs {python})")


def _lab_extension() -> Iterator[Finding]:
    if not _installed("jupyterlab"):
        return  # the lab extra's line says how to install JupyterLab
    found = lab_extension_dir()
    if found is None:
        yield Finding("jupyter", "lab extension", OFF, lab_extension_missing())
    else:
        yield Finding("jupyter", "lab extension", OK, str(found))
