"""Generate the compiled kernels of the solvers from their reference functions.

    python tools/generate_kernels.py            (writes the kernels)
    python tools/generate_kernels.py --check    (exit status 1 when one is not up to date)

A reference module of ``solvers`` is the specification: plain Python, no C types.  Its
kernel (:data:`KERNELS`) is the same functions, with the module-level names they use, and
a ``@cython.locals`` declaration before each function (nested ones too) giving its local
names C types, inferred from the reference:

* a parameter annotated ``float``, ``int``, ``bool`` is a C double, int, bint; ``list`` or
  ``list[float]`` a Python list; ``list[float]`` and ``Sequence[float]`` hold floats, and
  ``Sequence[Sequence[float]]`` rows of floats (a loop variable over it holds floats);
* a local name is a C double when every value assigned to it is one: a float literal, a
  double name, ``+ - * /`` with a double operand, ``float(...)``, a ``math`` function, an
  element of a sequence of floats; a C int for an int literal, ``int(...)``, ``len(...)``,
  ``+ - *`` of ints or a ``range`` loop variable; a bint for a comparison; a list for a list
  display or comprehension, or a call of a module function annotated ``-> list``; the
  variables of a loop over a tuple of tuples of int literals are C ints; a name
  assigned values of different kinds (or of another kind) stays a Python object;
* an element read from a sequence of floats is converted (``float(...)``) so that the
  arithmetic on it is C's.

A reference may write a formula applied to several parts once, as a module-level helper
(the vehicle's per-wheel blocks).  The helpers a kernel names are inlined at each call
``a, b = helper(x, y)`` of its functions: the parameters bound by assignments, the body
copied with its names made unique, the returned values assigned to the call's targets.
The kernel is then the same straight-line code as a hand expansion (no Python call per
use), with the same IEEE operations in the same order as the reference's calls.

On C doubles the compiled code does the same IEEE operations in the same order as Python on
its floats (compiled_modules: gcc -ffp-contract=off; a division by zero still raises), so a
kernel is bit-identical to its reference (tests/numerics/test_kernels.py).  A kernel refuses to be
imported uncompiled (the reference module then keeps its own functions).
"""
from __future__ import annotations

import argparse
import ast
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: kernel module: (reference module, the functions it compiles, the helpers inlined into them)
KERNELS = {
    "solvers/compliance_kernel.py": ("solvers/compliance.py", ("twist", "spring_damper_torque", "spring_energy"),
                                     ()),
    "solvers/dense_kernel.py": ("solvers/dense.py", ("dot", "matvec", "quadratic_form"), ()),
    "solvers/ode_kernel.py": ("solvers/ode.py", ("_rk_step", "_error_norm"), ()),
    "solvers/rigid_kernel.py": ("solvers/rigid.py", ("damped_motion",), ()),
    "solvers/vehicle_closed_form_kernel.py": ("solvers/vehicle_closed_form.py",
                                              ("closed_form_dynamics", "closed_form_snap"),
                                              ("wheel_joint", "tire_normal_force", "sliding_forces",
                                               "eliminate_stuck", "stuck_forces")),
}
DOUBLE, INT, BINT, LIST, MATH_FUNCTION = "double", "int", "bint", "list", "math function"
ANNOTATIONS = {"float": DOUBLE, "int": INT, "bool": BINT, "list": LIST}
C_TYPES = {DOUBLE: "cython.double", INT: "cython.int", BINT: "cython.bint", LIST: "list"}
#: what a sequence holds: floats (list[float], Sequence[float]) or such sequences (rows of a matrix)
FLOATS, ROWS = "floats", "rows"


def annotation_kinds(annotation) -> tuple:
    """(the kind of a parameter annotated ``annotation``, whether it holds floats (FLOATS),
    sequences of floats (ROWS) or neither (None))."""
    if isinstance(annotation, ast.Name):
        return ANNOTATIONS.get(annotation.id), None
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) \
            and annotation.value.id in ("list", "Sequence"):
        kind = LIST if annotation.value.id == "list" else None
        element = annotation.slice
        if isinstance(element, ast.Name) and element.id == "float":
            return kind, FLOATS
        if annotation_kinds(element)[1] == FLOATS:
            return kind, ROWS
    return None, None


