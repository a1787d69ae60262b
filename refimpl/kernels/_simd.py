"""LLVM intrinsics for the one-pass kernels: a row dot product, a prefetch, an FMA.

``row_dot(X, r, w)`` is ``X[r] . w`` summed in a fixed order:

    a_l = sum_{b} X[r, 8 b + l] w[8 b + l]      (l = 0..7, blocks in order)
    a_0 += X[r, j] w[j]                          (j = 8 floor(d/8) .. d - 1)
    result = ((a_0 + a_1) + (a_2 + a_3)) + ((a_4 + a_5) + (a_6 + a_7))

A plain numba loop cannot keep eight partial sums in one vector register
without ``fastmath`` (whose reassociation would let the compiler choose the
order, and so the bits, per machine); the intrinsic writes the ``<8 x
double>`` accumulator in LLVM IR, so the loop is vectorised and the order
is the one above on every machine (AVX2 splits it into two halves with the
same per-lane IEEE operations; no FMA contraction).  The pure-Python
definitions below are the specification: the kernels' ``py_func`` call
them, and the tests compare the two.

``prefetch(a, i)`` hints that ``a[i]`` (a 1-D array) will be read soon
(``llvm.prefetch``, kept in every cache level); it has no effect on any
result, and in Python it does nothing.

``fma(a, b, c)`` is ``a * b + c`` with one rounding (``llvm.fma.f64``: the
processor's instruction, or the C library's ``fma`` where there is none),
so ``fma(a, b, -fl(a * b))`` is the exact error of a product.  In Python it
is computed exactly with fractions and rounded once.

Derived in: book/09_making_it_fast.md#fast-simd
"""

import math

from numba import types

from .._compat.numba_llvm import TypingError, cgutils, intrinsic, ir, overload

LANES = 8


def row_dot(X, r, w):
    """``X[r] . w`` in the fixed order of the module docstring (reference)."""
    d = X.shape[1]
    d8 = d - d % LANES
    a = [0.0] * LANES
    for b in range(0, d8, LANES):
        for lane in range(LANES):
            a[lane] += float(X[r, b + lane]) * float(w[b + lane])
    for j in range(d8, d):
        a[0] += float(X[r, j]) * float(w[j])
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))


def prefetch(a, i):
    """A hint that ``a[i]`` will be read soon; nothing in Python."""


def fma(a, b, c):
    """``a * b + c`` rounded once (reference: exact rational arithmetic)."""
    from fractions import Fraction

    a, b, c = float(a), float(b), float(c)
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    try:
        return float(exact)  # correctly rounded
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _contiguous_float64(ty, ndim):
    return (isinstance(ty, types.Array) and ty.ndim == ndim
            and ty.layout == "C" and ty.dtype == types.float64)


@intrinsic
def _row_dot_ir(typingctx, X, r, w):
    if not (_contiguous_float64(X, 2) and _contiguous_float64(w, 1)
            and isinstance(r, types.Integer)):
        raise TypingError("row_dot needs a C-contiguous float64 matrix, an "
                          "integer row and a C-contiguous float64 vector")
    sig = types.float64(X, r, w)

    def codegen(context, builder, signature, args):
        xty, rty, wty = signature.args
        xa = context.make_array(xty)(context, builder, args[0])
        wa = context.make_array(wty)(context, builder, args[2])
        intp = context.get_value_type(types.intp)
        row = context.cast(builder, args[1], rty, types.intp)
        d = builder.extract_value(xa.shape, 1)
        xrow = builder.gep(xa.data, [builder.mul(row, d)])
        dbl = ir.DoubleType()
        vec = ir.VectorType(dbl, LANES)
        vptr = vec.as_pointer()
        lanes = ir.Constant(intp, LANES)
        d8 = builder.sub(d, builder.srem(d, lanes))
        acc = cgutils.alloca_once_value(builder, ir.Constant(vec, [0.0] * LANES))
        with cgutils.for_range_slice(builder, ir.Constant(intp, 0), d8,
                                     lanes) as (j, _):
            vx = builder.load(builder.bitcast(builder.gep(xrow, [j]), vptr),
                              align=8)
            vw = builder.load(builder.bitcast(builder.gep(wa.data, [j]), vptr),
                              align=8)
            builder.store(builder.fadd(builder.load(acc), builder.fmul(vx, vw)),
                          acc)
        v = builder.load(acc)
        i32 = ir.IntType(32)
        a = [builder.extract_element(v, i32(lane)) for lane in range(LANES)]
        a0 = cgutils.alloca_once_value(builder, a[0])
        with cgutils.for_range_slice(builder, d8, d,
                                     ir.Constant(intp, 1)) as (j, _):
            x = builder.load(builder.gep(xrow, [j]))
            y = builder.load(builder.gep(wa.data, [j]))
            builder.store(builder.fadd(builder.load(a0), builder.fmul(x, y)), a0)
        a[0] = builder.load(a0)
        left = builder.fadd(builder.fadd(a[0], a[1]), builder.fadd(a[2], a[3]))
        right = builder.fadd(builder.fadd(a[4], a[5]), builder.fadd(a[6], a[7]))
        return builder.fadd(left, right)

    return sig, codegen


@intrinsic
def _prefetch_ir(typingctx, a, i):
    if not (isinstance(a, types.Array) and a.ndim == 1
            and isinstance(i, types.Integer)):
        raise TypingError("prefetch needs a 1-D array and an integer index")
    sig = types.void(a, i)

    def codegen(context, builder, signature, args):
        aty, ity = signature.args
        arr = context.make_array(aty)(context, builder, args[0])
        idx = context.cast(builder, args[1], ity, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aty, arr, [idx],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty,
                                            "llvm.prefetch.p0")
        # read, locality 3 (keep in all levels), data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _fma_ir(typingctx, a, b, c):
    if not all(isinstance(t, types.Float) for t in (a, b, c)):
        raise TypingError("fma needs three floats")
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        dbl = ir.DoubleType()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(dbl, [dbl] * 3), "llvm.fma.f64")
        return builder.call(fn, args)

    return sig, codegen


@overload(fma, inline="always")
def _fma_overload(a, b, c):
    def impl(a, b, c):
        return _fma_ir(a, b, c)

    return impl


@overload(row_dot, inline="always")
def _row_dot_overload(X, r, w):
    def impl(X, r, w):
        return _row_dot_ir(X, r, w)

    return impl


@overload(prefetch, inline="always")
def _prefetch_overload(a, i):
    def impl(a, i):
        _prefetch_ir(a, i)

    return impl
