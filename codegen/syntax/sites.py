"""The table that ties generated code to profile sites.

Generated code refers to a site by a small integer (`site=3`); the table maps
it to the profile's key `(SiteKind, span)` and to the user's line, so build-time
decisions read the *current* profile: the builder is generated once, and each
graph built from it is specialised on whatever the profile says then.
"""
from __future__ import annotations

import ast
import dataclasses
import linecache

from profiler import SiteKind

from codegen.syntax.source import span


@dataclasses.dataclass(frozen=True)
class SiteRef:
    id: int
    kind: SiteKind
    span: tuple[int, int, int, int]
    construct: str          # "if", "while", "for", "ifexp"
    lineno: int
    text: str               # the user's source of the test or iterable, for reports


class SiteTable:
    def __init__(self, filename: str = ""):
        self.refs: list[SiteRef] = []
        self.filename = filename

    def _text(self, node) -> str:
        """The user's own text of `node` (the AST may already be lowered)."""
        line = linecache.getline(self.filename, node.lineno)
        if line and node.lineno == node.end_lineno:
            return line[node.col_offset:node.end_col_offset]
        return line.strip() + " ..." if line else ast.unparse(node)

    def _add(self, kind, node, construct, text_node) -> int:
        ref = SiteRef(len(self.refs), kind, span(node), construct, node.lineno, self._text(text_node))
        self.refs.append(ref)
        return ref.id

    def branch(self, test: ast.expr, construct: str = "ifexp") -> int:
        return self._add(SiteKind.BRANCH, test, construct, test)

    def loop(self, for_node: ast.For) -> int:
        return self._add(SiteKind.LOOP, for_node, "for", for_node.iter)

    def __getitem__(self, i: int) -> SiteRef:
        return self.refs[i]
