# A sorted buffer of the best k entries by the key pair (key1, key2), shared by the compiled
# nearest-first selections of HSS compression (hss._compress_ops: nearest_per_group and
# nearest_to_box).


cdef inline Py_ssize_t best_k_insert(double* k1, double* k2, Py_ssize_t* val, Py_ssize_t cnt,
                                     Py_ssize_t k, double key1, double key2,
                                     Py_ssize_t v) noexcept nogil:
    """Insert (key1, key2, v) into the buffer of ``cnt`` entries (at most ``k``, sorted by
    key1, then key2); returns the new count. A later entry never displaces an equal earlier
    one, so ties keep input order."""
    cdef Py_ssize_t j
    if cnt == k and (key1 > k1[k - 1] or (key1 == k1[k - 1] and key2 >= k2[k - 1])):
        return cnt
    j = cnt if cnt < k else k - 1
    while j > 0 and (key1 < k1[j - 1] or (key1 == k1[j - 1] and key2 < k2[j - 1])):
        k1[j] = k1[j - 1]
        k2[j] = k2[j - 1]
        val[j] = val[j - 1]
        j -= 1
    k1[j] = key1
    k2[j] = key2
    val[j] = v
    return cnt + 1 if cnt < k else cnt
