"""lackpy-kernel: a validated subset of Python for composing tools, with a Jupyter kernel."""

__version__ = "0.1.0"
