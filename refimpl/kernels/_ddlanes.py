"""Eight double-double accumulators advanced in one vector step (direct sweeps).

``dd_step(acc, x, lev, above)`` adds ``x`` to every one of the eight
double-double accumulators ``m = 0 .. 7`` in ``acc`` (high parts
``acc[0:8]``, their accumulated errors ``acc[8:16]``) with ``lev > m``
(``above``) or ``lev < m`` (not ``above``), and ``0.0`` to the others, by
Knuth's TwoSum:

    v_m = x if (lev > m, resp. lev < m) else 0.0
    s_m = h_m + v_m;  b_m = s_m - h_m
    h'_m = s_m;  l'_m = l_m + ((h_m - (s_m - b_m)) + (v_m - b_m))

Adding ``0.0`` is exact (``s = h``, error ``0``; only a ``-0.0`` high part
turns into ``+0.0``), so each accumulator is the double-double sum, in
insertion order, of the values it should receive.  A numba loop over the
eight lanes stays scalar (LLVM does not vectorise it without
``fastmath``); the intrinsic writes the ``<8 x double>`` operations in LLVM
IR with the same per-lane IEEE additions (no FMA, no reassociation), so
the bits are those of the pure-Python specification below on every
machine.  No bounds are checked: ``acc`` must hold at least 16 values.

``dd_prefix(P, x, lev, n, above)`` runs the same step over ``x[0:n]`` and
records every state: row ``b + 1`` of ``P`` (rows of sixteen values: the
eight high parts, then the eight errors) is the state after the first
``b + 1`` steps in increasing order (``above``), row ``0`` zeros; or, not
``above``, row ``b`` the state after the steps ``n - 1, ..., b`` in
decreasing order, row ``n`` zeros.  The accumulators stay in registers
across the loop (one vector addition per element on the dependency
chain, instead of a store and a reload per step), and each state is the
one :func:`dd_step` would reach after the same insertions, bit for bit.

Derived in: book/09_making_it_fast.md#fast-exact-sums
"""

from numba import types

from .._compat.numba_llvm import TypingError, cgutils, intrinsic, ir, overload

LANES = 8


def _two_sum_ir(builder, h, v):
    """IR of Knuth's TwoSum per lane: ``(s, e)`` with ``s + e = h + v``."""
    s = builder.fadd(h, v)
    b = builder.fsub(s, h)
    e = builder.fadd(builder.fsub(h, builder.fsub(s, b)), builder.fsub(v, b))
    return s, e


def dd_step(acc, x, lev, above):
    """Reference: the per-lane TwoSum of the module docstring."""
    for m in range(LANES):
        v = float(x) if ((lev > m) if above else (lev < m)) else 0.0
        h = float(acc[m])
        s = h + v
        b = s - h
        acc[LANES + m] = float(acc[LANES + m]) + ((h - (s - b)) + (v - b))
        acc[m] = s


