"""Byte-level LETOR / SVMlight parser (``label qid:N i:v ... #comment``).

One pass over the raw bytes of a file, linear in its size, writing straight
into a dense row-major matrix.  The kernel never raises: it stops at the first
invalid token and returns an error code with the line number and the byte
offsets of the line and of the token, from which ``refimpl.data`` builds a
message naming the file and the 1-based line.

Numbers are read to the same double as Python's ``float()`` (correctly
rounded).  The kernel computes the value itself when Clinger's fast path is
exact: a decimal mantissa ``m <= 2**53`` scaled by ``10**e`` with
``|e| <= 22``, where both factors are exact doubles and one IEEE
multiplication or division rounds correctly (Clinger 1990, "How to read
floating point numbers accurately").  Other well-formed numbers (more than
18 significant digits, larger exponents) are recorded as "slow" tokens with
their position, and the caller parses them with ``float()`` afterwards.
"""

import numpy as np
from numba import njit

# Error codes returned in err[0].
OK = 0
E_LABEL = 1  # label is not an integer literal: the caller says why
E_LABEL_RANGE = 2  # integer label outside [label_lo, label_hi]
E_NO_QID = 3  # second token does not start with "qid"
E_QID = 4  # malformed query id
E_TOKEN = 5  # token without ':'
E_INDEX = 6  # feature index is not a plain decimal integer
E_INDEX_ZERO = 7  # feature index 0
E_INDEX_BIG = 8  # feature index above the sanity bound
E_INDEX_ORDER = 9  # feature indices not strictly increasing
E_INDEX_NFEAT = 10  # feature index above the given n_features
E_VALUE = 11  # feature value is not a finite decimal number
E_TOO_WIDE = 12  # the dense matrix would exceed the memory bound

# err layout: code, line number (1-based), line start, token start, token end,
# extra (an index, a bound).
ERR_SIZE = 6

# Slow-token layout: token start, token end, row, column, line, line start.
SLOW_COLS = 6

POW10 = np.array([10.0**k for k in range(23)])
_MAX_EXACT = 2**53
# More significant digits than this cannot be accumulated in an int64.
_MAX_DIGITS = 18
_INT64_MAX = np.uint64(2**63 - 1)


