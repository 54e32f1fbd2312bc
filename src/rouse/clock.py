"""``rouse.clock``: the name SPEC §3.3 gives the one module that computes due.

It lives in :mod:`rouse.core.clock`; importing ``rouse.clock`` gives that very
module (not a copy), so both names share its functions and its state.
"""

import sys

from rouse.core import clock

sys.modules[__name__] = clock
