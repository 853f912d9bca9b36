"""The documentation's API reference lists every public name, and every public estimator
documents an example.

The reference is read from its reStructuredText sources (no Sphinx build here): each
``autosummary`` entry is qualified by the ``currentmodule`` above it.
"""
import importlib
import inspect
import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import hsskern

DOCS = Path(__file__).resolve().parents[1] / "docs"


def documented_names():
    """Fully qualified names of the autosummary entries of docs/**/*.rst."""
    names = set()
    sources = [p for p in DOCS.rglob("*.rst")
               if not {"_build", "_templates", "generated", "auto_examples"} & set(p.parts)]
    for path in sources:
        module, in_summary = None, False
        for line in path.read_text().splitlines():
            directive = re.match(r"\s*\.\. (currentmodule|module|autosummary)::\s*(\S*)", line)
            if directive:
                kind, arg = directive.groups()
                in_summary = kind == "autosummary"
                if kind != "autosummary":
                    module = arg
                continue
            if not in_summary:
                continue
            entry = line.strip()
            if line and not line[0].isspace():
                in_summary = False
            elif entry and not entry.startswith(":"):
                entry = entry.lstrip("~")
                names.add(entry if module is None else f"{module}.{entry}")
    return names


def public_names():
    names = {f"hsskern.{n}" for n in hsskern.__all__}
    distributed = pytest.importorskip("hsskern.distributed")
    return names | {f"hsskern.distributed.{n}" for n in distributed.__all__}


def test_the_reference_is_found():
    # the parser must see the reference at all, else the next test would pass on nothing
    assert "hsskern.HSSSVC" in documented_names()


def test_every_public_name_is_in_the_api_reference():
    missing = sorted(public_names() - documented_names())
    assert not missing, f"add these to docs/api.rst: {missing}"


def test_every_reference_entry_exists():
    stale = []
    for name in sorted(documented_names()):
        module, _, attr = name.rpartition(".")
        try:
            getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            stale.append(name)
    assert not stale, f"docs/api.rst lists names that do not exist: {stale}"


def public_estimators():
    distributed = pytest.importorskip("hsskern.distributed")
    objects = [getattr(hsskern, n) for n in hsskern.__all__]
    objects += [getattr(distributed, n) for n in distributed.__all__]
    return [o for o in objects if inspect.isclass(o) and issubclass(o, BaseEstimator)]


def test_every_public_estimator_has_an_example():
    estimators = public_estimators()
    assert len(estimators) >= 14
    lacking = [e.__name__ for e in estimators
               if not re.search(r"\n\s*Examples\n\s*-{8}\n(.*\n)*?\s*>>> ", e.__doc__ or "")]
    assert not lacking, f"add a numpydoc Examples section to {lacking}"
