"""Every lowering's docstring example, lowered by that lowering alone, gives the code the
docstring shows: the examples are the lowerings' specification and cannot drift."""
import ast
import importlib
import inspect
import pkgutil
import textwrap

import pytest

import codegen.lowering
from codegen.errors import ConversionError
from codegen.lowering.base import LoweringContext

SKIP_MODULES = {"base", "pipeline", "control_flow", "recursion"}   # no lowering of their own


def _examples(doc: str):
    """(before, outcome, after) triples from `Example::` blocks, each followed by `lowers to::`
    (the lowered source) or `raises::` (`Type: message` of the error it raises)."""
    triples = []
    for chunk in doc.split("Example::")[1:]:
        chunk = chunk.split("Example::")[0]
        outcome = "raises::" if "raises::" in chunk else "lowers to::"
        before, _, after = chunk.partition(outcome)
        triples.append((textwrap.dedent(before).strip(), outcome, textwrap.dedent(after).strip()))
    return triples


def _lowering_modules():
    for info in pkgutil.iter_modules(codegen.lowering.__path__):
        if info.name not in SKIP_MODULES:
            yield importlib.import_module(f"codegen.lowering.{info.name}")


def _cases():
    for module in _lowering_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "Example::" in (cls.__doc__ or ""):
                for i, example in enumerate(_examples(inspect.getdoc(cls))):
                    yield pytest.param(module, example, id=f"{module.__name__.split('.')[-1]}-{i}")


def test_every_lowering_module_has_transform_and_an_example():
    for module in _lowering_modules():
        assert callable(getattr(module, "transform", None)), module.__name__
        assert any(module.__name__ in str(c.values[0]) for c in _cases()), f"{module.__name__} has no example"


@pytest.mark.parametrize("module,example", list(_cases()))
def test_docstring_example(module, example):
    before, outcome, after = example
    node = ast.parse(before).body[0]
    ctx = LoweringContext.for_function(node, "<example>")
    if outcome == "raises::":
        with pytest.raises(ConversionError) as info:
            module.transform(node, ctx)
        assert f"{type(info.value).__name__}: {info.value}" == after
    else:
        module.transform(node, ctx)
        assert ast.unparse(node) == ast.unparse(ast.parse(after).body[0])
