"""What the offline demo model understands of a notebook: the text ``get_notebook_state`` returns.

The real model reads that text; the demo model parses it back (the format of
:func:`jupyter_aaep.notebook.render.render_cells`) and looks at each code cell's syntax tree,
so it can explain cells, find a dataframe or a list of numbers to plot, and find the last
failed cell and what it needs, in any notebook, without running anything itself.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

__all__ = ["CellInfo", "CodeFacts", "NotebookView", "code_facts", "parse_state"]

_TITLE = re.compile(
    r"^# (?P<path>.+?): (?P<total>\d+) cells? \((?P<code>\d+) code, \d+ other\); kernel: (?P<kernel>.*)$"
)
_HEADER = re.compile(
    r"^## cell (?P<number>\d+) · id (?P<id>\S+)(?: · version (?P<version>\w+))? · (?P<type>\w+)(?P<status>.*)$"
)
_OUTPUTS = "→ outputs:"
_CUT_NOTE = "(Some sources or outputs were cut to fit"
_READERS = frozenset(
    {
        "read_csv",
        "read_table",
        "read_excel",
        "read_json",
        "read_parquet",
        "read_feather",
        "read_sql",
        "read_fwf",
    }
)
_MAKERS = _READERS | {"DataFrame"}
_PLOTTERS = frozenset(
    {"plot", "scatter", "hist", "bar", "barh", "imshow", "boxplot", "lineplot", "histplot", "pie"}
)


@dataclass(frozen=True)
class CodeFacts:
    """What a code cell does, from its syntax tree (names in order of appearance)."""

    imports: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    dataframes: tuple[str, ...] = ()
    """Names bound to ``pd.DataFrame(...)``/``pd.read_*(...)`` results."""
    sequences: tuple[str, ...] = ()
    """Names bound to a list/tuple of numbers or a list comprehension (plottable values)."""
    containers: tuple[str, ...] = ()
    """Names bound to a dict, list or tuple literal or comprehension (data to show)."""
    files: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    """Names the cell reads but does not set itself (from earlier cells, or builtins)."""
    prints: bool = False
    plots: bool = False
    parsed: bool = True

    def names(self) -> tuple[str, ...]:
        """Every name the cell makes available to later cells."""
        return self.imports + self.defines + self.functions + self.classes


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return ""


def _is_numbers(node: ast.AST) -> bool:
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return all(
            isinstance(e, ast.Constant)
            and isinstance(e.value, (int, float))
            and not isinstance(e.value, bool)
            or isinstance(e, ast.UnaryOp)
            and isinstance(e.operand, ast.Constant)
            for e in node.elts
        )
    return isinstance(node, ast.ListComp)


def code_facts(source: str) -> CodeFacts:
    """Read one code cell. IPython lines (``%magic``, ``!shell``) are skipped; a cell that does
    not parse gets ``parsed=False`` and whatever a line scan finds."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        found_imports = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", source, re.MULTILINE)
        found_names = re.findall(r"^(\w+)\s*=(?!=)", source, re.MULTILINE)
        return CodeFacts(imports=_unique(found_imports), defines=_unique(found_names), parsed=False)
    imports: list[str] = []
    defines: list[str] = []
    functions: list[str] = []
    classes: list[str] = []
    dataframes: list[str] = []
    sequences: list[str] = []
    containers: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            imports += [alias.asname or alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            imports += [alias.asname or alias.name for alias in node.names if alias.name != "*"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node.name)
        elif isinstance(node, ast.ClassDef):
            classes.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            names += [
                e.id
                for t in targets
                if isinstance(t, ast.Tuple)
                for e in t.elts
                if isinstance(e, ast.Name)
            ]
            defines += names
            value = node.value
            if _call_name(value) in _MAKERS:
                dataframes += names
            elif _is_numbers(value):
                sequences += names
            if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.DictComp, ast.ListComp)):
                containers += names
    files: list[str] = []
    own = set(imports + defines + functions + classes)
    read = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    loaded = [n.id for n in sorted(read, key=lambda n: (n.lineno, n.col_offset)) if n.id not in own]
    prints = plots = False
    for item in ast.walk(tree):
        name = _call_name(item)
        if name in ("print", "display"):
            prints = True
        elif name in _PLOTTERS or name == "show" and "plt" in source:
            plots = True
        if isinstance(item, ast.Call) and name in _READERS | {"open"} and item.args:
            first = item.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                files.append(first.value)
    return CodeFacts(
        imports=_unique(imports),
        defines=_unique(defines),
        functions=_unique(functions),
        classes=_unique(classes),
        dataframes=_unique(dataframes),
        sequences=_unique(sequences),
        containers=_unique(containers),
        files=_unique(files),
        uses=_unique(loaded),
        prints=prints,
        plots=plots,
    )


