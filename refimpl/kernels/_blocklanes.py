"""Four-lane vector loops over a label block (FenchelRank's Algorithm 1).

In the label-block layout (:func:`refimpl.pairs.label_blocks`) the pairs
``(i, k)`` of one document ``i`` are a contiguous run ``k = lo .. hi - 1``
of the scores, so a pass over the pairs is, per document, a loop over
``z[lo:hi]`` with ``z_i`` fixed.  numba compiles such a loop to scalar code:
its sums are reductions, which LLVM vectorises only when allowed to
reassociate them (``fastmath``), and then the order -- and so the bits --
would depend on the machine's vector width.  These intrinsics write the
loop in LLVM IR on ``<4 x double>``: lane ``l`` takes the pairs ``k`` with
``k - lo = l (mod 4)``, every lane does the IEEE operations of the scalar
code in the same order (no FMA contraction), so the results are those of
the scalar loops below, on every machine.  The last vector of a block is
partial: its lanes at ``k >= hi`` add ``-0.0`` (which changes no value, a
zero's sign included) and append no breakpoint, but are still read, so the
arrays must hold ``LANES - 1`` elements past ``hi`` (the caller runs a
block that ends at the array's end through the specification instead).

The pure-Python definitions are the specification: the kernels' ``py_func``
call them, and the tests compare the two.

Derived in: book/09_making_it_fast.md#fast-block-lanes
"""

from numba import types

from .._compat.numba_llvm import TypingError, cgutils, intrinsic, ir, overload

LANES = 4


def hinge_lanes(z, lo, hi, zi, margin, dz, acc):
    """Squared-hinge lanes: ``r = max(margin - (zi - z[k]), 0)`` for ``k`` in
    ``[lo, hi)``; ``acc[l] += r^2``, ``acc[4 + l] += r`` (lane ``l``),
    ``dz[k] += 2 r``.  ``r`` is NaN when the residual is (not clipped)."""
    for k in range(lo, hi):
        lane = (k - lo) % LANES
        r = margin - (zi - z[k])
        r = 0.0 if r <= 0.0 else r  # noqa: FURB136 (a NaN stays, as in the IR)
        acc[lane] += r * r
        acc[LANES + lane] += r
        dz[k] += 2.0 * r


def step_lanes(z, u, lo, hi, zi, ui, margin, bound, acc, n_found, found_a, found_c):
    """Exact-step lanes: with ``a = margin - (zi - z[k])``, ``c = ui - u[k]``
    and ``d = c`` if the pair is active just right of 0 (``a > 0``, or
    ``a = 0`` and ``c < 0``) else 0: ``acc[l] += a d``, ``acc[4 + l] += d^2``.
    The pairs whose breakpoint ``a / c`` lies in ``(0, bound)`` (tested as
    ``min(B, 0) < a < max(B, 0)``, ``B = bound c``) are appended in order:
    ``found_a[m] = a``, ``found_c[m] = c`` with ``m = n_found[0]``, which counts on past
    the buffers' length.  (The compiled lanes may also write up to
    ``LANES - 1`` entries past the last appended one, within the buffers.)"""
    for k in range(lo, hi):
        lane = (k - lo) % LANES
        a = margin - (zi - z[k])
        c = ui - u[k]
        on = (a > 0.0) or (a == 0.0 and c < 0.0)
        d = c if on else 0.0
        acc[lane] += a * d
        acc[LANES + lane] += d * d
        b = bound * c
        if (b if b < 0.0 else 0.0) < a < (b if b > 0.0 else 0.0):  # noqa: FURB136
            m = n_found[0]
            if m < len(found_a):
                found_a[m] = a
                found_c[m] = c
            n_found[0] = m + 1


def _is_vector(ty, dtype=types.float64):
    return (isinstance(ty, types.Array) and ty.ndim == 1
            and ty.layout == "C" and ty.dtype == dtype)


