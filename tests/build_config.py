"""What setup.py builds, read from its source (a test must not run setup.py): the modules it
compiles again for each micro-architecture level (``VARIANTS``), as dotted names, and those
levels. The dispatch and wheel tests take their lists from here, so a module added to the
build is checked without a second list to update."""
import ast
from pathlib import Path

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def _literal(name):
    for node in ast.parse(SETUP.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"setup.py assigns no {name}")


DISPATCHED = tuple(_literal("VARIANTS"))
LEVELS = tuple(_literal("LEVELS"))
