"""The Examples sections of the public estimators run as doctests in the test suite.

``python -m pytest`` collects ``tests/`` only; this module runs the docstring examples of the
estimator modules (and of the other public classes that carry examples) through the doctest
module, one test per module, so the suite's command covers them without ``--doctest-modules``.
"""
import doctest
import importlib

import pytest

MODULES = [
    "hsskern.estimators.hss_svc",
    "hsskern.estimators.exact_svc",
    "hsskern.estimators.nystrom",
    "hsskern.estimators.sparse_cholesky",
    "hsskern.estimators.fpc",
    "hsskern.estimators.kernel_ridge",
    "hsskern.estimators.gaussian_process",
    "hsskern.estimators.svr",
    "hsskern.estimators.one_class",
    "hsskern.estimators.nu_svm",
    "hsskern.lowrank.nystrom",
    "hsskern.kernels.factory",
    "hsskern.options",
]
DASK_MODULES = ["hsskern.distributed._grid", "hsskern.distributed._exact"]


def _run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has no docstring examples"
    for test in tests:
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} doctest examples failed in {name}"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    _run(name)


@pytest.mark.parametrize("name", DASK_MODULES)
def test_dask_docstring_examples(name):
    pytest.importorskip("distributed")
    _run(name)
