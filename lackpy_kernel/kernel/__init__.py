"""The lackpy Jupyter kernel: every cell is a lackpy program, validated, then run in a sandbox.

Run as ``python -m lackpy_kernel -f CONNECTION_FILE`` (the kernelspec does this).
``kernel`` holds the Jupyter protocol handlers, ``magics`` the magics, ``output`` what a
cell sends; how things look is ``lackpy_kernel.notebook.bundles``, shared with the other surfaces.
"""

from .app import LackpyKernelApp
from .kernel import LackpyKernel
from .output import CellError

__all__ = ["CellError", "LackpyKernel", "LackpyKernelApp"]