def _make(above):
    @intrinsic
    def _ir(typingctx, acc, x, lev):
        if not (isinstance(acc, types.Array) and acc.ndim == 1
                and acc.layout == "C" and acc.dtype == types.float64
                and isinstance(x, types.Float) and isinstance(lev, types.Integer)):
            raise TypingError("dd_step needs a C-contiguous float64 vector, "
                              "a float and an integer level")
        sig = types.void(acc, x, lev)

        def codegen(context, builder, signature, args):
            aty, xty, lty = signature.args
            arr = context.make_array(aty)(context, builder, args[0])
            i64 = ir.IntType(64)
            i32 = ir.IntType(32)
            xv = context.cast(builder, args[1], xty, types.float64)
            lv = context.cast(builder, args[2], lty, types.int64)
            dbl = ir.DoubleType()
            vec = ir.VectorType(dbl, LANES)
            ivec = ir.VectorType(i64, LANES)
            vptr = vec.as_pointer()
            hp = builder.bitcast(arr.data, vptr)
            lp = builder.bitcast(builder.gep(arr.data, [ir.Constant(i64, LANES)]),
                                 vptr)
            h = builder.load(hp, align=8)
            lo = builder.load(lp, align=8)
            undef_d = ir.Constant(vec, ir.Undefined)
            undef_i = ir.Constant(ivec, ir.Undefined)
            splat = ir.Constant(ir.VectorType(i32, LANES), [0] * LANES)
            xs = builder.shuffle_vector(
                builder.insert_element(undef_d, xv, i32(0)), undef_d, splat)
            ls = builder.shuffle_vector(
                builder.insert_element(undef_i, lv, i32(0)), undef_i, splat)
            idx = ir.Constant(ivec, list(range(LANES)))
            mask = builder.icmp_signed(">" if above else "<", ls, idx)
            v = builder.select(mask, xs, ir.Constant(vec, [0.0] * LANES))
            s, e = _two_sum_ir(builder, h, v)
            builder.store(s, hp, align=8)
            builder.store(builder.fadd(lo, e), lp, align=8)
            return context.get_dummy_value()

        return sig, codegen

    return _ir


_step_above_ir = _make(True)
_step_below_ir = _make(False)


@overload(dd_step, inline="always")
def _dd_step_overload(acc, x, lev, above):
    if not isinstance(above, types.BooleanLiteral):
        raise TypingError("dd_step: 'above' must be a literal True or False")
    if above.literal_value:
        def impl(acc, x, lev, above):
            _step_above_ir(acc, x, lev)
    else:
        def impl(acc, x, lev, above):
            _step_below_ir(acc, x, lev)
    return impl


def dd_step_counted(acc, x, xx, xxl, lev, above, squares):
    """Reference: counts, sums and (if ``squares``) sums of squares.

    ``acc`` holds five groups of eight lanes: counts ``acc[0:8]`` (exact
    integers as floats), the double-double sums of ``x`` (``acc[8:16]``
    high, ``acc[16:24]`` errors) and of ``xx + xxl`` (``acc[24:32]`` high,
    ``acc[32:40]`` errors; with ``squares`` only).  Lane ``m`` is selected
    as in :func:`dd_step`; unselected lanes receive ``0.0`` everywhere.
    """
    for m in range(LANES):
        sel = (lev > m) if above else (lev < m)
        acc[m] = float(acc[m]) + (1.0 if sel else 0.0)
        v = float(x) if sel else 0.0
        h = float(acc[LANES + m])
        s = h + v
        b = s - h
        acc[2 * LANES + m] = float(acc[2 * LANES + m]) + ((h - (s - b)) + (v - b))
        acc[LANES + m] = s
        if squares:
            v = float(xx) if sel else 0.0
            vl = float(xxl) if sel else 0.0
            h = float(acc[3 * LANES + m])
            s = h + v
            b = s - h
            acc[4 * LANES + m] = float(acc[4 * LANES + m]) + (
                ((h - (s - b)) + (v - b)) + vl)
            acc[3 * LANES + m] = s


