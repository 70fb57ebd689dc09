"""The only module that touches durable-rules.

durable-rules is a C extension with process-global state, so this module keeps it contained:
- no durable `Host`: rulesets are created through the C extension directly (a Host starts timer
  threads that never stop and could run actions concurrently with ours, and gpukb uses no timers);
- a ruleset holds the rules an ask's task can fire (gpukb.engine.reachable), is registered once, and is
  named by the KB content hash and those rules (names cannot be reused);
- durable gets JSON text built afresh for every assert, never a dict of ours (its own wrapper would
  add `sid` to the dict it is given, and a later assert would land in an earlier session);
- every ask has a fresh session id whose state is deleted at the end of the next ask (at most one
  finished state is kept: see `Engine.session`), and every session opens by firing one action of
  its own (`_open`): durable-rules leaves a new state's action context unset, and deleting a state
  in which no action ever started frees whatever that memory held (`free(): invalid size`, SIGSEGV);
- every number reaches durable in a form its JSON reader takes (`durable_json`);
- one lock serialises all engine calls, so concurrent asks from several threads are safe;
- actions never raise into durable (it would swallow the error): failures are kept and re-raised.

Rulesets are made, facts go in, and the agenda is drained, through the C extension directly (the
same calls `durable.engine.Ruleset` makes, version pinned in pyproject.toml) rather than through its Python
wrapper: the wrapper builds a Closure and encodes, decodes and writes back the session state around
every firing, which gpukb never reads (dropping it made asks 1.2–1.5× faster: medians of six
alternating A/B rounds per workload).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from durable_rules_engine import assert_fact as _c_assert_fact
from durable_rules_engine import complete_and_start_action as _c_complete_and_start_action
from durable_rules_engine import create_ruleset as _c_create_ruleset
from durable_rules_engine import delete_state as _c_delete_state
from durable_rules_engine import error as _DurableError
from durable_rules_engine import start_action_for_state as _c_start_action_for_state

from ..core.errors import EngineError, KBDefectError
from ..core.messages import message
from ..knowledge.rules import CompiledRule
from ..language.template import value_test
from .reachable import reachable_rules, task_fields, text_gates
from .trace import Collector

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase


def _condition_fields(rules: tuple[CompiledRule, ...]) -> dict[str, tuple[str, ...]]:
    """Per fact kind, the fields some rule condition reads (directly or through a join), and kind.

    durable-rules only sees these (and fid): the action looks the full fact up by fid, which keeps
    the JSON that durable encodes and decodes on every firing small. Sorted, so the JSON is the same
    in every process; a tuple, so a fact's fields are picked by looking these up rather than by
    testing each of its fields (a workload fact has 52, rules read 14).
    """
    needed: dict[str, set[str]] = {}
    for compiled in rules:
        kinds = dict(compiled.aliases)
        for (_alias, kind), cond in zip(compiled.aliases, compiled.conditions, strict=True):
            needed.setdefault(kind, set())
            for name in cond.names if cond else ():
                head, _, tail = name.partition(".")
                if tail:
                    needed.setdefault(kinds[head], set()).add(tail)
                else:
                    needed[kind].add(name)
    return {kind: tuple(sorted(fields - {"fid"} | {"kind"})) for kind, fields in needed.items()}


class Session:
    """One ask's working memory inside the ruleset of its task's rules."""

    def __init__(self, engine: Engine, ruleset: str, sid: str, collector: Collector):
        self._engine = engine
        self._ruleset = ruleset
        self.sid = sid
        self.collector = collector

    def assert_facts(self, facts: list[dict[str, Any]]) -> None:
        """Assert each fact and run every action it triggers (and they trigger) before the next."""
        for fact in facts:
            self._engine._assert_and_run(self._ruleset, self.sid, fact)
            if self.collector.errors:
                break  # the ask has failed: no more work for it
        self.collector.check()


# One encoder for every fact: json.dumps with options would build a new one per call. Compact
# separators keep the text durable parses short; non-ASCII stays as is, as durable's own wrapper sends it.
# allow_nan=False: NaN and infinities raise ValueError rather than reach durable (see durable_json).
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":"), allow_nan=False)
_encode = _ENCODER.encode
# JSONEncoder.encode makes its C encoder anew on every call, half the cost of encoding a small fact:
# this is that C encoder, made once with the same options (the same text), where Python has it.
_c_encoder = json.encoder.c_make_encoder and json.encoder.c_make_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)

# What durable-rules' JSON reader takes (src/rules/json.c and state.c of durable-rules 2.0.28, the
# pinned version): a number is an optional '-' and digits, then optionally '.' and digits, and only
# after that fraction an exponent. Python writes 1e-05, 2e+16 and 5e-324 without a '.', so durable
# stops at the 'e' and refuses the whole fact (error 204); '1.0e-05' it reads. Integers it reads with
# atoll, which saturates outside 64 bits (10**20 would compare as 9223372036854775807); 'NaN' it reads
# as null and 'Infinity' not at all. -0.0, subnormals and the largest doubles it reads as written.
# 9223372036854775807 itself (LLONG_MAX, atoll's saturated value) crashes it: a fact holding it, matched
# against another, ends the process with a segmentation fault in most runs. So integers are written
# exactly up to one below it, and from there on as the nearest double.
_LONG_LONG = 2**63 - 2


def durable_number(value: int | float) -> str:
    """A number as durable-rules reads it back: Python's shortest repr, with '.0' before a bare exponent,
    and integers outside 64 bits as the nearest double. ValueError for NaN and infinities, which
    durable cannot hold (and no fact should)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        text = float.__repr__(value)
        if "e" in text and "." not in text:
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if -_LONG_LONG <= value <= _LONG_LONG:
        return int.__repr__(value)
    try:
        return durable_number(float(value))
    except OverflowError:
        raise ValueError(f"an integer of {len(str(abs(value)))} digits is beyond any double") from None


