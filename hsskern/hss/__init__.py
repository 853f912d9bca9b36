"""HSS approximation of a kernel matrix (HSS-ANN compression) and its ULV factorization."""
