"""numba's code-generation internals used by the SIMD and double-double kernels.

``refimpl/kernels/_simd.py``, ``_ddlanes.py`` and ``_blocklanes.py`` write
LLVM IR through ``numba.extending.intrinsic``; they need
``numba.core.cgutils`` (private) and ``llvmlite.ir``, imported here and
nowhere else.  Tested with numba 0.60 to 0.68 (``pyproject.toml`` pins the
range).
"""

from __future__ import annotations

#: The numba versions this fence was written against (pyproject.toml's range).
TESTED = ("0.60", "0.69")

try:
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core.errors import TypingError
    from numba.extending import intrinsic, overload
except ImportError as err:  # pragma: no cover - an upstream change
    import numba

    raise ImportError(
        "refimpl's SIMD kernels need numba.core.cgutils, numba.core.errors."
        "TypingError, numba.extending.intrinsic/overload and llvmlite.ir, "
        f"which numba {numba.__version__} does not provide as before ({err}); "
        f"refimpl is tested with numba >= {TESTED[0]}, < {TESTED[1]}: install a "
        "version in that range, or update refimpl/_compat/numba_llvm.py"
    ) from err

__all__ = ["TESTED", "TypingError", "cgutils", "intrinsic", "ir", "overload"]
