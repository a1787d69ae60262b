"""Private numba kernels.

Kernels take contiguous arrays and scalars only, never validate their input
(the public wrappers do that in Python first) and are compiled with
``cache=True`` so that a notebook or a CI run pays the compile time once.
"""
