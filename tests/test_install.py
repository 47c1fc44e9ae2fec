"""The kernelspec and ``python -m lackpy_kernel install``: real jupyter_client, temporary prefixes."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from lackpy_kernel import install

kernelspec = pytest.importorskip("jupyter_client.kernelspec", reason="the kernelspec needs jupyter_client")

REPO = Path(__file__).resolve().parents[1]
SPEC_SOURCE = REPO / "kernelspec"
EXPECTED_ARGV_TAIL = ["-m", "lackpy_kernel", "-f", "{connection_file}"]


@pytest.fixture(autouse=True)
def _isolated_jupyter(tmp_path, monkeypatch):
    """Keep every test away from the real user and environment Jupyter directories."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(home / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(home / "jupyter-config"))
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    # The user's folder first: a spec already installed in this environment must not win.
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "0")


def png_header(data: bytes) -> tuple[int, int, int, int]:
    """Check a PNG's signature and chunk CRCs; return (width, height, bit depth, colour type)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, kind
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)[:4]
        chunks.append(kind)
        pos += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND" and b"IDAT" in chunks
    return header


def manager_for(prefix: Path) -> kernelspec.KernelSpecManager:
    return kernelspec.KernelSpecManager(
        kernel_dirs=[str(prefix / "share" / "jupyter" / "kernels")], ensure_native_kernel=False
    )


def kernelspec_list(jupyter_path: Path) -> str:
    env = dict(os.environ, JUPYTER_PATH=str(jupyter_path))
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter_client.kernelspecapp", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# -- the kernelspec in the repository --------------------------------------------------------------


def test_kernel_json_in_repository():
    spec = json.loads((SPEC_SOURCE / "kernel.json").read_text(encoding="utf-8"))
    assert spec["argv"] == ["python", *EXPECTED_ARGV_TAIL]
    assert spec["display_name"] == "lackpy"
    assert spec["language"] == "lackpy"
    assert spec["interrupt_mode"] == "signal"


@pytest.mark.parametrize("size", [32, 64])
def test_logos_are_pngs_of_the_right_size(size):
    width, height, depth, colour_type = png_header((SPEC_SOURCE / f"logo-{size}x{size}.png").read_bytes())
    assert (width, height) == (size, size)
    assert depth == 8 and colour_type == 6  # 8-bit RGBA


def test_logos_match_the_script_that_draws_them():
    sys.path.insert(0, str(SPEC_SOURCE))
    try:
        import make_logos
    finally:
        sys.path.remove(str(SPEC_SOURCE))
    for size in (32, 64):
        assert (
            make_logos.png_bytes(make_logos.render(size))
            == (SPEC_SOURCE / f"logo-{size}x{size}.png").read_bytes()
        )
    assert make_logos.svg_text() == (SPEC_SOURCE / "logo-svg.svg").read_text(encoding="utf-8")


def test_install_module_does_not_import_the_kernel():
    code = (
        "import sys, lackpy_kernel.install as m\n"
        "assert callable(m.main) and callable(m.install_kernelspec)\n"
        "bad = [n for n in sys.modules if n == 'ipykernel' or n.startswith('ipykernel.')\n"
        "       or n == 'lackpy_kernel.kernel' or n == 'jupyter_client']\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# -- installing --------------------------------------------------------------------------------------


def test_install_into_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    dest = install.install_kernelspec(prefix=prefix)
    assert Path(dest) == prefix / "share" / "jupyter" / "kernels" / "lackpy"

    ksm = manager_for(prefix)
    assert "lackpy" in ksm.find_kernel_specs()
    spec = ksm.get_kernel_spec("lackpy")
    assert spec.argv[0] == sys.executable
    assert spec.argv[1:] == EXPECTED_ARGV_TAIL
    assert spec.display_name == "lackpy"
    assert spec.language == "lackpy"
    assert spec.interrupt_mode == "signal"
    for name in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (Path(dest) / name).read_bytes() == (SPEC_SOURCE / name).read_bytes()
    assert not (Path(dest) / "make_logos.py").exists()
    # The source of truth is untouched: argv[0] is rewritten only in the installed copy.
    assert json.loads((SPEC_SOURCE / "kernel.json").read_text())["argv"][0] == "python"


def test_jupyter_kernelspec_list_shows_it(tmp_path):
    prefix = tmp_path / "prefix"
    dest = install.install_kernelspec(prefix=prefix)
    out = kernelspec_list(prefix / "share" / "jupyter")
    listed = dict(line.split(None, 1) for line in out.splitlines()[1:] if line.strip())
    assert Path(listed["lackpy"].strip()) == Path(dest)


def test_jupyter_kernelspec_console_script_shows_it(tmp_path):
    script = Path(sys.executable).parent / "jupyter-kernelspec"
    if not script.exists():
        script = shutil.which("jupyter-kernelspec")
    if not script:
        pytest.skip("no jupyter-kernelspec script beside this interpreter")
    prefix = tmp_path / "prefix"
    install.install_kernelspec(prefix=prefix)
    env = dict(os.environ, JUPYTER_PATH=str(prefix / "share" / "jupyter"))
    proc = subprocess.run([str(script), "list"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "lackpy" in proc.stdout.split()


def test_install_for_user(tmp_path):
    dest = install.install_kernelspec(user=True)
    data_dir = Path(os.environ["JUPYTER_DATA_DIR"])
    assert Path(dest) == data_dir / "kernels" / "lackpy"
    ksm = kernelspec.KernelSpecManager()
    assert Path(ksm.find_kernel_specs()["lackpy"]) == Path(dest)
    assert ksm.get_kernel_spec("lackpy").argv[0] == sys.executable


def test_install_under_another_name_and_display_name(tmp_path):
    prefix = tmp_path / "prefix"
    dest = install.install_kernelspec(prefix=prefix, name="other", display_name="lackpy (dev)")
    assert Path(dest).name == "other"
    specs = manager_for(prefix).find_kernel_specs()
    assert set(specs) == {"other"}
    assert manager_for(prefix).get_kernel_spec("other").display_name == "lackpy (dev)"


def test_reinstall_replaces(tmp_path):
    prefix = tmp_path / "prefix"
    install.install_kernelspec(prefix=prefix, display_name="first")
    install.install_kernelspec(prefix=prefix)
    assert manager_for(prefix).get_kernel_spec("lackpy").display_name == "lackpy"


def test_invalid_name_refused(tmp_path):
    with pytest.raises(ValueError, match="invalid kernel name"):
        install.install_kernelspec(prefix=tmp_path, name="../escape")
    with pytest.raises(ValueError, match="invalid kernel name"):
        install.uninstall_kernelspec(prefix=tmp_path, name="../escape")


def test_user_and_prefix_together_refused(tmp_path):
    with pytest.raises(ValueError):
        install.install_kernelspec(user=True, prefix=tmp_path)


def test_uninstall(tmp_path):
    prefix = tmp_path / "prefix"
    dest = install.install_kernelspec(prefix=prefix)
    assert install.uninstall_kernelspec(prefix=prefix) == dest
    assert not Path(dest).exists()
    assert install.uninstall_kernelspec(prefix=prefix) is None
    assert manager_for(prefix).find_kernel_specs() == {}


def test_spec_found_as_package_data_first(tmp_path, monkeypatch):
    """In a wheel the spec lives at lackpy_kernel/kernelspec; that copy wins over a checkout's."""
    package = tmp_path / "site-packages" / "lackpy_kernel"
    shutil.copytree(SPEC_SOURCE, package / "kernelspec")
    spec_path = package / "kernelspec" / "kernel.json"
    spec = json.loads(spec_path.read_text())
    spec["display_name"] = "from the wheel"
    spec_path.write_text(json.dumps(spec))
    monkeypatch.setattr(install, "_PACKAGE_DIR", package)

    assert install.spec_source_dir() == package / "kernelspec"
    dest = install.install_kernelspec(prefix=tmp_path / "prefix")
    assert json.loads((Path(dest) / "kernel.json").read_text())["display_name"] == "from the wheel"


