"""``python -S -m lackpy_kernel.run.worker``: serve a sandbox until stdin closes."""

from . import main

main()
