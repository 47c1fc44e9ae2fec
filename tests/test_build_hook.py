"""hatch_build.py: a source install without a suitable Node.js installs everything but the Lab extension,
and says so and how to add it (issue 42, item 1).

The wheel and the install below are real: hatchling runs the hook with no ``node`` on ``PATH``, and pip
installs the checkout into a fresh virtual environment whose ``PATH`` has no ``node`` either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("hatchling", reason="the test extra installs hatchling (pip install -e '.[test]')")

import hatch_build  # noqa: E402 - needs hatchling

REPO = Path(__file__).resolve().parents[1]
# What a wheel is built from; the Lab extension's built output and node_modules stay behind.
SOURCE = ("pyproject.toml", "README.md", "hatch_build.py", ".gitignore", "kernelspec", "lackpy_kernel",
          "extension/install.json", "extension/package.json", "extension/jupyter-config")


def fake_node(folder: Path, says: str) -> str:
    """A ``node`` in ``folder`` whose ``--version`` says ``says``; the search path holding it."""
    folder.mkdir(exist_ok=True)
    node = folder / "node"
    node.write_text(f"#!/bin/sh\necho {says}\n")
    node.chmod(0o755)
    return str(folder)


def checkout_without_the_extension(tmp_path: Path) -> Path:
    """A copy of the checkout's sources, as a fresh clone has them: no built Lab extension."""
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "labextension", "*.pyc")
    for name in SOURCE:
        source, target = REPO / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore)
        else:
            shutil.copy2(source, target)
    return root