def test_missing_spec_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(install, "_PACKAGE_DIR", tmp_path / "nowhere" / "lackpy_kernel")
    with pytest.raises(FileNotFoundError, match="kernelspec"):
        install.spec_source_dir()


# -- the command line ----------------------------------------------------------------------------------


def test_main_with_prefix(tmp_path, capsys):
    prefix = tmp_path / "prefix"
    assert install.main(["--prefix", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert str(prefix / "share" / "jupyter" / "kernels" / "lackpy") in out
    assert "JUPYTER_PATH=" in out  # a prefix Jupyter does not search gets a hint
    assert manager_for(prefix).get_kernel_spec("lackpy").argv[0] == sys.executable


def test_main_accepts_leading_install_word(tmp_path):
    prefix = tmp_path / "prefix"
    assert install.main(["install", "--prefix", str(prefix), "--name", "other"]) == 0
    assert set(manager_for(prefix).find_kernel_specs()) == {"other"}


def test_main_user(tmp_path):
    assert install.main(["--user", "--display-name", "mine"]) == 0
    spec = kernelspec.KernelSpecManager().get_kernel_spec("lackpy")
    assert spec.display_name == "mine"
    assert Path(spec.resource_dir).parent == Path(os.environ["JUPYTER_DATA_DIR"]) / "kernels"


def test_main_sys_prefix(tmp_path, monkeypatch):
    env_prefix = tmp_path / "env"
    monkeypatch.setattr(sys, "prefix", str(env_prefix))
    assert install.main(["--sys-prefix"]) == 0
    assert (env_prefix / "share" / "jupyter" / "kernels" / "lackpy" / "kernel.json").is_file()


def test_default_in_a_virtual_env_is_sys_prefix(tmp_path, monkeypatch):
    env_prefix = tmp_path / "venv"
    monkeypatch.setattr(sys, "prefix", str(env_prefix))
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "base"))
    assert install.in_virtual_env()
    assert install.main([]) == 0
    assert (env_prefix / "share" / "jupyter" / "kernels" / "lackpy" / "kernel.json").is_file()
    assert not (Path(os.environ["JUPYTER_DATA_DIR"]) / "kernels" / "lackpy").exists()


