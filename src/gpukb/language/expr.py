"""A small, whitelisted expression language for rules.

Rules compute numbers (`then.compute`) and state conditions (`when[].if`) as expressions such as
`w.params * w.weight_bytes` or `task in ['pretrain', 'full_finetune'] and params > 1e9`. The
text is parsed with `ast` and walked by this module: nothing is ever compiled or executed as
Python. Allowed: numbers, strings, booleans, lists of constants, names, qualified names
`alias.field` (looked up in dicts, never by attribute access), arithmetic, comparisons,
`and`/`or`/`not`, `a if cond else b`, and the functions in FUNCTIONS.

Rules come from strangers' pull requests, so evaluation is bounded: the text's length and nesting,
each constant and every intermediate number (at most MAX_MAGNITUDE in size), exponents and
`round`'s digits. What the parse can see is refused there (a located lint error); the rest is
checked as it is computed, so no expression can make Python build an enormous integer.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_LENGTH = 2000
MAX_DEPTH = 40
MAX_EXPONENT = 8          # also the product of the exponents of powers of powers
MAX_MAGNITUDE = 1e60      # every number, constant or computed: 6·N·D for 10T parameters and 1e16 tokens is 6e29
_LEAST = -MAX_MAGNITUDE
MAX_ROUND_DIGITS = 15     # round(x, n) with |n| at most this: a double holds 15-17 significant digits


def _check_digits(ndigits: object) -> None:
    if type(ndigits) is not int or abs(ndigits) > MAX_ROUND_DIGITS:
        raise ExpressionError(f"round's digits must be an integer from -{MAX_ROUND_DIGITS} to {MAX_ROUND_DIGITS}")


def _round(number: Any, ndigits: Any = None) -> Any:
    if ndigits is not None:
        _check_digits(ndigits)
    return round(number, ndigits)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "sqrt": math.sqrt,
    "log2": math.log2,
    "exp": math.exp,
    "round": _round,
}
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_FAST_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge}
_CMP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
             ast.In: "in", ast.NotIn: "not in"}


class ExpressionError(ValueError):
    """The expression is not in the whitelisted language, or failed to evaluate."""


def _qualified(node: ast.AST) -> str | None:
    """'w.params' for Attribute(Name('w'), 'params'); 'x' for Name('x'); else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _nesting(tree: ast.Expression) -> int:
    """How deeply the expression's parts nest, found without recursion (a deep tree must not
    exhaust Python's stack before it is refused)."""
    deepest, stack = 0, [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:
            stack += [(child, depth + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
    return deepest


# Every syntax-tree class a checked expression may hold (what _check lets through, with the Load context of its
# names): the knowledge-base cache unpickles these and no other ast class (knowledge.kbcache.ALLOWED).
SYNTAX_NODES: frozenset[type] = frozenset({
    ast.Expression, ast.Constant, ast.Name, ast.Attribute, ast.Load, ast.BinOp, *_BINOPS, ast.UnaryOp, ast.USub,
    ast.UAdd, ast.Not, ast.BoolOp, ast.And, ast.Or, ast.Compare, *_CMPOPS, ast.IfExp, ast.List, ast.Tuple, ast.Call})


def _check_constant(value: object) -> None:
    if not isinstance(value, int | float | str | bool) or value is None:
        raise ExpressionError(f"constant {value!r} is not a number, string or boolean")
    if isinstance(value, int | float) and not isinstance(value, bool) and not abs(value) <= MAX_MAGNITUDE:
        raise ExpressionError(f"constants must be finite and at most {MAX_MAGNITUDE:g} in size")


def _check(node: ast.AST, depth: int, names: set[str], power: float = 1) -> None:
    """`power`: the product of the exponents of the powers `node` is the base of."""
    if depth > MAX_DEPTH:
        raise ExpressionError("expression nests too deeply")
    if isinstance(node, ast.Expression):
        _check(node.body, depth + 1, names)
    elif isinstance(node, ast.Constant):
        _check_constant(node.value)
    elif isinstance(node, ast.Name | ast.Attribute):
        name = _qualified(node)
        if name is None:
            raise ExpressionError("attribute access is not allowed (only alias.field names)")
        if any(part.startswith("_") for part in name.split(".")):
            raise ExpressionError(f"name '{name}' may not start with an underscore")
        names.add(name)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node.op, ast.Pow):
            exponent = node.right
            if not (isinstance(exponent, ast.Constant) and isinstance(exponent.value, int | float)
                    and abs(exponent.value) <= MAX_EXPONENT):
                raise ExpressionError(f"exponents must be constants of at most {MAX_EXPONENT}")
            if power * abs(exponent.value) > MAX_EXPONENT:
                raise ExpressionError(f"powers of powers may raise to at most {MAX_EXPONENT} in all")
            _check(node.left, depth + 1, names, power * max(abs(exponent.value), 1))
        else:
            _check(node.left, depth + 1, names, power)
        _check(node.right, depth + 1, names, power)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        _check(node.operand, depth + 1, names, power)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            _check(value, depth + 1, names)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _CMPOPS:
                raise ExpressionError(f"comparison {type(op).__name__} is not allowed")
        for part in (node.left, *node.comparators):
            _check(part, depth + 1, names)
    elif isinstance(node, ast.IfExp):
        for part in (node.test, node.body, node.orelse):
            _check(part, depth + 1, names)
    elif isinstance(node, ast.List | ast.Tuple):
        for item in node.elts:
            if not isinstance(item, ast.Constant):
                raise ExpressionError("lists may hold constants only")
            _check(item, depth + 1, names)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(f"only these functions may be called: {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            raise ExpressionError("keyword arguments are not allowed")
        if node.func.id == "round" and len(node.args) == 2:
            digits = node.args[1]
            if isinstance(digits, ast.UnaryOp) and isinstance(digits.op, ast.USub | ast.UAdd):
                digits = digits.operand  # round(x, -3): the sign does not matter to the bound
            if isinstance(digits, ast.Constant):
                _check_digits(digits.value)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise ExpressionError("*args is not allowed")
            _check(arg, depth + 1, names)
    else:
        raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")


class _Booleans(ast.NodeTransformer):
    """YAML authors write true/false; treat them as the boolean constants."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in ("true", "false"):
            return ast.copy_location(ast.Constant(node.id == "true"), node)
        return node


@dataclass(frozen=True)
class Expr:
    """A parsed, checked expression. `names` lists every (qualified) name it reads."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    run: Callable[[Mapping[str, Any]], Any]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled without its closures (kbcache), which are rebuilt from the checked tree."""
        return _restore, (self.text, self.tree, self.names)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        try:
            return self.run(env)
        except ExpressionError as err:
            raise ExpressionError(f"{self.text!r}: {err}") from None
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ExpressionError(f"{self.text!r}: {exc}") from None


def parse(text: str) -> Expr:
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression must be a non-empty string")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own limits on nesting
        raise ExpressionError("expression nests too deeply") from None
    if _nesting(tree) > MAX_DEPTH:
        raise ExpressionError("expression nests too deeply")
    tree = _Booleans().visit(tree)
    names: set[str] = set()
    _check(tree, 0, names)
    return Expr(text.strip(), tree, frozenset(names - set(FUNCTIONS)), _closure(tree.body))


def _restore(text: str, tree: ast.Expression, names: frozenset[str]) -> Expr:
    """An unpickled Expr, whose closures are built when it is first evaluated: an ask evaluates
    under half of a knowledge base's expressions (conditions run inside durable-rules)."""

    def first_run(env: Mapping[str, Any]) -> Any:
        run = _closure(tree.body)
        object.__setattr__(expr, "run", run)  # built twice by two threads at worst, identically
        return run(env)

    expr = Expr(text, tree, names, first_run)
    return expr


# bools are ints in Python; arithmetic on them is allowed (True * x), strings and lists are not
_NUMBER_TYPES = frozenset({int, float, bool})


def _bounded(value: Any, text: _Source) -> Any:
    """An arithmetic result, if it is a number within MAX_MAGNITUDE (NaN passes: the trace names it)."""
    if type(value) is float or type(value) is int:
        if abs(value) > MAX_MAGNITUDE:
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return value
    if type(value) is bool:
        return value
    raise ExpressionError(f"'{text}': arithmetic gave a {type(value).__name__}, not a real number")


def _lookup(name: str) -> Callable[[Mapping[str, Any]], Any]:
    head, _, tail = name.partition(".")
    if not tail:
        def get_name(env: Mapping[str, Any]) -> Any:
            try:
                return env[head]
            except KeyError:
                raise ExpressionError(f"unknown name '{head}'") from None

        return get_name

    def get_field(env: Mapping[str, Any]) -> Any:
        try:  # subscription only, never getattr: a fact is a dict, anything else raises TypeError
            return env[head][tail]
        except (KeyError, TypeError):
            return _missing(env, head, tail)

    return get_field


def _missing(env: Mapping[str, Any], head: str, tail: str) -> Any:
    if head not in env:
        raise ExpressionError(f"unknown name '{head}'")
    raise ExpressionError(f"'{head}' has no field '{tail}'")


Evaluator = Callable[[Mapping[str, Any]], Any]


class _Source:
    """An operation's source text for the error messages that name it, written only if one is raised:
    unparsing every operation as its closure was built made building the knowledge base's 360
    expressions take 11.2 ms instead of 2.9 ms (a command's first ask builds about 125 of them)."""

    __slots__ = ("node",)

    def __init__(self, node: ast.AST) -> None:
        self.node = node

    def __str__(self) -> str:  # f-strings format it through str()
        return ast.unparse(self.node)


# + - * / with _bounded's check inline: numbers in, so the result is an int or a float and only its
# size needs checking (NaN passes, as in _bounded). `op` is the operator module's C function, not a
# lambda: with one Python call less per operation, a third faster, with the same results and errors.
def _arith(op: Callable[[Any, Any], Any], left: Evaluator, right: Evaluator, text: _Source) -> Evaluator:
    def arith(env: Mapping[str, Any]) -> Any:
        a, b = left(env), right(env)
        if type(a) not in _NUMBER_TYPES or type(b) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return arith


def _arith_constant(op: Callable[[Any, Any], Any], left: Evaluator, b: Any, text: _Source) -> Evaluator:
    def arith_constant(env: Mapping[str, Any]) -> Any:  # `x * 2`, `x / 1e9`: the constant was checked when compiled
        a = left(env)
        if type(a) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return arith_constant


def _arith_name(op: Callable[[Any, Any], Any], left: Evaluator, head: str, tail: str, text: _Source) -> Evaluator:
    def arith_name(env: Mapping[str, Any]) -> Any:  # `x * w.layers`, `x / tp`: the name read inline, one call less
        a = left(env)
        try:
            b = env[head][tail] if tail else env[head]
        except (KeyError, TypeError):
            b = _missing(env, head, tail)
        if type(a) not in _NUMBER_TYPES or type(b) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return arith_name


def _name_arith_constant(op: Callable[[Any, Any], Any], head: str, tail: str, b: Any, text: _Source) -> Evaluator:
    def name_arith_constant(env: Mapping[str, Any]) -> Any:  # `w.layers * 2`: the name read inline, no call
        try:
            a = env[head][tail] if tail else env[head]
        except (KeyError, TypeError):
            a = _missing(env, head, tail)
        if type(a) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return name_arith_constant


def _names_arith(op: Callable[[Any, Any], Any], head: str, tail: str, right_head: str, right_tail: str,
                 text: _Source) -> Evaluator:
    def names_arith(env: Mapping[str, Any]) -> Any:  # `w.params * w.weight_bytes`: both names read inline
        try:
            a = env[head][tail] if tail else env[head]
        except (KeyError, TypeError):
            a = _missing(env, head, tail)
        try:
            b = env[right_head][right_tail] if right_tail else env[right_head]
        except (KeyError, TypeError):
            b = _missing(env, right_head, right_tail)
        if type(a) not in _NUMBER_TYPES or type(b) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return names_arith


def _name_arith(op: Callable[[Any, Any], Any], head: str, tail: str, right: Evaluator, text: _Source) -> Evaluator:
    def name_arith(env: Mapping[str, Any]) -> Any:  # `w.layers * (a + b)`: the name read inline, one call less
        try:
            a = env[head][tail] if tail else env[head]
        except (KeyError, TypeError):
            a = _missing(env, head, tail)
        b = right(env)
        if type(a) not in _NUMBER_TYPES or type(b) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return name_arith


def _constant_arith(op: Callable[[Any, Any], Any], a: Any, right: Evaluator, text: _Source) -> Evaluator:
    def constant_arith(env: Mapping[str, Any]) -> Any:  # `2 * (...)`: the constant was checked when compiled
        b = right(env)
        if type(b) not in _NUMBER_TYPES:
            raise ExpressionError(f"'{text}': arithmetic needs numbers")
        result = op(a, b)
        if result > MAX_MAGNITUDE or result < _LEAST:  # two comparisons, no call; NaN passes
            raise ExpressionError(f"'{text}': a value beyond {MAX_MAGNITUDE:g} in size")
        return result

    return constant_arith


def _compare_name(op: Callable[[Any, Any], Any], head: str, tail: str, constant: Any) -> Evaluator:
    def compare_name(env: Mapping[str, Any]) -> bool:  # `zero_stage >= 3`, `g.flops > 0`: the name read inline
        try:
            value = env[head][tail] if tail else env[head]
        except (KeyError, TypeError):
            value = _missing(env, head, tail)
        return bool(op(value, constant))

    return compare_name


def _named_test(test: ast.AST) -> tuple[str, str, Callable[[Any, Any], Any] | None, Any] | None:
    """(head, tail, operator, constant) of a conditional's test that is a name, or a name compared with a constant
    by one of the C operators (operator None: the name's truth); None for any other test."""
    if isinstance(test, ast.Name | ast.Attribute):
        head, _, tail = (_qualified(test) or "").partition(".")
        return head, tail, None, None
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FAST_CMP
            and isinstance(test.left, ast.Name | ast.Attribute) and isinstance(test.comparators[0], ast.Constant)):
        head, _, tail = (_qualified(test.left) or "").partition(".")
        return head, tail, _FAST_CMP[type(test.ops[0])], test.comparators[0].value
    return None


def _if_named(head: str, tail: str, op: Callable[[Any, Any], Any] | None, constant: Any, body: Evaluator,
              orelse: Evaluator) -> Evaluator:
    def if_named(env: Mapping[str, Any]) -> Any:  # the same truth as the test's own closure, one call less
        try:
            value = env[head][tail] if tail else env[head]
        except (KeyError, TypeError):
            value = _missing(env, head, tail)
        return body(env) if (value if op is None else op(value, constant)) else orelse(env)

    return if_named


_FAST_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _closure(node: ast.AST) -> Callable[[Mapping[str, Any]], Any]:
    """Turn a checked AST into nested Python closures: fast to run, and nothing is exec'd."""
    if isinstance(node, ast.Constant):
        value = node.value
        return lambda env: value
    if isinstance(node, ast.Name | ast.Attribute):
        return _lookup(_qualified(node) or "")
    if isinstance(node, ast.BinOp):
        left, right, text = _closure(node.left), _closure(node.right), _Source(node)
        if type(node.op) in _FAST_ARITH:  # + - * /: the bulk of every ask's arithmetic
            fast = _FAST_ARITH[type(node.op)]
            # a name on the left is read inline too when the right is a constant or a name (no call at all)
            left_name = isinstance(node.left, ast.Name | ast.Attribute)
            left_head, _, left_tail = (_qualified(node.left) or "").partition(".")
            if isinstance(node.right, ast.Constant) and type(node.right.value) in _NUMBER_TYPES:
                if left_name:
                    return _name_arith_constant(fast, left_head, left_tail, node.right.value, text)
                return _arith_constant(fast, left, node.right.value, text)
            if isinstance(node.right, ast.Name | ast.Attribute):
                head, _, tail = (_qualified(node.right) or "").partition(".")
                if left_name:
                    return _names_arith(fast, left_head, left_tail, head, tail, text)
                return _arith_name(fast, left, head, tail, text)
            if left_name:  # `w.layers * (...)`: the name read inline
                return _name_arith(fast, left_head, left_tail, right, text)
            if isinstance(node.left, ast.Constant) and type(node.left.value) in _NUMBER_TYPES:
                return _constant_arith(fast, node.left.value, right, text)  # `2 * (...)`, `1 - x / y`
            return _arith(fast, left, right, text)
        op = _BINOPS[type(node.op)]
        if isinstance(node.right, ast.Constant) and type(node.right.value) in _NUMBER_TYPES:
            constant = node.right.value

            def binop_constant(env: Mapping[str, Any]) -> Any:  # `x ** 2`: one operand to check
                a = left(env)
                if type(a) not in _NUMBER_TYPES:
                    raise ExpressionError(f"'{text}': arithmetic needs numbers")
                return _bounded(op(a, constant), text)

            return binop_constant

        def binop(env: Mapping[str, Any]) -> Any:
            a, b = left(env), right(env)
            if type(a) not in _NUMBER_TYPES or type(b) not in _NUMBER_TYPES:
                raise ExpressionError(f"'{text}': arithmetic needs numbers")
            return _bounded(op(a, b), text)

        return binop
    if isinstance(node, ast.UnaryOp):
        operand = _closure(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        if isinstance(node.op, ast.USub):
            return lambda env: -operand(env)
        if isinstance(node.op, ast.UAdd):
            return operand
        # never read an unknown operator as the identity (`~x` is not `x`), even if _check missed it
        raise ExpressionError(f"operator {type(node.op).__name__} cannot be evaluated")
    if isinstance(node, ast.BoolOp):
        values = [_closure(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        if len(values) == 2:  # `a and b`, nearly every one: Python's own operator, which returns what the loop does
            first, second = values
            return (lambda env: first(env) and second(env)) if is_and else (lambda env: first(env) or second(env))

        def boolop(env: Mapping[str, Any]) -> Any:
            result: Any = is_and
            for value in values:
                result = value(env)
                if bool(result) != is_and:
                    return result
            return result

        return boolop
    if isinstance(node, ast.Compare):
        first = _closure(node.left)
        unknown = [type(op).__name__ for op in node.ops if type(op) not in _CMPOPS]
        if unknown:  # an ExpressionError, not a KeyError, even if _check missed it
            raise ExpressionError(f"comparison {unknown[0]} cannot be evaluated")
        rest = [(_CMPOPS[type(op)], _closure(c)) for op, c in zip(node.ops, node.comparators, strict=True)]
        if len(rest) == 1 and type(node.ops[0]) in _FAST_CMP:  # `a >= b`, the usual case: no loop, a C operator
            fast, second = _FAST_CMP[type(node.ops[0])], rest[0][1]
            if isinstance(node.comparators[0], ast.Constant):  # `zero_stage >= 3`: the constant inline
                constant = node.comparators[0].value
                if isinstance(node.left, ast.Name | ast.Attribute):
                    head, _, tail = (_qualified(node.left) or "").partition(".")
                    return _compare_name(fast, head, tail, constant)
                return lambda env: bool(fast(first(env), constant))
            return lambda env: bool(fast(first(env), second(env)))

        def compare(env: Mapping[str, Any]) -> bool:
            left = first(env)
            for op, comparator in rest:
                right = comparator(env)
                if not op(left, right):
                    return False
                left = right
            return True

        return compare
    if isinstance(node, ast.IfExp):
        test, body, orelse = _closure(node.test), _closure(node.body), _closure(node.orelse)
        named = _named_test(node.test)
        if named is not None:  # `x if p.tp > 1 else 0.0`, `f if p.checkpointing else 0`: the test read inline
            return _if_named(*named, body, orelse)
        return lambda env: body(env) if test(env) else orelse(env)
    if isinstance(node, ast.List | ast.Tuple):
        items = [item.value for item in node.elts]  # type: ignore[attr-defined]
        return lambda env: items
    if isinstance(node, ast.Call):
        func = FUNCTIONS[node.func.id]  # type: ignore[attr-defined]
        args = [_closure(a) for a in node.args]
        if len(args) == 1:  # one or two arguments, nearly every call: passed without a generator to unpack
            (only,) = args
            return lambda env: func(only(env))
        if len(args) == 2:
            first, second = args
            return lambda env: func(first(env), second(env))
        return lambda env: func(*(a(env) for a in args))
    raise ExpressionError(f"{type(node).__name__} is not allowed")  # unreachable after _check


# --- conditions: the same language compiled to durable-rules' JSON condition format ---------

_DURABLE_CMP = {ast.NotEq: "$neq", ast.Lt: "$lt", ast.LtE: "$lte", ast.Gt: "$gt", ast.GtE: "$gte"}
_FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}
_DURABLE_ARITH = {ast.Add: "$add", ast.Sub: "$sub", ast.Mult: "$mul", ast.Div: "$div"}


def _operand(node: ast.AST, aliases: set[str]) -> Any:
    """Right-hand side of a condition: constant, earlier alias's field, or + - * / of those."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    name = _qualified(node)
    if name and "." in name:
        alias, field = name.split(".", 1)
        if alias not in aliases:
            raise ExpressionError(f"'{alias}' is not an earlier pattern of this rule")
        return {alias: field}
    if isinstance(node, ast.BinOp) and type(node.op) in _DURABLE_ARITH:
        return {_DURABLE_ARITH[type(node.op)]: {"$l": _operand(node.left, aliases), "$r": _operand(node.right, aliases)}}
    raise ExpressionError(f"'{ast.unparse(node)}' cannot be compared against in a condition")


def _is_field(node: ast.AST) -> bool:
    return isinstance(node, ast.Name)


def _condition(node: ast.AST, aliases: set[str]) -> dict[str, Any]:
    if isinstance(node, ast.BoolOp):
        key = "$and" if isinstance(node.op, ast.And) else "$or"
        return {key: [_condition(v, aliases) for v in node.values]}
    if isinstance(node, ast.Name):
        return {node.id: True}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Name):
        return {node.operand.id: False}
    if isinstance(node, ast.Compare):
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            parts.append(_comparison(left, op, right, aliases))
            left = right
        return parts[0] if len(parts) == 1 else {"$and": parts}
    raise ExpressionError(f"'{ast.unparse(node)}' is not a condition (compare a field of the fact)")


def _comparison(left: ast.AST, op: ast.cmpop, right: ast.AST, aliases: set[str]) -> dict[str, Any]:
    if isinstance(op, ast.In | ast.NotIn):
        if not _is_field(left) or not isinstance(right, ast.List | ast.Tuple):
            raise ExpressionError("use `field in [constant, ...]`")
        field = left.id  # type: ignore[attr-defined]
        values = [item.value for item in right.elts]  # type: ignore[attr-defined]
        if isinstance(op, ast.In):
            return {"$or": [{field: v} for v in values]}
        return {"$and": [{"$neq": {field: v}} for v in values]}
    if not _is_field(left):
        if not _is_field(right):
            raise ExpressionError(f"one side of '{_CMP_TEXT[type(op)]}' must be a field of this fact")
        left, right, op = right, left, _FLIP[type(op)]()
    field = left.id  # type: ignore[attr-defined]
    value = _operand(right, aliases)
    if isinstance(op, ast.Eq):
        return {field: value}
    return {_DURABLE_CMP[type(op)]: {field: value}}


def to_condition(expr: Expr, aliases: set[str]) -> dict[str, Any]:
    """Compile a condition over one fact to durable-rules JSON; `aliases` are earlier patterns."""
    return _condition(expr.tree.body, aliases)
