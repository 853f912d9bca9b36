"""Sphinx configuration of the hsskern documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (warnings are errors, as in CI).
"""
import os
import sys
import time
from pathlib import Path

import hsskern

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # document (and run the gallery on) this checkout

project = "hsskern"
author = "hsskern developers"
copyright = f"{time.gmtime().tm_year}, {author}"
release = version = hsskern.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "screenshots", "examples/GALLERY_HEADER.rst", "_scripts"]
templates_path = ["_templates"]

# Markdown (the user guide moved from the README): $...$ maths, heading anchors for links
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# API reference: one page per public name, members listed by the class template
autosummary_generate = True
autosummary_imported_members = True
# scikit-learn's own estimator methods (documented there, with links into its docs):
# listed on every estimator page as a sentence, not as API entries of ours
autosummary_context = {"sklearn_methods": [
    "get_params", "set_params", "get_metadata_routing", "score", "set_output",
    "fit_transform", "get_feature_names_out", "transition"]}
autodoc_default_options = {"inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False   # the template lists methods; numpydoc would list twice
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
# CI must not depend on other sites being reachable: no inventories unless asked for
if not os.environ.get("HSSKERN_DOCS_INTERSPHINX"):
    intersphinx_mapping = {}

# The gallery runs every example at build time, on small data: the whole gallery stays short
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "show_memory": False,
    "doc_module": ("hsskern",),
    "backreferences_dir": "generated/backreferences",
}

html_theme = "pydata_sphinx_theme"
html_title = "hsskern"
html_static_path = ["_static"]
html_css_files = ["tables.css"]
# the wide tables (benchmarks, choosing an estimator) get the whole width of the page
_WIDE = ["benchmarks", "design_notes", "user_guide/estimators"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": {"**": ["page-toc"], **{page: [] for page in _WIDE}},
}
html_sidebars = {page: [] for page in _WIDE}
html_show_sourcelink = False


# -- docstrings: plain-text notation read as reStructuredText -------------------------------
# The library's docstrings write norms as |x - y| and name fitted attributes as probA_; in
# reST those are substitutions and link targets. Escape them (after numpydoc has parsed the
# sections) instead of asking every docstring to be written in reST.
import re  # noqa: E402

_LITERAL = re.compile(r"(``.+?``)")
_TRAILING = re.compile(r"(?<=\w)_(?=[\s,.;:)\]}/'\"]|$)")
_AFTER_LITERAL_OK = set(" \t-.,:;!?\\/'\")]}>")


def _escape_text(text):
    parts = _LITERAL.split(text)
    for i, part in enumerate(parts):
        if i % 2:  # an inline literal: keep, and end it where reST allows
            nxt = parts[i + 1][:1] if i + 1 < len(parts) else ""
            if nxt and nxt not in _AFTER_LITERAL_OK:
                parts[i] = part + "\\ "
            continue
        part = part.replace("|", "\\|")
        parts[i] = _TRAILING.sub(r"\\_", part)
    return "".join(parts)


def _escape_docstring(app, what, name, obj, options, lines):
    literal_indent = None
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if stripped.startswith((">>>", "...", ".. ")) or stripped.startswith(":"):
            if stripped.rstrip().endswith("::"):
                literal_indent = indent
            continue
        lines[k] = _escape_text(line)
        if stripped.rstrip().endswith("::"):
            literal_indent = indent


def setup(app):
    app.connect("autodoc-process-docstring", _escape_docstring, priority=600)
