"""The only module that touches durable-rules.

durable-rules is a C extension with process-global state, so this module keeps it contained:
- one Host per process, without the timer threads `Host.__init__` would start (gpukb uses no
  timers, and those threads never stop and could run actions concurrently with ours);
- a ruleset holds the rules an ask's task can fire (gpukb.reachable), is registered once, and is
  named by the KB content hash and those rules (names cannot be reused);
- durable gets JSON text built afresh for every assert, never a dict of ours (its own wrapper would
  add `sid` to the dict it is given, and a later assert would land in an earlier session);
- every ask has a fresh session id whose state is deleted at the end of the next ask (at most one
  finished state is kept: see `Engine.session`);
- one lock serialises all engine calls, so concurrent asks from several threads are safe;
- actions never raise into durable (it would swallow the error): failures are kept and re-raised.

Facts go in, and the agenda is drained, through the ruleset's C handle directly (the same calls
`durable.engine.Ruleset` makes, version pinned in pyproject.toml) rather than through its Python
wrapper: the wrapper builds a Closure and encodes, decodes and writes back the session state around
every firing, which gpukb never reads (dropping it made asks 1.2–1.5× faster: medians of six
alternating A/B rounds per workload).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from durable import engine as durable
from durable_rules_engine import assert_fact as _c_assert_fact
from durable_rules_engine import complete_and_start_action as _c_complete_and_start_action
from durable_rules_engine import start_action_for_state as _c_start_action_for_state

from .errors import EngineError, KBDefectError
from .reachable import reachable_rules, task_fields, text_gates
from .rules import CompiledRule
from .trace import Collector

if TYPE_CHECKING:
    from .kb import KnowledgeBase


class _Host(durable.Host):
    def _run(self) -> None:  # no dispatch/timer threads: every assert runs its actions inline
        return None


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
        self.collector.check()


# One encoder for every fact: json.dumps with options would build a new one per call. Compact
# separators keep the text durable parses short; non-ASCII stays as is, as durable's own wrapper sends it.
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":"))
_encode = _ENCODER.encode
# JSONEncoder.encode makes its C encoder anew on every call, half the cost of encoding a small fact:
# this is that C encoder, made once with the same options (the same text), where Python has it.
_c_encoder = json.encoder.c_make_encoder and json.encoder.c_make_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)


def _encode_fact(fact: dict[str, Any]) -> str:
    return "".join(_c_encoder(fact, 0)) if _c_encoder else _encode(fact)
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
        for k in fields:
            if k in fact:
                slim[k] = fact[k]
        slim["sid"] = sid
        return _encode_fact(slim)

    def put(self, fact: dict[str, Any], sid: str) -> int | None:
        """Assert a fact; the state handle whose agenda may now hold actions, or None."""
        encoded = self.slim(fact, sid)
        if encoded is None:
            return None
        code, state = _c_assert_fact(self.handle, encoded)
        if code == _NOT_HANDLED:  # no rule condition accepts it
            return None
        if code == _OBSERVED:  # every fact carries a fresh fid, so this is a bug, not an input error
            raise EngineError(f"durable-rules saw the same {fact['kind']} fact twice")
        if code == _DEFERRED:  # a fact left unprocessed would silently drop conclusions
            raise EngineError(f"durable-rules deferred a {fact['kind']} fact instead of matching it")
        return state


class Engine:
    def __init__(self) -> None:
        self._host = _Host()
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
            definition = {}
            for compiled in rules:
                rule = compiled.durable_definition()
                rule["run"] = _never_called
                definition[compiled.key.replace("@", "_v")] = rule
            if not definition:
                given = ", ".join(f"{field} {value!r}" for field, value in known.items())
                raise KBDefectError(f"rules/ has no active rule that an ask with {given} can fire")
            self._host.register_rulesets({name: definition})
            ruleset = _Ruleset(self._host.get_ruleset(name)._handle, _condition_fields(rules), text_gates(rules))
            for compiled in rules:
                aliases = frozenset(alias for alias, _ in compiled.aliases)
                ruleset.actions[compiled.key.replace("@", "_v")] = (aliases, self._action(compiled, ruleset))
            self._rulesets[name] = ruleset
        self._names[asked] = name
        return name

    def _action(self, compiled: CompiledRule, ruleset: _Ruleset) -> Any:
        aliases = [alias for alias, _ in compiled.aliases]

        def action(sid: str, fids: dict[str, str]) -> None:
            collector = self._collectors[sid]
            if collector.errors:
                return  # the ask has failed; let durable drain its agenda without doing more work
            try:
                matched = {alias: collector.facts[fids[alias]] for alias in aliases}
                for fact in collector.fire(compiled, matched):
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
        while message:
            action_name, fids = read_message(message)
            aliases, action = ruleset.actions[action_name]
            if fids.keys() == aliases:
                action(sid, fids)
            else:  # not the text gpukb asserted (another durable version?): fail the ask, never guess
                self._collectors[sid].errors.append(
                    f"{action_name}: durable matched {sorted(fids)}, the rule has {sorted(aliases)}")
            message = _c_complete_and_start_action(ruleset.handle, state)

    @contextmanager
    def session(self, kb: KnowledgeBase, collector: Collector, workload: dict[str, Any]) -> Iterator[Session]:
        """A session for asks about this workload fact (its task decides the ruleset: reachable)."""
        with self._lock:
            ruleset = self._ruleset_for(kb, task_fields(workload))
            sid = f"ask{next(self._ids)}"
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
                    with suppress(Exception):  # a session that stored no facts has no state to delete
                        self._host.delete_state(*previous)


def _never_called(_closure: Any) -> None:
    """durable requires a `run` per rule; gpukb drains the agenda itself and never goes through it."""
    raise EngineError("durable-rules ran an action through its own dispatcher")


ENGINE = Engine()
