"""``python -m lackpy_kernel``: start the kernel (``-f CONNECTION_FILE``, as the kernelspec does).

``python -m lackpy_kernel install`` installs the kernelspec; ``python -m lackpy_kernel
run FILE`` (any first argument that is not an option) is the command line; ``--help`` says so.
"""

import os
import sys

HELP = """\
usage: python -m lackpy_kernel [-f CONNECTION_FILE]
       python -m lackpy_kernel install [--user | --sys-prefix | --prefix PATH] [...]
       python -m lackpy_kernel COMMAND [...]

Start the lackpy Jupyter kernel: every cell is a lackpy program, validated, then run in a
sandbox. Jupyter starts it so, with -f CONNECTION_FILE, from the installed kernelspec.

  install      install the kernelspec, so Jupyter offers the lackpy kernel
               (python -m lackpy_kernel install --help for where)
  COMMAND      the lackpy command line: delegate, run, doctor, ... (lackpy --help)
  --help-all   the kernel application's own options (IPython's)
"""


def main() -> None:
    first = sys.argv[1:2]
    if first in (["-h"], ["--help"]):
        print(HELP, end="")
        sys.exit(0)
    if first == ["install"]:
        from lackpy_kernel.install import main as install

        sys.exit(install(sys.argv[2:]))
    if first and not first[0].startswith("-"):
        from lackpy_kernel.cli import entry

        entry(sys.argv[1:])
    _forget_the_working_folder()
    if sys.platform.startswith("linux"):
        # The sandbox worker boots while the kernel imports Jupyter; the session adopts it.
        from lackpy_kernel.run.spawn import start_early

        start_early(os.getcwd())
    from lackpy_kernel.kernel import LackpyKernel, LackpyKernelApp

    # ignore_cwd: as below. No OutStream: cells' output is sent as messages, never printed,
    # so the kernel's own stdout and stderr stay its log's, and no reply waits on a flush
    # of them through the IOPub thread (four round trips to it per cell).
    LackpyKernelApp.launch_instance(kernel_class=LackpyKernel, ignore_cwd=True,
                                    outstream_class=None)


def _forget_the_working_folder() -> None:
    """Take the working folder off the kernel's import path, where ``python -m`` puts it
    first (and IPython would put it again, without ``ignore_cwd``).

    The kernel's working folder is the workspace, where programs write files: a
    ``mcp_types.py`` written there would otherwise be what the kernel imports the first
    time it needs the real one, and run outside the sandbox. (The command line keeps it:
    ``--registry MODULE:NAME`` names a module there on purpose.)
    """
    if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]


if __name__ == "__main__":
    main()