def integer_rows(node) -> bool:
    """Whether ``node`` is a tuple display of equally long tuple displays of int literals."""
    rows = node.elts if isinstance(node, ast.Tuple) else []
    return bool(rows) and all(isinstance(row, ast.Tuple) and len(row.elts) == len(rows[0].elts)
                              and all(isinstance(v, ast.Constant) and type(v.value) is int for v in row.elts)
                              for row in rows)


def own_nodes(function):
    """The nodes of ``function``'s body, not those of the functions defined inside it."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


class Scope:
    """The inferred kinds of one function's names (``outer``: the enclosing function's
    scope; ``returns``: {module function: (kind, whether its elements are floats)} of the
    return annotations)."""

    UNDECIDED = "undecided"         # a name's kind before the fixed point decides it

    def __init__(self, function, outer, returns):
        self.function, self.outer, self.returns = function, outer, returns
        self.kinds = {}
        self.floats, self.rows = (set(outer.floats), set(outer.rows)) if outer else (set(), set())
        for arg in function.args.args:
            kind, holds = annotation_kinds(arg.annotation)
            self.kinds[arg.arg] = kind
            {FLOATS: self.floats, ROWS: self.rows, None: set()}[holds].add(arg.arg)
        assigned = self._assignments()
        self.kinds.update(dict.fromkeys(assigned, self.UNDECIDED))
        changed = True
        while changed:                              # to the fixed point (kinds only ever settle)
            changed = False
            for name, values in assigned.items():
                kind = self.unified(self.kind(value) for value in values)
                if self.kinds[name] != kind:
                    self.kinds[name], changed = kind, True
                if name not in self.floats and all(self.returns_floats(value) for value in values):
                    self.floats.add(name)
                    changed = True
        self.kinds = {name: (None if kind == self.UNDECIDED else kind) for name, kind in self.kinds.items()}

    def unified(self, kinds):
        """The one kind of all ``kinds`` (undecided ones left out), else None."""
        decided = set(kinds) - {self.UNDECIDED}
        if not decided:
            return self.UNDECIDED
        return decided.pop() if len(decided) == 1 else None

    def returns_floats(self, value) -> bool:
        """Whether ``value`` holds floats: a call of a module function annotated
        ``-> list[float]``, or a row of a sequence of rows."""
        if isinstance(value, tuple):
            return value[0] == "element" and isinstance(value[1], ast.Name) and value[1].id in self.rows
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and self.returns.get(value.func.id, (None, None))[1] == FLOATS

    def _assignments(self) -> dict:
        """{local name: the expressions assigned to it} (("element", sequence) for an
        unpacked element, ("range", ...) for a loop variable)."""
        assigned = {}

        def bind(target, value):
            if isinstance(target, ast.Name):
                assigned.setdefault(target.id, []).append(value)
            elif isinstance(target, ast.Tuple):
                if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                    for element_target, element in zip(target.elts, value.elts):
                        bind(element_target, element)
                else:
                    for element_target in target.elts:
                        bind(element_target, ("element", value))

        for node in own_nodes(self.function):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, node.value)
            elif isinstance(node, ast.AugAssign):
                bind(node.target, ast.BinOp(ast.Name(node.target.id), node.op, node.value))
            elif isinstance(node, (ast.For, ast.comprehension)):
                ranged = isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) \
                    and node.iter.func.id == "range"
                if integer_rows(node.iter):         # for i, j in ((0, 1), (2, 3)): each an int
                    for element_target in node.target.elts:
                        bind(element_target, ast.Constant(0))
                else:
                    bind(node.target, ("range", node.iter) if ranged else ("element", node.iter))
        return assigned

    def lookup(self, name):
        if name in self.kinds:
            return self.kinds[name]
        return self.outer.lookup(name) if self.outer else None

    def kind(self, value):
        """The kind of the value ``value`` (an expression, or an ("element"/"range", ...) pair)."""
        if isinstance(value, tuple):
            tag, source = value
            if tag == "range":
                return INT if all(self.kind(arg) == INT for arg in source.args) else None
            return DOUBLE if isinstance(source, ast.Name) and source.id in self.floats else None
        if isinstance(value, ast.Constant):
            return {float: DOUBLE, int: INT, bool: BINT}.get(type(value.value))
        if isinstance(value, ast.Name):
            return self.lookup(value.id)
        if isinstance(value, ast.Attribute):
            return MATH_FUNCTION if isinstance(value.value, ast.Name) and value.value.id == "math" else None
        if isinstance(value, ast.UnaryOp):
            return BINT if isinstance(value.op, ast.Not) else self.kind(value.operand)
        if isinstance(value, ast.BinOp):
            if not isinstance(value.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                return None
            kinds = {self.kind(value.left), self.kind(value.right)}
            if DOUBLE in kinds:
                return DOUBLE
            if kinds <= {INT, self.UNDECIDED} and not isinstance(value.op, ast.Div):
                return self.unified(kinds)
            return self.UNDECIDED if kinds <= {DOUBLE, self.UNDECIDED} else None
        if isinstance(value, ast.Compare):
            return BINT
        if isinstance(value, ast.IfExp):
            return self.unified([self.kind(value.body), self.kind(value.orelse)])
        if isinstance(value, ast.Subscript):
            floats = isinstance(value.value, ast.Name) and value.value.id in self.floats
            return DOUBLE if floats and not isinstance(value.slice, ast.Slice) else None
        if isinstance(value, (ast.List, ast.ListComp)):
            return LIST
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            name = value.func.id
            if name in ("float", "int", "len"):
                return {"float": DOUBLE, "int": INT, "len": INT}[name]
            if self.lookup(name) == MATH_FUNCTION:
                return DOUBLE
            return self.returns.get(name, (None, None))[0]
        if isinstance(value, ast.Call) and self.kind(value.func) == MATH_FUNCTION:
            return DOUBLE
        return None

    def declarations(self) -> dict:
        """{name: its C type} of the names the function declares."""
        return {name: C_TYPES[kind] for name, kind in sorted(self.kinds.items()) if kind in C_TYPES}


class Typed(ast.NodeTransformer):
    """Adds each function's ``@cython.locals`` and converts the elements it reads from
    sequences of floats with ``float(...)``."""

    def __init__(self, returns):
        self.returns, self.scopes = returns, []

    def visit_FunctionDef(self, node):
        scope = Scope(node, self.scopes[-1] if self.scopes else None, self.returns)
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()
        declared = scope.declarations()
        if declared:
            call = ast.Call(ast.Attribute(ast.Name("cython"), "locals"), [],
                            [ast.keyword(name, ast.parse(c_type, mode="eval").body) for name, c_type in declared.items()])
            node.decorator_list.insert(0, call)
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        scope = self.scopes[-1] if self.scopes else None
        if scope is not None and isinstance(node.ctx, ast.Load) and scope.kind(node) == DOUBLE:
            return ast.Call(ast.Name("float"), [node], [])
        return node


class Inliner:
    """Expands the calls ``targets = helper(args)`` of the ``helpers`` ({name: FunctionDef}:
    positional parameters, one ``return`` as the last statement, no nested function)."""

    def __init__(self, helpers):
        for name, helper in helpers.items():
            returns = [node for node in ast.walk(helper) if isinstance(node, ast.Return)]
            if (returns != helper.body[-1:] or helper.args.vararg or helper.args.kwarg or helper.args.defaults
                    or helper.args.kwonlyargs or any(isinstance(node, (ast.FunctionDef, ast.Lambda, ast.Global,
                                                                       ast.Nonlocal)) for node in ast.walk(helper)
                                                     if node is not helper)):
                raise ValueError(f"helper {name} cannot be inlined: positional parameters, straight code "
                                 "and one return at its end only")
        self.helpers, self.calls = helpers, 0

    def body(self, statements) -> list:
        """``statements`` with every helper call expanded (in nested blocks too)."""
        expanded = []
        for statement in statements:
            call = statement.value if isinstance(statement, ast.Assign) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in self.helpers:
                expanded += self.expand(statement.targets, call)
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(statement, field, None), list):
                    setattr(statement, field, self.body(getattr(statement, field)))
            expanded.append(statement)
        return expanded

    def expand(self, targets, call) -> list:
        helper = self.helpers[call.func.id]
        parameters = [arg.arg for arg in helper.args.args]
        if call.keywords or len(call.args) != len(parameters):
            raise ValueError(f"call of helper {call.func.id} needs its {len(parameters)} arguments by position")
        self.calls += 1
        local = set(parameters) | {node.id for node in ast.walk(helper)
                                   if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
        renamed = {name: f"{name}__{self.calls}" for name in local}

        class Rename(ast.NodeTransformer):
            def visit_Name(self, node):
                return ast.Name(renamed.get(node.id, node.id), node.ctx)

        body = [statement for statement in helper.body
                if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))]
        bound = [ast.Assign([ast.Name(renamed[name], ast.Store())], argument, lineno=0)
                 for name, argument in zip(parameters, call.args)]
        copied = [Rename().visit(copy.deepcopy(statement)) for statement in body[:-1]]
        result = ast.Assign(targets, Rename().visit(copy.deepcopy(body[-1].value)), lineno=0)
        return bound + copied + [result]


def top_level_names(node) -> set:
    """The names a module-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {name.id for target in targets if target is not None for name in ast.walk(target)
            if isinstance(name, ast.Name)}