class _Lanes:
    """IR helpers for one intrinsic: vector type, splats, vector pointers."""

    def __init__(self, context, builder):
        self.context = context
        self.builder = builder
        self.dbl = ir.DoubleType()
        self.vec = ir.VectorType(self.dbl, LANES)
        self.vptr = self.vec.as_pointer()
        self.intp = context.get_value_type(types.intp)
        self.zero = ir.Constant(self.vec, [0.0] * LANES)
        # x + (-0.0) == x for every x, +-0 included: the masked lanes' term
        self.neutral = ir.Constant(self.vec, [-0.0] * LANES)
        self.ivec = ir.VectorType(self.intp, LANES)

    def mask(self, k, stop):
        """Lanes ``k + l < stop`` of the vector at ``k``."""
        b = self.builder
        idx = b.add(self.splat(k, self.ivec),
                    ir.Constant(self.ivec, list(range(LANES))))
        return b.icmp_signed("<", idx, self.splat(stop, self.ivec))

    def masked(self, mask, x):
        """``x`` where ``mask`` (all lanes when it is None), else ``-0.0``."""
        return x if mask is None else self.builder.select(mask, x, self.neutral)

    def loop(self, start, stop, body):
        """``body(k, mask)`` for ``k = start, start + 4, ... < stop``: whole
        vectors with ``mask = None``, then the partial last one, if any,
        with its lane mask."""
        b = self.builder
        step = ir.Constant(self.intp, LANES)
        n = b.sub(stop, start)
        whole = b.add(start, b.sub(n, b.srem(n, step)))
        with cgutils.for_range_slice(b, start, whole, step) as (k, _):
            body(k, None)
        with b.if_then(b.icmp_signed("<", whole, stop)):
            body(whole, self.mask(whole, stop))

    def data(self, ty, value):
        return self.context.make_array(ty)(self.context, self.builder, value).data

    def scalar(self, value, ty, to=types.float64):
        return self.context.cast(self.builder, value, ty, to)

    def splat(self, x, vec=None):
        vec = self.vec if vec is None else vec
        v = ir.Constant(vec, ir.Undefined)
        for lane in range(LANES):
            v = self.builder.insert_element(v, x, ir.IntType(32)(lane))
        return v

    def at(self, ptr, k):
        """``<4 x double>*`` at element ``k`` of a double pointer."""
        return self.builder.bitcast(self.builder.gep(ptr, [k]), self.vptr)

    def load(self, ptr):
        return self.builder.load(ptr, align=8)

    def store(self, value, ptr):
        self.builder.store(value, ptr, align=8)


