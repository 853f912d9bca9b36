# The kernel codes, the exponential and the integer power both compiled evaluators (_eval,
# _sparse_eval) use: one definition, so the dense and the sparse-rows routes compute the same
# entries the same way.
from libc.math cimport exp, fmax, pow, tanh

cdef enum:
    GAUSSIAN = 0
    LAPLACIAN = 1
    POLYNOMIAL = 2
    COMPACT = 3
    SIGMOID = 4

cdef enum:
    POW_CHUNK = 64


cdef inline void exp_scaled(double* out, Py_ssize_t m, double s) noexcept nogil:
    """out[j] = exp(s * out[j]) for s <= 0 and out[j] >= 0, or 0 where s * out[j] <= -708
    (exp(-708) = 3.3e-308, next to the smallest normal double).

    The vectorized exp (libmvec) leaves its fast path for a whole vector when one lane would
    underflow, several times slower an element; a narrow kernel (h small against the range
    of the features) underflows in most entries. A row that can underflow takes the clamped
    loop, which keeps every lane on the fast path; the others the plain one (the clamp costs
    ~7 %).
    """
    cdef Py_ssize_t j
    cdef double mx = 0.0, t
    for j in range(m):
        mx = fmax(mx, out[j])
    if s * mx > -708.0:
        for j in range(m):
            out[j] = exp(s * out[j])
    else:
        for j in range(m):
            t = s * out[j]
            out[j] = exp(fmax(t, -708.0)) if t > -708.0 else 0.0


cdef inline void ipow_inplace(double* out, Py_ssize_t m, double c, int e) noexcept nogil:
    """out[j] = (c + out[j])^e for an integer e >= 1, by exponentiation by squaring.

    Generic pow() costs ~20-40 ns an element and does not vectorize; squaring takes
    floor(log2 e) + popcount(e) - 1 multiplies that do. The bit loop is outside the element loop,
    over chunks held on the stack, so every inner loop is a plain vectorizable multiply. Results
    differ from pow() by a few ulps (one rounding per multiply instead of one overall).
    """
    cdef double base[POW_CHUNK]
    cdef Py_ssize_t j0, j, w
    cdef int bits
    j0 = 0
    while j0 < m:
        w = m - j0
        if w > POW_CHUNK:
            w = POW_CHUNK
        for j in range(w):
            base[j] = c + out[j0 + j]
        bits = e
        # lowest set bit: start the product from the right power of the base
        while not (bits & 1):
            for j in range(w):
                base[j] = base[j] * base[j]
            bits >>= 1
        for j in range(w):
            out[j0 + j] = base[j]
        bits >>= 1
        while bits:
            for j in range(w):
                base[j] = base[j] * base[j]
            if bits & 1:
                for j in range(w):
                    out[j0 + j] *= base[j]
            bits >>= 1
        j0 += w


cdef inline void of_dot(int kind, const double* p, double* out, Py_ssize_t m) noexcept nogil:
    """out[j] = k at the dot product out[j], for the dot-product kernels (p: coef0, degree,
    gamma): (coef0 + gamma t)^degree, or tanh(coef0 + gamma t) for the sigmoid."""
    cdef Py_ssize_t j
    cdef double q
    if p[2] != 1.0:
        for j in range(m):
            out[j] = p[2] * out[j]
    if kind == SIGMOID:
        for j in range(m):
            out[j] = tanh(p[0] + out[j])
    elif p[1] == 1.0:
        for j in range(m):
            out[j] = p[0] + out[j]
    elif p[1] == 2.0:
        for j in range(m):
            q = p[0] + out[j]
            out[j] = q * q
    elif p[1] >= 3.0 and p[1] <= 64.0 and p[1] == <double> (<int> p[1]):
        ipow_inplace(out, m, p[0], <int> p[1])
    else:
        for j in range(m):
            out[j] = pow(p[0] + out[j], p[1])


cdef inline void copy_upper_down(double* o, Py_ssize_t ld, Py_ssize_t c0, Py_ssize_t c1,
                                 Py_ssize_t j0, Py_ssize_t j1) noexcept nogil:
    # a diagonal block's rows [c0, c1), computed at columns [j0, j1) from the diagonal on,
    # copied onto the lower triangle (rows j > i at column i): the evaluators' chunks do it
    # while the rows are in cache, and no other chunk writes those entries
    cdef Py_ssize_t i, j, i1
    for j in range(j0, j1):
        i1 = j if j < c1 else c1
        for i in range(c0, i1):
            o[j * ld + i] = o[i * ld + j]
