import os
import subprocess
import sys
from pathlib import Path


def test_import_leaves_the_process_environment_alone():
    # a library must not change what the user's other libraries (OpenMP runtimes, BLAS) read
    # from the environment: every variable is the same after ``import hsskern`` as after
    # importing its dependencies (scikit-learn sets KMP_* variables of its own)
    code = ("import os, numpy, scipy.sparse.linalg, sklearn.svm, threadpoolctl; "
            "before = dict(os.environ); import hsskern, hsskern.hss; "
            "changed = sorted(k for k in set(before) | set(os.environ) "
            "if before.get(k) != os.environ.get(k)); print(changed)")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_version_has_one_source_pyprojects():
    import tomllib

    import hsskern
    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                             .read_text())["project"]["version"]
    assert hsskern.__version__ == declared
    out = subprocess.run([sys.executable, "-m", "hsskern", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == f"hsskern {declared}"