@intrinsic
def _hinge_lanes_ir(typingctx, z, lo, hi, zi, margin, dz, acc):
    if not (_is_vector(z) and _is_vector(dz) and _is_vector(acc)
            and isinstance(lo, types.Integer) and isinstance(hi, types.Integer)
            and isinstance(zi, types.Float) and isinstance(margin, types.Float)):
        raise TypingError("hinge_lanes needs C-contiguous float64 vectors z, "
                          "dz, acc, integer bounds and float zi, margin")
    sig = types.void(z, lo, hi, zi, margin, dz, acc)

    def codegen(context, builder, signature, args):
        ty = signature.args
        L = _Lanes(context, builder)
        zp, dzp = L.data(ty[0], args[0]), L.data(ty[5], args[5])
        accp = builder.bitcast(L.data(ty[6], args[6]), L.vptr)
        start = L.scalar(args[1], ty[1], types.intp)
        stop = L.scalar(args[2], ty[2], types.intp)
        zi_v = L.splat(L.scalar(args[3], ty[3]))
        m_v = L.splat(L.scalar(args[4], ty[4]))
        two = ir.Constant(L.vec, [2.0] * LANES)
        t = cgutils.alloca_once_value(builder, L.load(accp))
        s = cgutils.alloca_once_value(builder, L.load(builder.gep(accp, [L.intp(1)])))
        def body(k, lanes):
            r = builder.fsub(m_v, builder.fsub(zi_v, L.load(L.at(zp, k))))
            r = builder.select(builder.fcmp_ordered("<=", r, L.zero), L.zero, r)
            builder.store(builder.fadd(builder.load(t),
                                       L.masked(lanes, builder.fmul(r, r))), t)
            builder.store(builder.fadd(builder.load(s), L.masked(lanes, r)), s)
            dk = L.at(dzp, k)
            L.store(builder.fadd(L.load(dk),
                                 L.masked(lanes, builder.fmul(two, r))), dk)

        L.loop(start, stop, body)
        L.store(builder.load(t), accp)
        L.store(builder.load(s), builder.gep(accp, [L.intp(1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _step_lanes_ir(typingctx, z, u, lo, hi, zi, ui, margin, bound, acc, n_found,
                   found_a, found_c):
    if not (all(_is_vector(a) for a in (z, u, acc, found_a, found_c))
            and _is_vector(n_found, types.int64)
            and isinstance(lo, types.Integer) and isinstance(hi, types.Integer)
            and all(isinstance(a, types.Float) for a in (zi, ui, margin, bound))):
        raise TypingError("step_lanes needs C-contiguous float64 vectors z, u, "
                          "acc, found_a, found_c, an int64 vector n_found, "
                          "integer bounds and float zi, ui, margin, bound")
    sig = types.void(z, u, lo, hi, zi, ui, margin, bound, acc, n_found, found_a,
                     found_c)

    def codegen(context, builder, signature, args):
        ty = signature.args
        L = _Lanes(context, builder)
        zp, up = L.data(ty[0], args[0]), L.data(ty[1], args[1])
        accp = builder.bitcast(L.data(ty[8], args[8]), L.vptr)
        n_found_ptr = L.data(ty[9], args[9])
        bap, bcp = L.data(ty[10], args[10]), L.data(ty[11], args[11])
        n_buf = cgutils.unpack_tuple(
            builder, context.make_array(ty[10])(context, builder, args[10]).shape,
            1)[0]
        start = L.scalar(args[2], ty[2], types.intp)
        stop = L.scalar(args[3], ty[3], types.intp)
        zi_v = L.splat(L.scalar(args[4], ty[4]))
        ui_v = L.splat(L.scalar(args[5], ty[5]))
        m_v = L.splat(L.scalar(args[6], ty[6]))
        b_v = L.splat(L.scalar(args[7], ty[7]))
        sums = [cgutils.alloca_once_value(
            builder, L.load(builder.gep(accp, [L.intp(q)]))) for q in range(2)]

        def append(keep, a, c):
            # in lane order; with room for a whole vector, every lane writes
            # and the count moves past the kept ones (no branch per lane)
            m0 = builder.load(n_found_ptr)
            room = builder.icmp_signed(
                "<=", builder.add(m0, m0.type(LANES)), n_buf)
            with builder.if_else(room, likely=True) as (fast, slow):
                with fast:
                    m = m0
                    for lane in range(LANES):
                        at = ir.IntType(32)(lane)
                        builder.store(builder.extract_element(a, at),
                                      builder.gep(bap, [m]))
                        builder.store(builder.extract_element(c, at),
                                      builder.gep(bcp, [m]))
                        m = builder.add(m, builder.zext(
                            builder.extract_element(keep, at), m.type))
                    builder.store(m, n_found_ptr)
                with slow:
                    for lane in range(LANES):
                        at = ir.IntType(32)(lane)
                        with builder.if_then(builder.extract_element(keep, at)):
                            m = builder.load(n_found_ptr)
                            with builder.if_then(
                                    builder.icmp_signed("<", m, n_buf)):
                                builder.store(builder.extract_element(a, at),
                                              builder.gep(bap, [m]))
                                builder.store(builder.extract_element(c, at),
                                              builder.gep(bcp, [m]))
                            builder.store(builder.add(m, m.type(1)), n_found_ptr)

        i64v = ir.VectorType(ir.IntType(64), LANES)
        d_slot = cgutils.alloca_once(builder, L.vec)

        def body(k, lanes):
            a = builder.fsub(m_v, builder.fsub(zi_v, L.load(L.at(zp, k))))
            c = builder.fsub(ui_v, L.load(L.at(up, k)))
            pos = builder.fcmp_ordered(">", a, L.zero)
            builder.store(builder.select(pos, c, L.zero), d_slot)
            b = builder.fmul(b_v, c)
            # The exact tests cost a dozen vector operations per four pairs,
            # for the few lanes that need them: a breakpoint in (0, bound)
            # needs a and a - b of opposite signs (fl(a - b) has the sign of
            # a - b), and a = 0 needs the sign of c.  Those lanes (and a few
            # more: zeros, NaN) take the exact tests of the specification.
            split = builder.icmp_signed(
                "<", builder.xor(builder.bitcast(a, i64v),
                                 builder.bitcast(builder.fsub(a, b), i64v)),
                ir.Constant(i64v, [0] * LANES))
            rare = builder.or_(split, builder.fcmp_ordered("==", a, L.zero))
            if lanes is not None:
                rare = builder.and_(lanes, rare)
            bits = builder.bitcast(rare, ir.IntType(LANES))
            with builder.if_then(builder.icmp_unsigned("!=", bits,
                                                       bits.type(0)),
                                 likely=False):
                on = builder.or_(
                    pos,
                    builder.and_(builder.fcmp_ordered("==", a, L.zero),
                                 builder.fcmp_ordered("<", c, L.zero)))
                builder.store(builder.select(on, c, L.zero), d_slot)
                b_lo = builder.select(builder.fcmp_ordered("<", b, L.zero), b,
                                      L.zero)
                b_hi = builder.select(builder.fcmp_ordered(">", b, L.zero), b,
                                      L.zero)
                keep = builder.and_(builder.fcmp_ordered("<", b_lo, a),
                                    builder.fcmp_ordered("<", a, b_hi))
                if lanes is not None:
                    keep = builder.and_(lanes, keep)
                append(keep, a, c)
            d = builder.load(d_slot)
            for q, term in enumerate((builder.fmul(a, d), builder.fmul(d, d))):
                builder.store(builder.fadd(builder.load(sums[q]),
                                           L.masked(lanes, term)), sums[q])

        L.loop(start, stop, body)
        for q in range(2):
            L.store(builder.load(sums[q]), builder.gep(accp, [L.intp(q)]))
        return context.get_dummy_value()

    return sig, codegen


@overload(hinge_lanes, inline="always")
def _hinge_lanes_overload(z, lo, hi, zi, margin, dz, acc):
    def impl(z, lo, hi, zi, margin, dz, acc):
        _hinge_lanes_ir(z, lo, hi, zi, margin, dz, acc)

    return impl


@overload(step_lanes, inline="always")
def _step_lanes_overload(z, u, lo, hi, zi, ui, margin, bound, acc, n_found, found_a,
                         found_c):
    def impl(z, u, lo, hi, zi, ui, margin, bound, acc, n_found, found_a, found_c):
        _step_lanes_ir(z, u, lo, hi, zi, ui, margin, bound, acc, n_found, found_a,
                       found_c)

    return impl