def test_default_outside_a_virtual_env_is_user(tmp_path, monkeypatch):
    base = tmp_path / "base"
    base.mkdir()
    monkeypatch.setattr(sys, "prefix", str(base))
    monkeypatch.setattr(sys, "base_prefix", str(base))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    assert not install.in_virtual_env()
    assert install.main([]) == 0
    assert (Path(os.environ["JUPYTER_DATA_DIR"]) / "kernels" / "lackpy" / "kernel.json").is_file()
    assert not (base / "share").exists()


def test_conda_env_counts_as_an_env(tmp_path, monkeypatch):
    env = tmp_path / "conda-env"
    (env / "conda-meta").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(env))
    monkeypatch.setattr(sys, "base_prefix", str(env))
    assert install.in_virtual_env()


@pytest.mark.parametrize(
    "flags",
    [["--user", "--sys-prefix"], ["--user", "--prefix", "x"], ["--sys-prefix", "--prefix", "x"]],
)
def test_location_flags_are_mutually_exclusive(flags, capsys):
    with pytest.raises(SystemExit) as exc:
        install.main(flags)
    assert exc.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_main_invalid_name(tmp_path, capsys):
    assert install.main(["--prefix", str(tmp_path), "--name", "no/slash"]) == 2
    assert "invalid kernel name" in capsys.readouterr().err


def test_main_unwritable_location_says_use_user(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert install.main(["--prefix", str(blocker / "prefix")]) == 1
    assert "error:" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_main_permission_denied_says_use_user(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert install.main(["--prefix", str(locked / "prefix")]) == 1
    finally:
        locked.chmod(0o700)
    assert "--user" in capsys.readouterr().err


def test_main_permission_error_says_use_user(tmp_path, monkeypatch, capsys):
    """The same path as above, for runs as root: the copy into place is refused."""
    target = tmp_path / "prefix"

    def refuse(src, dst, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(shutil, "copytree", refuse)
    assert install.main(["--prefix", str(target)]) == 1
    err = capsys.readouterr().err
    assert "permission denied" in err and "--user" in err and str(target) in err


def test_main_uninstall(tmp_path, capsys):
    prefix = tmp_path / "prefix"
    assert install.main(["--prefix", str(prefix)]) == 0
    assert install.main(["--prefix", str(prefix), "--uninstall"]) == 0
    assert "Removed" in capsys.readouterr().out
    assert manager_for(prefix).find_kernel_specs() == {}
    assert install.main(["--prefix", str(prefix), "--uninstall"]) == 1


def test_help_explains_the_default(capsys):
    with pytest.raises(SystemExit) as exc:
        install.main(["--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--sys-prefix" in out and "--user" in out and "virtual or conda environment" in out


def test_runs_as_a_module(tmp_path):
    prefix = tmp_path / "prefix"
    proc = subprocess.run(
        [sys.executable, "-m", "lackpy_kernel.install", "--prefix", str(prefix)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "lackpy" in kernelspec_list(prefix / "share" / "jupyter").split()


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_the_modules_help_is_ours_not_ipythons(flag, tmp_path):
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", flag], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m lackpy_kernel [-f CONNECTION_FILE]\n")
    assert "Start the lackpy Jupyter kernel" in done.stdout
    assert "\n  install      install the kernelspec" in done.stdout
    assert "IPython: an enhanced interactive Python shell" not in done.stdout
