"""Every ``python -m bench ...`` command the README and the documentation quote is one the
harness accepts: a registered suite, options its parser knows, registered peers and data sets
that exist. Only the argument parsing runs (no benchmark)."""
import importlib
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from bench.run import SUITES, _parser  # noqa: E402

_SOURCES = [ROOT / "README.md", ROOT / "bench" / "README.md",
            *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "docs").rglob("*.rst"))]
_SKIP = {"_build", "generated", "auto_examples"}
_COMMAND = re.compile(r"python -m bench (?=\S)")


def quoted_commands(text):
    """The ``python -m bench`` commands of a markdown text: inline code spans (up to the
    closing backtick) and code-block lines (up to a ``#`` comment; ``\\`` continues)."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        for m in _COMMAND.finditer(line):
            rest = line[m.start():]
            if m.start() > 0 and line[m.start() - 1] == "`":
                out.append(rest.split("`", 1)[0])
                continue
            cmd = rest.split(" #", 1)[0].rstrip()
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].split(" #", 1)[0].strip()
            out.append(cmd)
        i += 1
    return out


def documented_commands():
    found = []
    for path in _SOURCES:
        if _SKIP & set(path.parts):
            continue
        for cmd in quoted_commands(path.read_text()):
            found.append((path.relative_to(ROOT).as_posix(), cmd))
    return found


COMMANDS = documented_commands()


def test_the_commands_are_found():
    # the extraction must see the headline command, else the checks below pass on nothing
    assert ("README.md", "python -m bench c_grid --data ijcnn1 --peers onedal libsvm") in COMMANDS
    assert len({c for _, c in COMMANDS}) >= 10


def test_the_extraction_reads_spans_blocks_comments_and_continuations():
    text = ("a `python -m bench hss --sizes 10` b\n"
            "python -m bench c_grid --data a9a   # a comment\n"
            "python -m bench large_n --n 5 \\\n    --max-time 9\n"
            "python -m bench.peer_runner\n")
    assert quoted_commands(text) == ["python -m bench hss --sizes 10",
                                     "python -m bench c_grid --data a9a",
                                     "python -m bench large_n --n 5  --max-time 9"]


def _data_exists(name):
    if re.fullmatch(r"gmm8_\d+", name) or name in harness.RAW_SETS:
        return True
    from hsskern.datasets import BUNDLED, SOURCES
    return name in BUNDLED or name in SOURCES


@pytest.mark.parametrize("where,command", COMMANDS, ids=[f"{w}: {c}" for w, c in COMMANDS])
def test_a_documented_command_parses(where, command, capsys):
    words = shlex.split(command)[3:]
    if words[0] in ("list", "-h", "--help"):
        return
    if words[0].isupper():  # a placeholder: SUITE, NAME
        return
    assert words[0] in SUITES, f"{where}: {command!r} names no suite ({', '.join(SUITES)})"
    mod = importlib.import_module(SUITES[words[0]])
    try:
        args = _parser(words[0], mod).parse_args(words[1:])
    except SystemExit as stop:
        if stop.code == 0 and {"-h", "--help"} & set(words):
            return  # a suite's help
        pytest.fail(f"{where}: {command!r} does not parse: {capsys.readouterr().err.strip()}")
    unknown = [p for p in getattr(args, "peers", None) or [] if p not in harness.PEERS]
    assert not unknown, f"{where}: {command!r}: no peer {unknown} ({', '.join(harness.PEERS)})"
    data = getattr(args, "data", None)
    for name in [data] if isinstance(data, str) else data or []:  # one set, or several
        assert _data_exists(name), f"{where}: {command!r}: no data set {name!r}"