def _make_counted(above, squares):
    @intrinsic
    def _ir(typingctx, acc, x, xx, xxl, lev):
        if not (isinstance(acc, types.Array) and acc.ndim == 1
                and acc.layout == "C" and acc.dtype == types.float64
                and isinstance(x, types.Float) and isinstance(xx, types.Float)
                and isinstance(xxl, types.Float)
                and isinstance(lev, types.Integer)):
            raise TypingError("dd_step_counted needs a C-contiguous float64 "
                              "vector, three floats and an integer level")
        sig = types.void(acc, x, xx, xxl, lev)

        def codegen(context, builder, signature, args):
            aty, xty, qty, qlty, lty = signature.args
            arr = context.make_array(aty)(context, builder, args[0])
            i64 = ir.IntType(64)
            i32 = ir.IntType(32)
            dbl = ir.DoubleType()
            vec = ir.VectorType(dbl, LANES)
            ivec = ir.VectorType(i64, LANES)
            vptr = vec.as_pointer()
            undef_d = ir.Constant(vec, ir.Undefined)
            undef_i = ir.Constant(ivec, ir.Undefined)
            splat_mask = ir.Constant(ir.VectorType(i32, LANES), [0] * LANES)
            zeros = ir.Constant(vec, [0.0] * LANES)

            def splat(v, undef):
                return builder.shuffle_vector(
                    builder.insert_element(undef, v, i32(0)), undef, splat_mask)

            def ptr(group):
                return builder.bitcast(
                    builder.gep(arr.data, [ir.Constant(i64, group * LANES)]), vptr)

            lv = context.cast(builder, args[4], lty, types.int64)
            idx = ir.Constant(ivec, list(range(LANES)))
            mask = builder.icmp_signed(">" if above else "<",
                                       splat(lv, undef_i), idx)
            cp = ptr(0)
            one = builder.select(mask, ir.Constant(vec, [1.0] * LANES), zeros)
            builder.store(builder.fadd(builder.load(cp, align=8), one), cp,
                          align=8)

            def two_sum_into(hgroup, lgroup, val, extra):
                hp, lp = ptr(hgroup), ptr(lgroup)
                h = builder.load(hp, align=8)
                lo = builder.load(lp, align=8)
                v = builder.select(mask, splat(val, undef_d), zeros)
                s, e = _two_sum_ir(builder, h, v)
                if extra is not None:
                    e = builder.fadd(e, builder.select(
                        mask, splat(extra, undef_d), zeros))
                builder.store(s, hp, align=8)
                builder.store(builder.fadd(lo, e), lp, align=8)

            two_sum_into(1, 2, context.cast(builder, args[1], xty, types.float64),
                         None)
            if squares:
                two_sum_into(3, 4,
                             context.cast(builder, args[2], qty, types.float64),
                             context.cast(builder, args[3], qlty, types.float64))
            return context.get_dummy_value()

        return sig, codegen

    return _ir


_counted_irs = {(a, s): _make_counted(a, s) for a in (True, False)
                for s in (True, False)}
_counted_tt = _counted_irs[True, True]
_counted_tf = _counted_irs[True, False]
_counted_ft = _counted_irs[False, True]
_counted_ff = _counted_irs[False, False]


@overload(dd_step_counted, inline="always")
def _dd_step_counted_overload(acc, x, xx, xxl, lev, above, squares):
    if not (isinstance(above, types.BooleanLiteral)
            and isinstance(squares, types.BooleanLiteral)):
        raise TypingError("dd_step_counted: 'above' and 'squares' must be "
                          "literal booleans")
    key = (above.literal_value, squares.literal_value)
    if key == (True, True):
        def impl(acc, x, xx, xxl, lev, above, squares):
            _counted_tt(acc, x, xx, xxl, lev)
    elif key == (True, False):
        def impl(acc, x, xx, xxl, lev, above, squares):
            _counted_tf(acc, x, xx, xxl, lev)
    elif key == (False, True):
        def impl(acc, x, xx, xxl, lev, above, squares):
            _counted_ft(acc, x, xx, xxl, lev)
    else:
        def impl(acc, x, xx, xxl, lev, above, squares):
            _counted_ff(acc, x, xx, xxl, lev)
    return impl


def dd_prefix(P, x, lev, n, above):
    """Reference: every state of :func:`dd_step` over ``x[:n]``, in rows of ``P``."""
    width = 2 * LANES
    acc = [0.0] * width
    first = 0 if above else n
    for m in range(width):
        P[first * width + m] = 0.0
    for b in (range(n) if above else range(n - 1, -1, -1)):
        dd_step(acc, x[b], lev[b], above)
        row = b + 1 if above else b
        for m in range(width):
            P[row * width + m] = acc[m]