def no_node_env(*bin_dirs: Path, **more: str) -> dict[str, str]:
    """The environment with ``PATH`` holding only ``bin_dirs``: no node, no nodejs."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(str(folder) for folder in bin_dirs)
    return {**env, **more}


# -- which Node.js builds the extension ----------------------------------------------------------------


@pytest.mark.parametrize(("version", "suits"), [
    ((20, 19, 0), True), ((20, 20, 2), True), ((22, 12, 0), True), ((24, 1, 0), True),
    ((18, 19, 0), False), ((20, 18, 3), False), ((21, 7, 3), False), ((22, 11, 0), False),
])
def test_the_node_versions_jupyterlabs_bundler_runs_on(version, suits):
    assert hatch_build.node_suits(version) is suits


def test_no_node_on_the_path_is_named(tmp_path):
    assert hatch_build.node_problem(path=str(tmp_path)) == "there is no node (Node.js) on PATH"


def test_a_node_too_old_is_named_with_its_version_and_the_range_needed(tmp_path):
    path = fake_node(tmp_path / "bin", "v18.19.1")
    problem = hatch_build.node_problem(path=path)
    assert problem == f"{path}/node is Node.js 18.19.1, and the build needs ^20.19.0 || >=22.12.0"


def test_a_suitable_node_builds(tmp_path):
    assert hatch_build.node_problem(path=fake_node(tmp_path / "bin", "v22.12.0")) is None


def test_what_the_build_says_names_the_cause_and_both_ways_to_add_the_extension():
    said = hatch_build.left_out("there is no node (Node.js) on PATH", editable=False)
    assert "JupyterLab extension" in said and "left out of this install: there is no node" in said
    assert "Everything else is installed" in said
    assert "NodeSource" in said and "conda install -c conda-forge nodejs" in said  # Debian 12, Ubuntu 22.04
    assert "then run pip install '.[lab]' again" in said and "a built wheel" in said
    assert "pip install -e '.[lab]'" in hatch_build.left_out("old", editable=True)


# -- a real build and a real install, without Node.js ----------------------------------------------------


def test_a_wheel_built_without_node_has_everything_but_the_lab_extension(tmp_path):
    root = checkout_without_the_extension(tmp_path)
    build = [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path / "dist")]
    done = subprocess.run(build, cwd=root, env=no_node_env(tmp_path / "empty"), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "the JupyterLab extension (live validation, the approval dialog, traces) was left out of this " \
           "install: there is no node (Node.js) on PATH" in said
    [wheel] = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "lackpy_kernel/__init__.py" in names and "lackpy_kernel/kernelspec/kernel.json" in names
    assert any(name.endswith("etc/jupyter/jupyter_server_config.d/lackpy_kernel.json") for name in names)
    assert [name for name in names if "labextension" in name] == []  # no half extension for Lab to trip on


def test_with_a_suitable_node_the_hook_builds_the_extension_into_the_wheel(tmp_path):
    """The hook's side of a build with Node.js: ``jlpm install`` then ``jlpm run build:prod`` in
    extension/, and what they built joins the wheel where JupyterLab looks. (The build itself,
    JupyterLab's builder under Node.js, takes a minute of two cores; here a ``jlpm`` stands in
    that writes what it would.)"""
    root = checkout_without_the_extension(tmp_path)
    bin_dir = Path(fake_node(tmp_path / "bin", "v22.12.0"))
    jlpm = bin_dir / "jlpm"
    jlpm.write_text('#!/bin/sh\necho "$PWD $*" >> ../jlpm.log\n'
                    'if [ "$2" = build:prod ]; then mkdir -p ../lackpy_kernel/labextension && '
                    'echo \'{"name": "lackpy-kernel"}\' > ../lackpy_kernel/labextension/package.json; fi\n')
    jlpm.chmod(0o755)
    build = [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path / "dist")]
    done = subprocess.run(build, cwd=root, env=no_node_env(bin_dir, Path("/bin")), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    source = root / "extension"
    assert (root / "jlpm.log").read_text() == f"{source} install\n{source} run build:prod\n"
    [wheel] = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shared = "lackpy_kernel-0.1.0.data/data/share/jupyter/labextensions/lackpy-kernel/"
    assert {f"{shared}package.json", f"{shared}install.json"} <= set(names)


def test_a_source_install_without_node_installs_and_says_how_to_add_the_extension(tmp_path):
    """pip installs the checkout into a fresh virtual environment with no node on PATH; the kernel's
    install and ``lackpy doctor`` then say the extension is missing and how to add it. The
    environment borrows this one's packages (pip, hatchling, jupyter_client, JupyterLab) through a
    ``.pth`` file, so nothing is downloaded; its own lackpy_kernel comes first."""
    root = checkout_without_the_extension(tmp_path)
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True, timeout=120)
    fresh_python = fresh / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    fresh_site = subprocess.run([fresh_python, "-c", purelib], capture_output=True, text=True,
                                check=True).stdout.strip()
    Path(fresh_site, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    home = tmp_path / "home"
    env = no_node_env(fresh / "bin", HOME=str(home), JUPYTER_DATA_DIR=str(home / "data"),
                      JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_PREFER_ENV_PATH="1")
    env.pop("JUPYTER_PATH", None)
    installed = subprocess.run([fresh_python, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                                "--no-index", str(root)], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = subprocess.run([fresh_python, "-c", "import lackpy_kernel; print(lackpy_kernel.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(fresh_site)

    kernel = subprocess.run([fresh_python, "-m", "lackpy_kernel", "install", "--sys-prefix"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert kernel.returncode == 0, kernel.stderr
    assert f"Installed kernelspec 'lackpy' in {fresh}" in kernel.stdout
    assert "Note: the JupyterLab extension (live validation, the approval dialog, traces) is not " \
           "installed" in kernel.stdout
    assert "install Node.js 20.19 or newer" in kernel.stdout and "pip install '.[lab]'" in kernel.stdout

    workspace = tmp_path / "work"
    workspace.mkdir()
    doctor = subprocess.run([fresh / "bin" / "lackpy", "doctor"], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=120)
    [line] = [text for text in doctor.stdout.splitlines() if text.startswith("  off  lab extension ")]
    assert "is not installed" in line and "install Node.js 20.19 or newer" in line