@njit(inline="always")
def _is_space(c):
    # bytes.split() whitespace except b"\n", which ends a line.
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(inline="always")
def _ends_token(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12 or c == 10 or c == 35


# The helpers below are inlined into the kernels (numba IR inlining): a
# plain call inside the per-token loop costs up to 3x.


@njit(inline="always")
def _skip_space(buf, pos, n):
    while pos < n and _is_space(buf[pos]):
        pos += 1
    return pos


@njit(inline="always")
def _token_end(buf, pos, n):
    while pos < n and not _ends_token(buf[pos]):
        pos += 1
    return pos


@njit(inline="always")
def _line_end(buf, pos, n):
    """Position of the line's ``\n`` (or ``n``)."""
    while pos < n and buf[pos] != 10:
        pos += 1
    return pos


@njit(inline="always")
def _sign(buf, i, n):
    """``(negative, i)`` past an optional ``+`` or ``-`` at ``buf[i]``."""
    if i < n and (buf[i] == 45 or buf[i] == 43):
        return buf[i] == 45, i + 1
    return False, i


@njit(inline="always")
def _digits(buf, i, n, m):
    """``(m, i)``: the decimal digits from ``buf[i]`` on appended to ``m``.

    Unchecked: past 18 digits ``m`` wraps around, so callers count the
    digits (the distance ``i`` moved) before they trust ``m``.
    """
    while i < n:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            break
        m = m * 10 + d
        i += 1
    return m, i


@njit(inline="always")
def _decimal(buf, i, n):
    """``digits[.digits]`` from ``buf[i]``: ``(m, nint, nfrac, i)``.

    ``m`` holds all ``nint + nfrac`` digits as one integer (exact while
    there are at most 18 of them) and ``i`` is the first position after.
    """
    start = i
    m, i = _digits(buf, i, n, 0)
    nint = i - start
    nfrac = 0
    if i < n and buf[i] == 46:
        fs = i + 1
        m, i = _digits(buf, fs, n, m)
        nfrac = i - fs
    return m, nint, nfrac, i


@njit(cache=True)
def _parse_float_careful(buf, s, n, pow10):
    """:func:`parse_float` for any length of mantissa and exponent.

    The same syntax and return values; the digits are counted as they are
    read, so that none can overflow.
    """
    neg, i = _sign(buf, s, n)
    m = 0
    nsig = 0
    ndig = 0
    exp10 = 0
    inexact = False
    while i < n:
        c = buf[i]
        if c < 48 or c > 57:
            break
        d = c - 48
        ndig += 1
        if m == 0 and d == 0:
            pass
        elif nsig < _MAX_DIGITS:
            m = m * 10 + d
            nsig += 1
        else:
            exp10 += 1
            inexact = True
        i += 1
    if i < n and buf[i] == 46:
        i += 1
        while i < n:
            c = buf[i]
            if c < 48 or c > 57:
                break
            d = c - 48
            ndig += 1
            if m == 0 and d == 0:
                exp10 -= 1
            elif nsig < _MAX_DIGITS:
                m = m * 10 + d
                nsig += 1
                exp10 -= 1
            else:
                inexact = True
            i += 1
    if ndig == 0:
        return 2, 0.0, i
    if i < n and (buf[i] == 101 or buf[i] == 69):
        i += 1
        eneg = False
        if i < n and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        nexp = 0
        ex = 0
        while i < n:
            c = buf[i]
            if c < 48 or c > 57:
                break
            if ex < 100000:
                ex = ex * 10 + (c - 48)
            nexp += 1
            i += 1
        if nexp == 0:
            return 2, 0.0, i
        exp10 += -ex if eneg else ex
    if i < n and not _ends_token(buf[i]):
        return 2, 0.0, i
    if m == 0:
        return 0, -0.0 if neg else 0.0, i
    if inexact or m > _MAX_EXACT:
        return 1, 0.0, i
    if 0 <= exp10 <= 22:
        v = float(m) * pow10[exp10]
    elif -22 <= exp10 < 0:
        v = float(m) / pow10[-exp10]
    else:
        return 1, 0.0, i
    return 0, -v if neg else v, i


@njit(cache=True)
def parse_float(buf, s, n, pow10):
    """Read the number starting at ``buf[s]`` and ending at the token's end.

    The accepted syntax is ``[+-]digits[.digits][(e|E)[+-]digits]`` (or
    ``.digits``), followed by the end of the token (whitespace, ``#`` or the
    end of ``buf[:n]``).  Returns ``(status, value, end)``: status 0, ``value``
    is the correctly rounded double; status 1, well-formed but outside the
    fast path (the caller uses ``float()``); status 2, not a decimal number
    (including ``nan``, ``inf`` and Python's ``1_0``).  ``end`` is where the
    token ends (status 0 and 1) or where reading stopped (status 2).

    The common case, at most 18 digits in all and no exponent, is read by a
    branch-light loop; anything else by ``_parse_float_careful``.
    """
    neg, i = _sign(buf, s, n)
    m, nint, nfrac, i = _decimal(buf, i, n)
    if (
        nint + nfrac > _MAX_DIGITS
        or nint + nfrac == 0
        or (i < n and not _ends_token(buf[i]))
        or m > _MAX_EXACT
        or nfrac > 22
    ):
        return _parse_float_careful(buf, s, n, pow10)
    if nfrac == 0:
        v = float(m)
    else:
        v = float(m) / pow10[nfrac]
    return 0, -v if neg else v, i


@njit(cache=True)
def _parse_label(buf, s, e, lo, hi):
    """``(status, label)`` of an integer literal ``[+-]digits[.0*]``.

    status 0: in ``[lo, hi]``; 1: not such a literal; 2: out of range.
    Digits are checked before any arithmetic can overflow.
    """
    neg, i = _sign(buf, s, e)
    v = 0
    nsig = 0
    ndig = 0
    while i < e and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        ndig += 1
        if v != 0 or d != 0:
            nsig += 1
            if nsig <= _MAX_DIGITS:
                v = v * 10 + d
        i += 1
    if ndig == 0:
        return 1, 0
    if i < e and buf[i] == 46:
        i += 1
        while i < e and buf[i] == 48:
            i += 1
    if i != e:
        return 1, 0
    if nsig > _MAX_DIGITS:
        return 2, 0
    if neg:
        v = -v
    if v < lo or v > hi:
        return 2, v
    return 0, v


@njit(cache=True)
def _parse_qid(buf, s, e):
    """``(ok, qid)`` of ``-?digits`` within int64."""
    i = s
    neg = False
    if i < e and buf[i] == 45:
        neg = True
        i += 1
    if i == e:
        return False, 0
    acc = np.uint64(0)
    ten = np.uint64(10)
    limit = _INT64_MAX + np.uint64(1) if neg else _INT64_MAX
    while i < e:
        c = buf[i]
        if c < 48 or c > 57:
            return False, 0
        d = np.uint64(c - 48)
        if acc > (limit - d) // ten:
            return False, 0
        acc = acc * ten + d
        i += 1
    if neg:
        if acc == _INT64_MAX + np.uint64(1):
            return True, -(2**63)
        return True, -np.int64(acc)
    return True, np.int64(acc)


@njit(cache=True)
def _check_index(buf, ts, n, prev, max_index):
    """``(code, pos, index)`` for the index of the token at ``ts``.

    ``pos`` is the colon's position (``OK``), or where the token ends
    (``E_TOKEN``: no colon) or the index stops.  Leading zeros do not count
    towards the digits that could overflow.
    """
    pos = ts
    idx = 0
    nsig = 0
    plain = True
    while pos < n:
        c = buf[pos]
        if 48 <= c <= 57:
            if idx != 0 or c != 48:
                nsig += 1
                if nsig <= _MAX_DIGITS:
                    idx = idx * 10 + (c - 48)
        elif c == 58 or _ends_token(c):
            break
        else:
            plain = False
        pos += 1
    if pos >= n or buf[pos] != 58:
        return E_TOKEN, pos, idx
    if not plain or pos == ts:
        return E_INDEX, pos, idx
    if idx == 0:
        return E_INDEX_ZERO, pos, idx
    if nsig > _MAX_DIGITS or idx > max_index:
        return E_INDEX_BIG, pos, idx
    if idx <= prev:
        return E_INDEX_ORDER, pos, idx
    return OK, pos, idx


@njit(cache=True)
def _set_err(err, code, line_no, line_start, ts, te, extra):
    err[0] = code
    err[1] = line_no
    err[2] = line_start
    err[3] = ts
    err[4] = te
    err[5] = extra


NEED_ROOM = -1  # _parse_features: tidx/tval or slow is full


@njit(cache=True)
def _parse_features(
    buf, pos, n, max_index, fixed, tidx, tval, slow, n_slow, row, line_no,
    line_start, pow10, err,
):
    """The ``index:value`` tokens of one line, from ``pos`` to its data end.

    Kept apart from ``parse_svmlight`` so that no array is re-bound inside
    this loop (a re-bound array costs numba 3x here); it returns
    ``NEED_ROOM`` when ``tidx``/``tval`` or ``slow`` is full, and the caller
    grows them and reads the line again.

    Returns ``(code, pos, nt, prev, n_slow, last_ts, last_te)``; on an error
    ``err`` is filled.
    """
    nt = 0
    prev = 0
    last_ts = pos
    last_te = pos
    while True:
        while pos < n and _is_space(buf[pos]):
            pos += 1
        if pos >= n or buf[pos] == 10 or buf[pos] == 35:
            break
        ts = pos
        idx = 0
        while pos < n:
            d = np.int64(buf[pos]) - 48
            if d < 0 or d > 9:
                break
            idx = idx * 10 + d
            pos += 1
        nd = pos - ts
        if (
            nd == 0
            or nd > _MAX_DIGITS
            or pos >= n
            or buf[pos] != 58
            or idx <= prev
            or idx > max_index
        ):
            # the uncommon cases, sorted out in the order of the checks
            code, pos, idx = _check_index(buf, ts, n, prev, max_index)
            if code != OK:
                code = E_INDEX_NFEAT if code == E_INDEX_BIG and fixed else code
                te = pos if code == E_TOKEN else _token_end(buf, pos, n)
                _set_err(err, code, line_no, line_start, ts, te, max_index)
                return code, pos, nt, prev, n_slow, last_ts, last_te
        colon = pos
        # Clinger's fast path, written out here: at most 15 digits, so
        # m < 2**53, and one division by 10**nf.  The digit loops repeat
        # _decimal's on purpose: as a call this costs 3x, and even inlined
        # (numba's inline="always") 1.3x to 2.5x of the whole parse.
        i = colon + 1
        neg = i < n and buf[i] == 45
        if neg:
            i += 1
        m = 0
        ds = i
        while i < n:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            m = m * 10 + d
            i += 1
        nf = 0
        if i < n and buf[i] == 46:
            i += 1
            fs = i
            while i < n:
                d = np.int64(buf[i]) - 48
                if d < 0 or d > 9:
                    break
                m = m * 10 + d
                i += 1
            nf = i - fs
            nd = i - ds - 1
        else:
            nd = i - ds
        if 0 < nd <= 15 and (i >= n or _ends_token(buf[i])):
            status = 0
            v = float(m) / pow10[nf]
            if neg:
                v = -v
            pos = i
        else:
            status, v, pos = parse_float(buf, colon + 1, n, pow10)
        if status == 2:
            te = _token_end(buf, pos, n)
            _set_err(err, E_VALUE, line_no, line_start, ts, te, idx)
            return E_VALUE, pos, nt, prev, n_slow, last_ts, last_te
        if nt == tidx.size:
            return NEED_ROOM, pos, nt, prev, n_slow, last_ts, last_te
        if status == 1:
            if n_slow == slow.shape[0]:
                return NEED_ROOM, pos, nt, prev, n_slow, last_ts, last_te
            slow[n_slow, 0] = colon + 1
            slow[n_slow, 1] = pos
            slow[n_slow, 2] = row
            slow[n_slow, 3] = idx - 1
            slow[n_slow, 4] = line_no
            slow[n_slow, 5] = line_start
            n_slow += 1
            v = 0.0
        tidx[nt] = idx
        tval[nt] = v
        nt += 1
        prev = idx
        last_ts = ts
        last_te = pos
    return OK, pos, nt, prev, n_slow, last_ts, last_te


@njit(cache=True)
def _write_row(X, base, cap, tidx, tval, nt):
    """Row ``X[base:base + cap]``: the line's values, zeros elsewhere."""
    c = 0
    for t in range(nt):
        j = tidx[t] - 1
        while c < j:
            X[base + c] = 0.0
            c += 1
        X[base + c] = tval[t]
        c += 1
    while c < cap:
        X[base + c] = 0.0
        c += 1


@njit(cache=True)
def _widen(X, n_rows, cap, new_cap, rows_cap):
    """A copy of the first ``n_rows`` rows with ``new_cap`` columns."""
    X2 = np.empty(rows_cap * new_cap, np.float64)
    for r in range(n_rows):
        src = r * cap
        dst = r * new_cap
        for c in range(cap):
            X2[dst + c] = X[src + c]
        for c in range(cap, new_cap):
            X2[dst + c] = 0.0
    return X2


@njit(cache=True)
def _compact(X, n_rows, cap, width):
    """Rows of ``cap`` entries to rows of ``width <= cap``, in place: rows only
    move to lower addresses."""
    for r in range(n_rows):
        src = r * cap
        dst = r * width
        for c in range(width):
            X[dst + c] = X[src + c]


@njit(cache=True)
def empty_float64(n):
    """``np.empty(n)`` from numba's allocator.

    NumPy marks large arrays for transparent huge pages; on a busy machine
    the kernel then compacts memory at the first touch, which cost 1.5-5 s
    for a 2.5 GB X here (0.9 s with ordinary pages, the same per byte at
    every size).
    """
    return np.empty(n, np.float64)


@njit(inline="always")
def _index_before(buf, colon):
    """The decimal digits just before ``buf[colon]`` (0 if none; at most 15)."""
    idx = 0
    k = colon - 1
    scale = 1
    while k >= 0 and 48 <= buf[k] <= 57 and scale < 10**15:
        idx += (buf[k] - 48) * scale
        scale *= 10
        k -= 1
    return idx


@njit(cache=True)
def first_line_width(buf):
    """The index before the last ``:`` of the first data line (0 if none).

    A capacity hint only: LETOR lines list every feature, so the first line
    gives the width of X, which is then allocated once instead of grown.
    """
    n = buf.size
    pos = 0
    while pos < n:
        pos = _skip_space(buf, pos, n)
        if pos < n and buf[pos] != 10 and buf[pos] != 35:
            break
        pos = _line_end(buf, pos, n) + 1
    last_colon = -1
    while pos < n and buf[pos] != 10 and buf[pos] != 35:
        if buf[pos] == 58:
            last_colon = pos
        pos += 1
    return _index_before(buf, last_colon)


@njit(cache=True)
def parse_svmlight(
    buf, rows_cap, n_features, max_index, label_lo, label_hi, want_comments,
    max_elements, pow10, X0, cap0,
):
    """Parse a LETOR / SVMlight file held in ``buf`` (uint8).

    Parameters
    ----------
    buf : uint8 array
        The file's bytes (decompressed).
    rows_cap : int
        An upper bound on the number of data lines (newlines + 1).
    n_features : int
        Width of X, or -1 for "the largest index in the file".
    max_index : int
        Largest feature index accepted (``n_features`` when that is given).
    label_lo, label_hi : int
        Accepted label range.
    want_comments : bool
        Record each row's comment as byte offsets.
    max_elements : int
        Largest dense matrix (rows_cap x width) the parser may allocate.
    pow10 : float64 array
        ``10.0**k`` for k = 0..22.
    X0 : float64 array
        The first buffer of X, ``rows_cap * cap0`` entries (``cap0`` must be
        ``n_features`` when that is given).
    cap0 : int
        Its row width; grown inside when a line needs more.

    Returns
    -------
    err : int64 array (ERR_SIZE,)
    X : float64 array, flat row-major, first ``n_rows * stride`` entries used,
        where ``stride`` is ``n_features`` if given, else ``width``
    n_rows : int
    width : int
        The largest feature index of the file (0 if no line has features).
    labels, qids : int64 arrays, first ``n_rows`` used
    comments : int64 array (rows, 2) of [start, end) byte offsets, or empty
    slow : int64 array (n_slow, SLOW_COLS), the tokens left to ``float()``
    """
    n = buf.size
    err = np.zeros(ERR_SIZE, np.int64)
    fixed = n_features >= 0
    cap = cap0
    X = X0
    labels = np.empty(rows_cap, np.int64)
    qids = np.empty(rows_cap, np.int64)
    comments = np.empty((rows_cap if want_comments else 0, 2), np.int64)
    tidx = np.empty(256, np.int64)
    tval = np.empty(256, np.float64)
    slow = np.empty((16, SLOW_COLS), np.int64)
    n_slow = 0
    width = 0
    row = 0
    line_no = 0
    pos = 0
    while pos < n:
        line_no += 1
        line_start = pos
        pos = _skip_space(buf, pos, n)
        if pos >= n or buf[pos] == 10 or buf[pos] == 35:
            pos = _line_end(buf, pos, n) + 1
            continue
        # label
        ts = pos
        pos = _token_end(buf, ts, n)
        status, label = _parse_label(buf, ts, pos, label_lo, label_hi)
        if status != 0:
            code = E_LABEL if status == 1 else E_LABEL_RANGE
            _set_err(err, code, line_no, line_start, ts, pos, label)
            return err, X, row, width, labels, qids, comments, slow[:n_slow]
        # qid
        ts = _skip_space(buf, pos, n)
        pos = _token_end(buf, ts, n)
        te = pos
        if te - ts < 3 or buf[ts] != 113 or buf[ts + 1] != 105 or buf[ts + 2] != 100:
            _set_err(err, E_NO_QID, line_no, line_start, ts, te, 0)
            return err, X, row, width, labels, qids, comments, slow[:n_slow]
        ok = te - ts > 4 and buf[ts + 3] == 58
        q = 0
        if ok:
            ok, q = _parse_qid(buf, ts + 4, te)
        if not ok:
            _set_err(err, E_QID, line_no, line_start, ts, te, 0)
            return err, X, row, width, labels, qids, comments, slow[:n_slow]
        # features
        start = pos
        slow_start = n_slow
        while True:
            code, pos, nt, prev, n_slow, last_ts, last_te = _parse_features(
                buf, start, n, max_index, fixed, tidx, tval, slow, slow_start,
                row, line_no, line_start, pow10, err,
            )
            if code != NEED_ROOM:
                break
            if nt == tidx.size:
                bi = np.empty(2 * nt, np.int64)
                bv = np.empty(2 * nt, np.float64)
                bi[:nt] = tidx[:nt]
                bv[:nt] = tval[:nt]
                tidx = bi
                tval = bv
            else:
                bigger = np.empty((2 * slow.shape[0], SLOW_COLS), np.int64)
                bigger[:n_slow] = slow[:n_slow]
                slow = bigger
        if code != OK:
            return err, X, row, width, labels, qids, comments, slow[:n_slow]
        # comment and end of line
        cs = pos
        if pos < n and buf[pos] == 35:
            cs = pos + 1
        pos = _line_end(buf, pos, n)
        if want_comments:
            comments[row, 0] = cs
            comments[row, 1] = pos
        pos += 1
        # widen X when this row needs more columns (never with n_features)
        if prev > cap:
            new_cap = prev if row == 0 else max(prev, cap + cap // 2)
            if rows_cap * new_cap > max_elements:
                new_cap = prev
                if rows_cap * new_cap > max_elements:
                    _set_err(err, E_TOO_WIDE, line_no, line_start, last_ts,
                             last_te, prev)
                    return err, X, row, width, labels, qids, comments, slow[:n_slow]
            X = _widen(X, row, cap, new_cap, rows_cap)
            cap = new_cap
        _write_row(X, row * cap, cap, tidx, tval, nt)
        labels[row] = label
        qids[row] = q
        width = max(width, prev)
        row += 1
    if not fixed and width < cap:
        _compact(X, row, cap, width)
    return err, X, row, width, labels, qids, comments, slow[:n_slow]


@njit(cache=True)
def line_widths(buf, cap, rows):
    """``(newlines, data_lines, first, widest, cap, peak_cols)`` over ``buf``.

    A data line's width is the index before its last ``:`` ahead of any
    ``#`` (as :func:`first_line_width`; the largest index of a line whose
    indices increase, the parser's rule); ``first`` is that of the first
    data line (-1 if none), ``widest`` the largest.  ``cap`` and ``rows``
    carry the parser's row width and data lines over the chunks before
    (``cap = -1`` at the start): the widths grow as in
    :func:`parse_svmlight`, and ``peak_cols`` is the most columns its
    buffers hold at once (old and new while it widens).  The loader's
    memory model reads a file in chunks of whole lines through this.
    """
    n = buf.size
    pos = 0
    newlines = 0
    data_lines = 0
    first = -1
    widest = 0
    peak_cols = max(cap, 0)
    while pos < n:
        pos = _skip_space(buf, pos, n)
        data = pos < n and buf[pos] != 10 and buf[pos] != 35
        last_colon = -1
        while pos < n and buf[pos] != 10 and buf[pos] != 35:
            if buf[pos] == 58:
                last_colon = pos
            pos += 1
        pos = _line_end(buf, pos, n)
        if pos < n:
            newlines += 1
        pos += 1
        if data:
            idx = _index_before(buf, last_colon)
            if first < 0:
                first = idx
            if idx > widest:
                widest = idx
            if cap < 0:
                cap = idx
            elif idx > cap:
                new_cap = idx if rows + data_lines == 0 else max(idx, cap + cap // 2)
                peak_cols = max(peak_cols, cap + new_cap)
                cap = new_cap
            peak_cols = max(peak_cols, cap)
            data_lines += 1
    return newlines, data_lines, first, widest, cap, peak_cols
