"""The engines: each solves one problem (a dual SVM, a ridge system, a linear SVM) and knows
nothing of paths, C grids or estimators; nothing here imports :mod:`hsskern.solvers.paths`."""
