"""``python -m lackpy_kernel``: the lackpy command line."""

import sys

from lackpy_kernel.cli import main

sys.exit(main())
