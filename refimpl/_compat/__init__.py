"""The private APIs of refimpl's dependencies, fenced: one module each.

Everything refimpl takes from a dependency's private module is imported
here and nowhere else, so that an upstream change breaks one import with
a message naming the module, the versions refimpl was tested with and
what to do, and ``tests/test_compat.py`` notices it first.

``sklearn_params``  scikit-learn's parameter validation
                    (``sklearn.utils._param_validation``)
``numba_llvm``      numba's code generation (``numba.core.cgutils``,
                    ``llvmlite.ir``) for the SIMD and double-double kernels
``loky``            the workers of joblib's reusable loky executor
"""
