"""``python -m lackpy_kernel``: start the kernel; ``python -m lackpy_kernel install``: install it."""

import sys


def main() -> None:
    if sys.argv[1:2] == ["install"]:
        from lackpy_kernel.install import main as install

        sys.exit(install(sys.argv[2:]))
    from ipykernel.kernelapp import IPKernelApp

    from lackpy_kernel.kernel import LackpyKernel

    IPKernelApp.launch_instance(kernel_class=LackpyKernel)


if __name__ == "__main__":
    main()