def _make_prefix(above):
    @intrinsic
    def _ir(typingctx, P, x, lev, n):
        if not (isinstance(P, types.Array) and P.ndim == 1 and P.layout == "C"
                and P.dtype == types.float64
                and isinstance(x, types.Array) and x.ndim == 1
                and x.layout == "C" and x.dtype == types.float64
                and isinstance(lev, types.Array) and lev.ndim == 1
                and lev.layout == "C" and isinstance(lev.dtype, types.Integer)
                and isinstance(n, types.Integer)):
            raise TypingError("dd_prefix needs C-contiguous float64 P and x, "
                              "an integer level vector and an integer n")
        sig = types.void(P, x, lev, n)

        def codegen(context, builder, signature, args):
            pty, xty, lty, nty = signature.args
            pa = context.make_array(pty)(context, builder, args[0])
            xa = context.make_array(xty)(context, builder, args[1])
            la = context.make_array(lty)(context, builder, args[2])
            intp = context.get_value_type(types.intp)
            nv = context.cast(builder, args[3], nty, types.intp)
            i32 = ir.IntType(32)
            i64 = ir.IntType(64)
            vec = ir.VectorType(ir.DoubleType(), LANES)
            ivec = ir.VectorType(i64, LANES)
            vptr = vec.as_pointer()
            zeros = ir.Constant(vec, [0.0] * LANES)
            width = ir.Constant(intp, 2 * LANES)
            one = ir.Constant(intp, 1)

            def row_ptr(row, half):
                off = builder.add(builder.mul(row, width),
                                  ir.Constant(intp, half * LANES))
                return builder.bitcast(builder.gep(pa.data, [off]), vptr)

            first = ir.Constant(intp, 0) if above else nv
            builder.store(zeros, row_ptr(first, 0), align=8)
            builder.store(zeros, row_ptr(first, 1), align=8)
            # allocas that LLVM promotes to registers: the state never
            # round-trips through P
            h = cgutils.alloca_once_value(builder, zeros)
            lo = cgutils.alloca_once_value(builder, zeros)
            undef_d = ir.Constant(vec, ir.Undefined)
            undef_i = ir.Constant(ivec, ir.Undefined)
            splat = ir.Constant(ir.VectorType(i32, LANES), [0] * LANES)
            idx = ir.Constant(ivec, list(range(LANES)))
            with cgutils.for_range(builder, nv) as loop:
                b = (loop.index if above
                     else builder.sub(builder.sub(nv, one), loop.index))
                xv = builder.load(builder.gep(xa.data, [b]))
                lv = context.cast(builder, builder.load(builder.gep(la.data, [b])),
                                  lty.dtype, types.int64)
                xs = builder.shuffle_vector(
                    builder.insert_element(undef_d, xv, i32(0)), undef_d, splat)
                ls = builder.shuffle_vector(
                    builder.insert_element(undef_i, lv, i32(0)), undef_i, splat)
                mask = builder.icmp_signed(">" if above else "<", ls, idx)
                v = builder.select(mask, xs, zeros)
                hv = builder.load(h)
                s, e = _two_sum_ir(builder, hv, v)
                lv2 = builder.fadd(builder.load(lo), e)
                builder.store(s, h)
                builder.store(lv2, lo)
                row = builder.add(b, one) if above else b
                builder.store(s, row_ptr(row, 0), align=8)
                builder.store(lv2, row_ptr(row, 1), align=8)
            return context.get_dummy_value()

        return sig, codegen

    return _ir


_prefix_up_ir = _make_prefix(True)
_prefix_down_ir = _make_prefix(False)


@overload(dd_prefix, inline="always")
def _dd_prefix_overload(P, x, lev, n, above):
    if not isinstance(above, types.BooleanLiteral):
        raise TypingError("dd_prefix: 'above' must be a literal True or False")
    if above.literal_value:
        def impl(P, x, lev, n, above):
            _prefix_up_ir(P, x, lev, n)
    else:
        def impl(P, x, lev, n, above):
            _prefix_down_ir(P, x, lev, n)
    return impl
