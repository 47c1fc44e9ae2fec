"""Install the lackpy Jupyter kernelspec: ``python -m lackpy_kernel install``.

The spec's source of truth is ``kernelspec/`` at the repository root (kernel.json and logos). A wheel
carries it as ``lackpy_kernel/kernelspec``; a checkout (editable install) has it next to the package.
Installing copies it to a temporary directory, writes the installing interpreter (``sys.executable``)
into ``argv[0]`` of kernel.json, and hands it to ``jupyter_client``'s ``KernelSpecManager``.

This module imports neither ipykernel nor the kernel itself; ``jupyter_client`` is imported only when
something is installed or removed.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "lackpy"
LAB_EXTENSION = "lackpy-kernel"  # the Lab extension's folder under share/jupyter/labextensions

# The files of a kernelspec directory that are installed (anything else there, such as the script that
# draws the logos, stays behind).
_SPEC_FILES = ("kernel.json", "kernel.js", "logo-32x32.png", "logo-64x64.png", "logo-svg.svg")

_PACKAGE_DIR = Path(__file__).resolve().parent

# jupyter_client's rule for kernel names (it lower-cases them first).
_VALID_NAME = re.compile(r"^[a-z0-9._-]+$", re.IGNORECASE)


def _checked_name(name: str) -> str:
    if not _VALID_NAME.match(name):
        raise ValueError(f"invalid kernel name {name!r}: use ASCII letters, digits, '.', '_' and '-' only")
    return name.lower()


def spec_source_dir() -> Path:
    """The directory holding the kernelspec to install.

    ``lackpy_kernel/kernelspec`` (package data in a wheel) first, then ``kernelspec/`` beside the
    package (a checkout). Raises ``FileNotFoundError`` when neither has a kernel.json.
    """
    candidates = (_PACKAGE_DIR / "kernelspec", _PACKAGE_DIR.parent / "kernelspec")
    for candidate in candidates:
        if (candidate / "kernel.json").is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"no lackpy kernelspec (kernel.json) found; looked in {looked}")


def lab_extension_dir() -> Path | None:
    """Where JupyterLab finds the lackpy Lab extension (``labextensions/lackpy-kernel``), or None
    when it is in none of the places JupyterLab looks (an install from source without Node.js)."""
    from jupyter_core.paths import jupyter_path

    for folder in jupyter_path("labextensions"):
        if (Path(folder) / LAB_EXTENSION / "package.json").is_file():
            return Path(folder) / LAB_EXTENSION
    return None


def lab_extension_missing() -> str:
    """What to say when JupyterLab is here and the Lab extension is not: what that costs and how to
    add it."""
    return (
        "the JupyterLab extension (live validation, the approval dialog, traces) is not installed; "
        "JupyterLab runs lackpy without it. An install from source leaves it out when Node.js 20.19+ "
        "is missing. To add it: install Node.js 20.19 or newer (Debian 12 and Ubuntu 22.04 carry an "
        "older one: NodeSource's packages, or conda install -c conda-forge nodejs), then run the pip "
        "install again (in the checkout: pip install '.[lab]'); or install a built wheel, which "
        "carries the extension and needs no Node.js"
    )


def in_virtual_env() -> bool:
    """True when this interpreter runs in a virtualenv/venv or a conda environment."""
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return True
    if os.environ.get("CONDA_PREFIX") and _same_path(os.environ["CONDA_PREFIX"], sys.prefix):
        return True
    return (Path(sys.prefix) / "conda-meta").is_dir()


def _same_path(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def write_spec(dest: str | os.PathLike[str], display_name: str | None = None) -> Path:
    """Write the kernelspec files into ``dest`` with ``argv[0]`` set to ``sys.executable``."""
    source = spec_source_dir()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in _SPEC_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, dest / name)
    spec = json.loads((source / "kernel.json").read_text(encoding="utf-8"))
    spec["argv"] = [sys.executable, *spec["argv"][1:]]
    if display_name:
        spec["display_name"] = display_name
    (dest / "kernel.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    return dest


def install_kernelspec(
    user: bool = False,
    prefix: str | os.PathLike[str] | None = None,
    name: str = KERNEL_NAME,
    display_name: str | None = None,
) -> str:
    """Install the lackpy kernelspec and return the directory it was installed to.

    Like ``jupyter_client``'s ``install_kernel_spec``: ``user=True`` installs for the current user,
    ``prefix`` installs to ``PREFIX/share/jupyter/kernels/NAME`` (``sys.prefix`` for a virtual or conda
    env), and neither installs system-wide. An existing spec of the same name is replaced.
    """
    from jupyter_client.kernelspec import KernelSpecManager

    name = _checked_name(name)
    if user and prefix:
        raise ValueError("give user or prefix, not both")
    with tempfile.TemporaryDirectory(prefix="lackpy-kernelspec-") as tmp:
        spec_dir = write_spec(Path(tmp) / name, display_name=display_name)
        return KernelSpecManager().install_kernel_spec(
            str(spec_dir),
            kernel_name=name,
            user=user,
            prefix=os.fspath(prefix) if prefix else None,
        )


def kernelspec_dir(
    user: bool = False, prefix: str | os.PathLike[str] | None = None, name: str = KERNEL_NAME
) -> str:
    """Where ``install_kernelspec`` with the same arguments puts the spec."""
    from jupyter_client.kernelspec import SYSTEM_JUPYTER_PATH, KernelSpecManager

    name = _checked_name(name)
    if user and prefix:
        raise ValueError("give user or prefix, not both")
    if user:
        return os.path.join(KernelSpecManager().user_kernel_dir, name)
    if prefix:
        return os.path.join(os.path.abspath(prefix), "share", "jupyter", "kernels", name)
    return os.path.join(SYSTEM_JUPYTER_PATH[0], "kernels", name)


def uninstall_kernelspec(
    user: bool = False, prefix: str | os.PathLike[str] | None = None, name: str = KERNEL_NAME
) -> str | None:
    """Remove the spec that ``install_kernelspec`` with the same arguments installed.

    Returns the directory removed, or ``None`` when there was nothing there.
    """
    path = kernelspec_dir(user=user, prefix=prefix, name=name)
    if not os.path.isdir(path):
        return None
    if os.path.islink(path):
        os.remove(path)
    else:
        shutil.rmtree(path)
    return path


def _parser() -> argparse.ArgumentParser:
    default = "--sys-prefix" if in_virtual_env() else "--user"
    parser = argparse.ArgumentParser(
        prog="python -m lackpy_kernel install",
        description=(
            "Install the lackpy Jupyter kernelspec. kernel.json runs the kernel with this interpreter "
            f"({sys.executable})."
        ),
        epilog=(
            "Where: with none of --user/--sys-prefix/--prefix, the spec goes into the current virtual or "
            "conda environment (--sys-prefix) when running in one, otherwise into your user Jupyter "
            f"directory (--user). Here that is {default}."
        ),
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--user", action="store_true", help="install for the current user (Jupyter's user data dir)"
    )
    where.add_argument(
        "--sys-prefix",
        action="store_true",
        help=f"install into this environment ({sys.prefix}/share/jupyter/kernels)",
    )
    where.add_argument("--prefix", metavar="PATH", help="install into PATH/share/jupyter/kernels")
    parser.add_argument("--name", default=KERNEL_NAME, help=f"kernel name (default: {KERNEL_NAME})")
    parser.add_argument("--display-name", help="name shown in front-ends (default: lackpy)")
    parser.add_argument(
        "--uninstall", action="store_true", help="remove the spec from the chosen location instead"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command line entry point. ``argv`` is what follows ``install`` (a leading ``install`` is allowed)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["install"]:
        args_list = args_list[1:]
    args = _parser().parse_args(args_list)

    if args.prefix:
        user, prefix, where = False, args.prefix, f"--prefix {args.prefix}"
    elif args.sys_prefix or (not args.user and in_virtual_env()):
        user, prefix, where = False, sys.prefix, f"--sys-prefix ({sys.prefix})"
    else:
        user, prefix, where = True, None, "--user"

    try:
        if args.uninstall:
            removed = uninstall_kernelspec(user=user, prefix=prefix, name=args.name)
            if removed is None:
                print(f"no kernelspec {args.name!r} installed with {where}", file=sys.stderr)
                return 1
            print(f"Removed kernelspec {args.name!r} from {removed}")
            return 0
        dest = install_kernelspec(user=user, prefix=prefix, name=args.name, display_name=args.display_name)
    except ImportError as exc:
        print(f"error: installing a kernelspec needs jupyter_client ({exc})", file=sys.stderr)
        return 1
    except ValueError as exc:  # e.g. an invalid kernel name
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PermissionError as exc:
        print(
            f"error: permission denied writing {exc.filename or 'the kernelspec'}; "
            "install with --user (or --prefix PATH) instead",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            print(
                f"error: cannot write {exc.filename or 'the kernelspec'} ({exc.strerror}); "
                "install with --user (or --prefix PATH) instead",
                file=sys.stderr,
            )
            return 1
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Installed kernelspec {args.name!r} in {dest}")
    if prefix is not None and not _jupyter_looks_in(os.path.dirname(dest)):
        data_dir = os.path.join(os.path.abspath(prefix), "share", "jupyter")
        print(f"Note: Jupyter does not look there by default; set JUPYTER_PATH={data_dir} to use it.")
    if importlib.util.find_spec("jupyterlab") is not None and lab_extension_dir() is None:
        print(f"Note: {lab_extension_missing()}.")
    return 0


def _jupyter_looks_in(kernels_dir: str) -> bool:
    from jupyter_client.kernelspec import KernelSpecManager

    return any(_same_path(kernels_dir, d) for d in KernelSpecManager().kernel_dirs if os.path.isdir(d))


if __name__ == "__main__":
    sys.exit(main())
