"""The package's import rules: torch is only a test oracle, and kernels/ stands alone."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # the edit-test tier (pyproject.toml)

# a fresh process on the CPU: the default device there needs no test-registered storage
CPU_ENV = {k: v for k, v in os.environ.items() if k != "LT_DEVICE"}

ROOT = Path(__file__).resolve().parent.parent


def imports(path: Path) -> list[tuple[str, int]]:
    """(module, relative level) for every import in a file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):  # `from . import x` names x as the module
            out += [(node.module, node.level)] if node.module else [(a.name, node.level) for a in node.names]
    return out


def test_import_lazytensor_does_not_import_torch():
    code = "import sys, lazytensor as lt; (lt.ones(3) + 1).realize(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/", env=CPU_ENV)


def test_no_library_file_imports_torch():
    for path in [*ROOT.joinpath("lazytensor").rglob("*.py"), *ROOT.joinpath("kernels").rglob("*.py")]:
        for module, _ in imports(path):
            assert module.split(".")[0] != "torch", f"{path} imports torch"


def test_kernels_import_nothing_from_the_rest_of_lazytensor():
    kernels = ROOT / "kernels"
    for path in kernels.rglob("*.py"):
        depth = len(path.relative_to(kernels).parts) - 1  # 0 for kernels/x.py, 1 for kernels/llvm/x.py
        for module, level in imports(path):
            assert module.split(".")[0] != "lazytensor", f"{path} imports {module}"
            assert level <= depth + 1 or level == 0, f"{path} reaches outside kernels/ with a relative import"


def test_kernels_is_installed_as_a_subpackage():
    import lazytensor.kernels
    assert Path(lazytensor.kernels.__file__).resolve().parent == ROOT / "kernels"
    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('kernels') is not None)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/", env=CPU_ENV)


LOWER_STAGES = ("graph", "views", "lowering", "schedule", "realize")
FRONTEND = {"tensor", "creation", "random", "movement", "reduce", "contraction", "linalg", "nn", "autograd",
            "optim", "jit"}


def test_the_lower_stages_import_nothing_from_the_frontend():
    """Data flows one way (Tensor -> graph -> schedule -> kernel IR): the stages below the Tensor API import
    nothing from it, not even inside a function."""
    for stage in LOWER_STAGES:
        path = ROOT / "lazytensor" / f"{stage}.py"
        for module, level in imports(path):
            if level == 1:  # from .x import y
                assert module.split(".")[0] not in FRONTEND, f"lazytensor/{stage}.py imports .{module}"
            else:
                parts = module.split(".")
                assert not (parts[0] == "lazytensor" and len(parts) > 1 and parts[1] in FRONTEND), \
                    f"lazytensor/{stage}.py imports {module}"


def test_every_package_is_installed():
    """pyproject's package list names every folder of the library with an `__init__.py` (a regular install
    leaves out one it does not name, and `import lazytensor` then fails)."""
    import tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])

    def packages(folder: Path, name: str) -> set[str]:
        return {".".join((name, *p.parent.relative_to(folder).parts)) for p in folder.rglob("__init__.py")
                if "kernels" not in p.relative_to(folder).parts[:-1] or folder.name == "kernels"}

    assert packages(ROOT / "lazytensor", "lazytensor") | packages(ROOT / "kernels", "lazytensor.kernels") == listed
