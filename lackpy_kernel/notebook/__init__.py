"""Everything a notebook surface does, written once for the Jupyter kernel and the IPython
extension: the magics' declarations (``declare``), their syntax (``syntax``), how results
look (``bundles``), and the output port (``port``) the magic families are written against.

Neither host holds a magic of its own: each implements :class:`NotebookPort` and parses
its cells. This package imports neither ``lackpy_kernel.kernel`` nor IPython.
"""

from lackpy_kernel.notebook.port import (
    Bundle,
    NotebookError,
    NotebookPort,
    ProgramCell,
    StreamName,
    no_input,
    program_failure,
)

__all__ = ["Bundle", "NotebookError", "NotebookPort", "ProgramCell", "StreamName", "no_input",
           "program_failure"]
