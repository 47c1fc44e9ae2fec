"""``python -m lackpy_kernel``: start the kernel (``-f CONNECTION_FILE``, as the kernelspec does).

``python -m lackpy_kernel install`` installs the kernelspec; ``python -m lackpy_kernel
run FILE`` (or any other ``lackpy`` command) is the command line.
"""

import sys


def main() -> None:
    first = sys.argv[1:2]
    if first == ["install"]:
        from lackpy_kernel.install import main as install

        sys.exit(install(sys.argv[2:]))
    from lackpy_kernel.cli import COMMANDS, entry

    if first and (first[0] in COMMANDS or first[0] == "mcp"):
        entry(sys.argv[1:])
    from ipykernel.kernelapp import IPKernelApp

    from lackpy_kernel.kernel import LackpyKernel

    IPKernelApp.launch_instance(kernel_class=LackpyKernel)


if __name__ == "__main__":
    main()
