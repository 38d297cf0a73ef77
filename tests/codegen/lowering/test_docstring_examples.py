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
    """(before, after) source pairs from `Example::` ... `lowers to::` blocks."""
    pairs = []
    for chunk in doc.split("Example::")[1:]:
        before, _, rest = chunk.partition("lowers to::")
        after = rest.split("Example::")[0]
        pairs.append((textwrap.dedent(before).strip(), textwrap.dedent(after).strip()))
    return pairs


def _lowering_modules():
    for info in pkgutil.iter_modules(codegen.lowering.__path__):
        if info.name not in SKIP_MODULES:
            yield importlib.import_module(f"codegen.lowering.{info.name}")


def _cases():
    for module in _lowering_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "Example::" in (cls.__doc__ or ""):
                for i, pair in enumerate(_examples(inspect.getdoc(cls))):
                    yield pytest.param(module, pair, id=f"{module.__name__.split('.')[-1]}-{i}")


def test_every_lowering_module_has_transform_and_an_example():
    for module in _lowering_modules():
        assert callable(getattr(module, "transform", None)), module.__name__
        if module.__name__.endswith(".unsupported"):
            continue
        assert any(module.__name__ in str(c.values[0]) for c in _cases()), f"{module.__name__} has no example"


@pytest.mark.parametrize("module,pair", list(_cases()))
def test_docstring_example(module, pair):
    before, after = pair
    node = ast.parse(before).body[0]
    module.transform(node, LoweringContext.for_function(node, "<example>"))
    assert ast.unparse(node) == ast.unparse(ast.parse(after).body[0])


def test_unsupported_constructs_name_the_line():
    from codegen.lowering import unsupported
    node = ast.parse("def f(x):\n    yield x\n").body[0]
    with pytest.raises(ConversionError) as info:
        unsupported.transform(node, LoweringContext.for_function(node, "example.py"))
    assert info.value.reason.kind == "generator" and info.value.reason.where == "example.py:2"