def kernel_source(kernel: str, reference: str, functions, inlined=()) -> str:
    """The text of the kernel module ``kernel`` compiling ``functions`` of ``reference`` with
    the helpers ``inlined`` expanded where they are called."""
    module = ast.parse((ROOT / reference).read_text(encoding="utf-8"))
    statements = [node for node in module.body if not isinstance(node, ast.Expr)
                  and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    defining = {name: node for node in statements for name in top_level_names(node)}
    inliner = Inliner({name: defining[name] for name in inlined})
    for name in functions:
        defining[name].body = inliner.body(defining[name].body)
    needed, wanted = set(), [defining[name] for name in functions]
    while wanted:                                   # the statements the functions use, transitively
        node = wanted.pop()
        if id(node) in needed:
            continue
        needed.add(id(node))
        used = {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}
        wanted.extend(defining[name] for name in used if name in defining)
    returns = {node.name: annotation_kinds(node.returns) for node in statements if isinstance(node, ast.FunctionDef)}
    body = [node for node in statements if id(node) in needed]
    typed = Typed(returns)
    body = [typed.visit(node) if isinstance(node, ast.FunctionDef) and node.name in functions else node
            for node in body]
    name = kernel[:-3].replace("/", ".")
    header = (f'"""Generated by tools/generate_kernels.py from {reference}: do not edit.\n\n'
              f"{', '.join(functions)} of the reference with C types for their locals, compiled\n"
              "into the FMUs; uncompiled, this module refuses to be imported and the reference runs."
              + (f"\nInlined at their calls: {', '.join(inlined)}." if inlined else "") + '"""\n'
              "from __future__ import annotations\n\nimport cython\n\n"
              "if not cython.compiled:\n"
              f'    raise ImportError("{name} runs compiled only: {reference} runs instead")\n')
    text = header
    for previous, node in zip([None, *body], body):
        apart = isinstance(node, ast.FunctionDef) or isinstance(previous, ast.FunctionDef)
        text += ("\n\n" if previous is None else "\n\n\n" if apart else "\n") + ast.unparse(node)
    return text + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the kernels are up to date")
    args = parser.parse_args(argv)
    stale = []
    for kernel, (reference, functions, inlined) in KERNELS.items():
        text = kernel_source(kernel, reference, functions, inlined)
        path = ROOT / kernel
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(kernel)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"not up to date: {', '.join(stale)} (python tools/generate_kernels.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
