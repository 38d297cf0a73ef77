"""The opcode coverage table: complete for the running Python, and true to the code."""
import ast
import dis
import importlib.util

import pytest

from codegen import coverage


def test_every_opcode_of_dis_opmap_is_classified():
    registry = coverage.handlers()
    missing = sorted(set(dis.opmap) - set(registry))
    assert not missing, f"opcodes missing from codegen/coverage.py: {missing}"
    extra = sorted(set(registry) - set(dis.opmap))
    assert not extra, f"opcodes not in this Python's dis.opmap: {extra}"
    assert {h.status for h in registry.values()} <= {coverage.CONVERTED, coverage.NO_CONVERSION, coverage.IMPERATIVE}


@pytest.mark.parametrize("opname", sorted(n for n, h in coverage.handlers().items() if h.sample))
def test_sample_compiles_to_its_opcode(opname):
    assert opname in coverage.sample_opnames(coverage.handlers()[opname].sample)


def _defined_names(module: str) -> set[str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"no module {module}"
    tree = ast.parse(open(spec.origin).read())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_every_handler_named_exists_in_its_lowering():
    for opname, h in coverage.handlers().items():
        if h.status != coverage.NO_CONVERSION:
            assert h.handlers, f"{opname}: a converted or imperative opcode must name its handler"
        for ref in h.handlers:
            module, _, name = ref.rpartition(".")
            assert name in _defined_names(module), f"{opname}: {ref} does not exist"


def test_table_runs_the_pipeline_on_samples():
    rows = {r.opname: r for r in coverage.table()}
    assert len(rows) == len(dis.opmap)
    assert rows["YIELD_VALUE"].status == coverage.IMPERATIVE and rows["YIELD_VALUE"].reason == "generator"
    assert rows["CHECK_EXC_MATCH"].reason == "try-except"
    assert rows["MATCH_CLASS"].reason == "match"
    assert rows["IMPORT_NAME"].reason == "import"
    assert rows["FOR_ITER"].status == coverage.CONVERTED
    assert rows["POP_JUMP_FORWARD_IF_FALSE"].handlers[0].endswith("if_statements.visit_If")
    assert rows["BINARY_OP"].status == coverage.NO_CONVERSION
    for r in rows.values():
        if r.status == coverage.IMPERATIVE:
            assert r.reason, f"{r.opname}: imperative-only without the reason kind users see"


def test_markdown_lists_every_opcode():
    text = coverage.markdown()
    for opname in dis.opmap:
        assert f"| `{opname}` |" in text


def test_unknown_python_version_is_an_explicit_error():
    with pytest.raises(NotImplementedError, match="3.99"):
        coverage.handlers((3, 99))