def durable_json(value: Any, where: str = "") -> str:
    """JSON text of `value` that durable-rules reads back as the same values (see durable_number); the
    slow, exact path behind _encode_fact, and the encoder of ruleset definitions. EngineError, naming
    the field, for a value durable cannot hold."""
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate (a file name's undecodable byte): escaped, not refused
            return json.encoder.encode_basestring_ascii(value)
        return json.encoder.encode_basestring(value)
    if isinstance(value, int | float):
        try:
            return durable_number(value)
        except ValueError as err:
            raise EngineError(f"'{where or 'value'}' cannot be given to durable-rules: {err}") from None
    if isinstance(value, dict):
        return "{" + ",".join(f"{durable_json(str(k))}:{durable_json(v, f'{where}.{k}' if where else str(k))}"
                              for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(durable_json(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    raise EngineError(f"'{where or 'value'}' is a {type(value).__name__}, which durable-rules cannot hold")


def _encode_fact(fact: dict[str, Any], exact: bool = False) -> str:
    """The JSON durable gets for a (slim) fact: the C encoder's text, or durable_json's where a number in it
    is one that durable would read otherwise (`exact`: the caller saw one, as _Ruleset.slim does while it
    copies the fields, which costs less than searching the text). NaN and infinities raise in the encoder."""
    if exact:
        return durable_json(fact, fact.get("kind", ""))
    try:
        return "".join(_c_encoder(fact, 0)) if _c_encoder else _encode(fact)
    except ValueError:  # allow_nan=False: durable_json names the field
        return durable_json(fact, fact.get("kind", ""))


# durable's assert result codes besides 0 (RULES_OK): its rules.h calls them ERR_EVENT_NOT_HANDLED,
# ERR_EVENT_OBSERVED and ERR_EVENT_DEFERRED (handed to a queue callback, which gpukb never sets)
_NOT_HANDLED, _OBSERVED, _DEFERRED = 1, 2, 3

# durable names an action's matched facts by handing back, verbatim, the text gpukb asserted for
# each: `{"<action>":{"<alias>":<fact>,...}}`. Every asserted fact is a flat object whose first
# field is its fid, so `":{"fid":"` can only follow an alias (a quote inside a JSON string is always
# escaped). Splitting on it takes 1.8 µs a message against 6.5 µs for json.loads (the messages of a
# 7B full fine-tune, ~560 bytes each).
_FACT_START = '":{"fid":"'


def read_message(message: str) -> tuple[str, dict[str, str]]:
    """(action name, {alias: fid}) of one message from durable's agenda."""
    pieces = message.split(_FACT_START)
    fids = {before[before.rindex('"') + 1:]: after[:after.index('"')]
            for before, after in itertools.pairwise(pieces)}
    return message[2:message.index('"', 2)], fids


class _Ruleset:
    """One registered ruleset: its C handle, the fields its conditions read, an action per rule."""

    def __init__(self, handle: int, fields: dict[str, tuple[str, ...]],
                 gates: dict[str, tuple[str, frozenset[str]]] | None = None):
        self.handle = handle
        self.fields = fields
        self.gates = gates or {}
        self.actions: dict[str, Any] = {}  # action name -> (its aliases, the action)

    def slim(self, fact: dict[str, Any], sid: str) -> str | None:
        """The JSON durable gets for a fact, or None when no rule condition looks at its kind or no
        pattern accepts its text (reachable.text_gates)."""
        kind = fact["kind"]
        fields = self.fields.get(kind)
        if fields is None:
            return None
        gate = self.gates.get(kind)
        if gate is not None and type(text := fact.get(gate[0])) is str and text not in gate[1]:
            return None
        slim = {"fid": fact["fid"]}  # filled in place: a comprehension unpacked into it was a second dict
        exact = False  # a number that durable reads otherwise as Python writes it (see durable_number)
        for k in fields:
            if k in fact:
                value = slim[k] = fact[k]
                number = type(value)
                if number is float:
                    # Python writes an exponent below 1e-4 and from 1e16 (not always with a '.'); NaN too
                    if value and not 1e-4 <= abs(value) < 1e16:
                        exact = True
                elif number is int and not -_LONG_LONG <= value <= _LONG_LONG:
                    exact = True
        slim["sid"] = sid
        return _encode_fact(slim, exact)

    def put(self, fact: dict[str, Any], sid: str) -> int | None:
        """Assert a fact; the state handle whose agenda may now hold actions, or None."""
        encoded = self.slim(fact, sid)
        if encoded is None:
            return None
        try:
            code, state = _c_assert_fact(self.handle, encoded)
        except _DurableError as err:  # durable_json writes what durable reads: this is a bug, named
            raise EngineError(f"durable-rules refused a {fact['kind']} fact ({err})") from None
        if code == _NOT_HANDLED:  # no rule condition accepts it
            return None
        if code == _OBSERVED:  # every fact carries a fresh fid, so this is a bug, not an input error
            raise EngineError(f"durable-rules saw the same {fact['kind']} fact twice")
        if code == _DEFERRED:  # a fact left unprocessed would silently drop conclusions
            raise EngineError(f"durable-rules deferred a {fact['kind']} fact instead of matching it")
        return state


# Every ruleset has one rule of gpukb's own, which matches only the fact that opens a session (no rule
# of rules/ can match its kind, which is not one of facts.ALL_KINDS, nor take its name: rule actions
# end in _v<version>). Firing it sets the new state's action context, which durable leaves unset.
_OPENING_ACTION = "gpukb_session_opened"
_OPENING_KIND = "gpukb.session"
_OPENING_RULE = {"all": [{"s": {"kind": _OPENING_KIND}}]}


class Engine:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._rulesets: dict[str, _Ruleset] = {}
        self._names: dict[tuple[Any, ...], str] = {}  # (KB hash, the task's fields) -> its ruleset's name
        self._collectors: dict[str, Collector] = {}
        self._ids = itertools.count(1)
        self._finished: tuple[str, str] | None = None  # the last ask's (ruleset, session id), kept until the next ends

    def _ruleset_for(self, kb: KnowledgeBase, known: dict[str, Any]) -> str:
        """The registered ruleset of the rules that asks with these workload fields can fire (reachable)."""
        asked = (kb.content_hash, *known.items())
        name = self._names.get(asked)
        if name is not None:
            return name
        rules = reachable_rules(kb, known)
        keys = [compiled.key for compiled in rules]
        name = f"gpukb_{kb.content_hash[:24]}_{hashlib.sha256(' '.join(keys).encode()).hexdigest()[:12]}"
        if name not in self._rulesets:  # tasks that can fire the same rules share one ruleset
            definition = {compiled.key.replace("@", "_v"): compiled.durable_definition() for compiled in rules}
            if not definition:
                given = ", ".join(f"{field} {value!r}" for field, value in known.items())
                raise KBDefectError(message("no_active_rule", given=given))
            definition[_OPENING_ACTION] = _OPENING_RULE
            try:
                handle = _c_create_ruleset(name, durable_json(definition))
            except _DurableError as err:  # a limit of durable's (rete.h) that the loader does not check
                raise KBDefectError(message("ruleset_refused", task=known.get("task"), detail=str(err))) from None
            ruleset = _Ruleset(handle, _condition_fields(rules), text_gates(rules))
            for compiled in rules:
                aliases = frozenset(alias for alias, _ in compiled.aliases)
                ruleset.actions[compiled.key.replace("@", "_v")] = (aliases, self._action(compiled, ruleset))
            self._rulesets[name] = ruleset
        self._names[asked] = name
        return name

    def _action(self, compiled: CompiledRule, ruleset: _Ruleset) -> Any:
        aliases = [alias for alias, _ in compiled.aliases]
        explained = value_test(compiled.explain_needs)

        def action(sid: str, fids: dict[str, str]) -> None:
            collector = self._collectors[sid]
            try:
                matched = {alias: collector.facts[fids[alias]] for alias in aliases}
                for fact in collector.fire(compiled, matched, explained):
                    ruleset.put(fact, sid)  # actions it triggers join the agenda being drained
            except Exception as err:  # keep it for the caller, who re-raises it after the agenda drains
                collector.errors.append(f"{compiled.key}: {err}")

        return action

    def _assert_and_run(self, name: str, sid: str, fact: dict[str, Any]) -> None:
        ruleset = self._rulesets[name]
        state = ruleset.put(fact, sid)
        if state is None:
            return
        started = _c_start_action_for_state(ruleset.handle, state)
        if not started:
            return
        message: str | None = started[1]
        errors = self._collectors[sid].errors
        while message:
            action_name, fids = read_message(message)
            aliases, action = ruleset.actions[action_name]
            if fids.keys() == aliases:
                action(sid, fids)
            else:  # not the text gpukb asserted (another durable version?): fail the ask, never guess
                errors.append(f"{action_name}: durable matched {sorted(fids)}, the rule has {sorted(aliases)}")
            if errors:  # the ask has failed: the rest of its agenda is left undone (its state is deleted
                return  # soundly with an action started: see _open), so a bound on firings bounds the work
            message = _c_complete_and_start_action(ruleset.handle, state)

    def _open(self, name: str, sid: str) -> None:
        """Make the session's state and fire its opening action once, so that durable-rules sets the
        state's action context (rules/src/rules/state.c, createStateNode, leaves it as malloc left it;
        startActionForState sets it; completeAndStartAction frees it and sets it to NULL; deleteStateNode
        frees whatever it holds). Every later state of the context is one durable made: deleting the
        state is then sound however the ask ends, with or without actions, or with one left started."""
        handle = self._rulesets[name].handle
        opening = f'{{"fid":"open","kind":"{_OPENING_KIND}","sid":"{sid}"}}'
        try:
            code, state = _c_assert_fact(handle, opening)
            started = _c_start_action_for_state(handle, state) if code == 0 else None
            if started is None or not started[1].startswith(f'{{"{_OPENING_ACTION}"'):
                raise EngineError(f"durable-rules did not open session {sid} (code {code}, {started!r})")
            rest = _c_complete_and_start_action(handle, state)
        except _DurableError as err:
            raise EngineError(f"durable-rules did not open session {sid}: {err}") from None
        if rest is not None:
            raise EngineError(f"durable-rules ran {rest[:60]!r} when session {sid} opened")

    @contextmanager
    def session(self, kb: KnowledgeBase, collector: Collector, workload: dict[str, Any]) -> Iterator[Session]:
        """A session for asks about this workload fact (its task decides the ruleset: reachable)."""
        with self._lock:
            ruleset = self._ruleset_for(kb, task_fields(workload))
            sid = f"ask{next(self._ids)}"
            self._open(ruleset, sid)  # a state it fails to open is never deleted: its context may be unset
            self._collectors[sid] = collector
            try:
                yield Session(self, ruleset, sid, collector)
            finally:
                del self._collectors[sid]
                # The previous ask's state goes now, while this ask's still lies above it on the heap: its
                # ~1.6 MB of tables are then reused by the next ask's state, where deleting a state as its
                # ask ends let glibc hand them back to the system and the next ask fault ~550 pages in
                # again (a full-catalog ask took a quarter more CPU time in fresh processes).
                previous, self._finished = self._finished, (ruleset, sid)
                if previous is not None:
                    self.delete_state(*previous)

    def delete_state(self, name: str, sid: str) -> None:
        """Delete a session's state (one that was opened: see _open)."""
        with suppress(_DurableError):  # already deleted: durable says ERR_SID_NOT_FOUND and changes nothing
            _c_delete_state(self._rulesets[name].handle, sid)


ENGINE = Engine()
