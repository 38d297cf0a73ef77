"""The structure docs/architecture.md describes, checked on the source (nothing is imported).

Imports go one way: profiler <- codegen <- janus between packages, and room by room inside
codegen; no module imports inside a function (that is how cycles hide); modules and
functions stay small enough to read; the compile-time rooms do not import TensorFlow."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("profiler", "codegen", "janus")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80

# Rooms of codegen, lowest first: a module may import codegen modules of its own room or a lower one.
ROOMS = [
    ("codegen.errors", "codegen.assumptions", "codegen.faults"),
    ("codegen.syntax",),
    ("codegen.lowering",),
    ("codegen.operators",),
    ("codegen.compiler", "codegen.segments"),
    ("codegen.recursion",),
    ("codegen.services",),
    ("codegen.graph",),
    ("codegen.coverage",),
]
NO_TENSORFLOW = ("codegen.errors", "codegen.assumptions", "codegen.faults", "codegen.syntax", "codegen.lowering",
                 "profiler")
# `python -m janus` imports janus after it has set up the environment of the script it runs.
LAZY_IMPORT_ALLOWED = {"janus.__main__"}


def _modules():
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _imports(name, path):
    """(imported module, line, inside a function) for every import of a project module."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import submodule` depends on the submodule; the package's __init__ runs
            # first whatever is imported, so a facade re-exporting its own submodules is no cycle.
            subs = [f"{module}.{a.name}" for a in node.names]
            targets = [s for s in subs if s in MODULES] or [module]
        else:
            continue
        up, in_function = node, False
        while up in parents:
            up = parents[up]
            in_function |= isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for target in targets:
            found.append((target, node.lineno, in_function))
    return found


def _project_edges():
    edges = {}
    for name, path in MODULES.items():
        edges[name] = {t for t, _, _ in _imports(name, path) if t in MODULES and t != name}
    return edges


def _room(name):
    for rank, prefixes in enumerate(ROOMS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    return None


def test_no_import_cycles():
    edges = _project_edges()
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(edges[node]):
            if state.get(dep) == "open":
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_packages_import_one_way():
    order = {p: i for i, p in enumerate(PACKAGES)}
    wrong = [f"{a} imports {b}" for a, deps in _project_edges().items() for b in deps
             if order[b.split(".")[0]] > order[a.split(".")[0]]]
    assert not wrong, "the direction is profiler <- codegen <- janus:\n" + "\n".join(wrong)


def test_codegen_rooms_import_downward():
    wrong = []
    for a, deps in _project_edges().items():
        if not a.startswith("codegen.") or _room(a) is None:
            continue
        for b in deps:
            if b.startswith("codegen.") and b != "codegen" and (_room(b) is None or _room(b) > _room(a)):
                wrong.append(f"{a} (room {_room(a)}) imports {b} (room {_room(b)})")
    assert not wrong, "\n".join(wrong)


def test_every_codegen_module_has_a_room():
    assert [m for m in MODULES if m.startswith("codegen.") and _room(m) is None] == []


def test_no_imports_inside_functions():
    hidden = [f"{name}:{line} imports {target}" for name, path in MODULES.items() if name not in LAZY_IMPORT_ALLOWED
              for target, line, inside in _imports(name, path) if inside and target.split(".")[0] in PACKAGES]
    assert not hidden, "\n".join(hidden)


@pytest.mark.parametrize("room", NO_TENSORFLOW)
def test_compile_time_rooms_do_not_import_tensorflow(room):
    users = [f"{name}:{line}" for name, path in MODULES.items() if name == room or name.startswith(room + ".")
             for target, line, _ in _imports(name, path) if target.split(".")[0] == "tensorflow"]
    assert not users, f"{room} imports tensorflow at " + ", ".join(users)


def test_modules_and_functions_stay_small():
    long = []
    for name, path in MODULES.items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"module {name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"function {name}.{node.name}: {length} lines")
    assert not long, "\n".join(long)
