"""lackpy-kernel: a validated subset of Python for composing tools, with a Jupyter kernel.

``%load_ext lackpy_kernel`` in an IPython session loads the ``%%lackpy`` and
``%delegate`` magics.
"""

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # noqa: ANN001 - IPython's hook signature
    """Register the lackpy magics (``%load_ext lackpy_kernel``)."""
    from lackpy_kernel.extension import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):  # noqa: ANN001
    """Remove the lackpy magics."""
    from lackpy_kernel.extension import unload_ipython_extension as unload

    unload(ipython)