@dataclass(frozen=True)
class CellInfo:
    """One cell as ``get_notebook_state`` showed it."""

    number: int
    id: str
    cell_type: str
    status: str
    """What the header says after the type: ``not run``, ``ran as [3] · 1 output`` or ``""``."""
    source: str
    outputs: str = ""

    @property
    def is_code(self) -> bool:
        return self.cell_type == "code"

    @property
    def ran(self) -> bool:
        return "ran as" in self.status

    @property
    def error(self) -> str | None:
        """ "NameError: name 'x' is not defined" when the cell's output holds an error."""
        found = re.search(r"\[error\] ([^\n]+)", self.outputs)
        return found.group(1).strip() if found else None

    @property
    def cut(self) -> bool:
        """Whether the state showed this cell's source shortened (so it must not be rewritten)."""
        return "characters cut …]" in self.source

    def first_output_lines(self, count: int = 2) -> list[str]:
        lines = [line.strip() for line in self.outputs.splitlines()]
        return [line for line in lines if line and not re.fullmatch(r"\[[a-z_ ]+\]", line)][:count]

    @property
    def facts(self) -> CodeFacts:
        return code_facts(self.source) if self.is_code else CodeFacts()


@dataclass(frozen=True)
class NotebookView:
    """The notebook the demo model read: its path, kernel and cells (possibly none)."""

    path: str = ""
    kernel: str = ""
    total: int | None = None
    cells: tuple[CellInfo, ...] = field(default_factory=tuple)

    @property
    def code_cells(self) -> list[CellInfo]:
        return [c for c in self.cells if c.is_code]

    def last_failed(self) -> CellInfo | None:
        return next((c for c in reversed(self.cells) if c.is_code and c.error), None)

    def defined_in(self, name: str) -> CellInfo | None:
        """The first code cell that makes ``name`` available."""
        return next((c for c in self.code_cells if name in c.facts.names()), None)

    def all_names(self) -> list[str]:
        return [n for c in self.code_cells for n in c.facts.names()]

    def dataframes(self) -> list[str]:
        return list(dict.fromkeys(n for c in self.code_cells for n in c.facts.dataframes))

    def sequences(self) -> list[str]:
        return list(dict.fromkeys(n for c in self.code_cells for n in c.facts.sequences))

    def containers(self) -> list[str]:
        return list(dict.fromkeys(n for c in self.code_cells for n in c.facts.containers))


def parse_state(text: str) -> NotebookView:
    """The cells in ``get_notebook_state``'s answer; an unfamiliar text gives an empty view."""
    lines = text.splitlines()
    title = _TITLE.match(lines[0]) if lines else None
    path = title.group("path") if title else ""
    kernel = title.group("kernel") if title else ""
    total = int(title.group("total")) if title else None
    cells: list[CellInfo] = []
    current: dict[str, str] | None = None
    body: list[str] = []

    def finish() -> None:
        if current is None:
            return
        text = "\n".join(body).strip("\n")
        source, _, outputs = text.partition(_OUTPUTS)
        cells.append(
            CellInfo(
                number=int(current["number"]),
                id=current["id"],
                cell_type=current["type"],
                status=current["status"].strip(" ·"),
                source=source.strip("\n"),
                outputs=outputs.strip("\n"),
            )
        )

    for line in lines[1:]:
        header = _HEADER.match(line)
        if header:
            finish()
            current, body = header.groupdict(), []
        elif line.startswith(_CUT_NOTE):
            finish()
            current, body = None, []
        elif current is not None:
            body.append(line)
    finish()
    return NotebookView(path=path, kernel=kernel, total=total, cells=tuple(cells))
