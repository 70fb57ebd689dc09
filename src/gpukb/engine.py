"""The only module that touches durable-rules.

durable-rules is a C extension with process-global state, so this module keeps it contained:
- one Host per process, without the timer threads `Host.__init__` would start (gpukb uses no
  timers, and those threads never stop and could run actions concurrently with ours);
- a ruleset is registered once and named by the KB content hash (names cannot be reused);
- every dict is copied before it is asserted (durable adds `sid` to what it is given);
- every ask has a fresh session id whose state is deleted afterwards;
- one lock serialises all engine calls, so concurrent asks from several threads are safe;
- actions never raise into durable (it would swallow the error): failures are kept and re-raised.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from durable import engine as durable

from .errors import EngineError
from .kb import KnowledgeBase
from .rules import CompiledRule
from .trace import Collector


class _Host(durable.Host):
    def _run(self) -> None:  # no dispatch/timer threads: every assert runs its actions inline
        return None


def _condition_fields(kb: KnowledgeBase) -> dict[str, frozenset[str]]:
    """Per fact kind, the fields some rule condition reads (directly or through a join).

    durable-rules only sees these (plus kind and fid): the action looks the full fact up by fid,
    which keeps the JSON that durable encodes and decodes on every firing small.
    """
    needed: dict[str, set[str]] = {}
    for compiled in kb.active_rules:
        kinds = dict(compiled.aliases)
        for (_alias, kind), cond in zip(compiled.aliases, compiled.conditions, strict=True):
            needed.setdefault(kind, set())
            for name in cond.names if cond else ():
                head, _, tail = name.partition(".")
                if tail:
                    needed.setdefault(kinds[head], set()).add(tail)
                else:
                    needed[kind].add(name)
    return {kind: frozenset(fields | {"kind", "fid"}) for kind, fields in needed.items()}


class Session:
    """One ask's working memory inside the shared ruleset."""

    def __init__(self, engine: Engine, ruleset: str, sid: str, collector: Collector):
        self._engine = engine
        self._ruleset = ruleset
        self.sid = sid
        self.collector = collector

    def assert_facts(self, facts: list[dict[str, Any]]) -> None:
        for fact in facts:
            slim = self._engine._slim(self._ruleset, fact)
            if slim is not None:
                self._engine._assert(self._ruleset, {**slim, "sid": self.sid})
        self.collector.check()


class Engine:
    def __init__(self) -> None:
        self._host = _Host()
        self._lock = threading.RLock()
        self._rulesets: dict[str, dict[str, frozenset[str]]] = {}  # name -> fields conditions read, per kind
        self._collectors: dict[str, Collector] = {}
        self._ids = itertools.count(1)

    def _ruleset_for(self, kb: KnowledgeBase) -> str:
        name = f"gpukb_{kb.content_hash[:24]}"
        if name not in self._rulesets:
            definition = {}
            for compiled in kb.active_rules:
                rule = compiled.durable_definition()
                rule["run"] = self._action(compiled, name)
                definition[compiled.key.replace("@", "_v")] = rule
            if not definition:
                raise EngineError("the knowledge base has no active rules")
            self._host.register_rulesets({name: definition})
            self._rulesets[name] = _condition_fields(kb)
        return name

    def _slim(self, ruleset: str, fact: dict[str, Any]) -> dict[str, Any] | None:
        """The part of a fact durable needs, or None when no rule matches its kind at all."""
        fields = self._rulesets[ruleset].get(fact["kind"])
        return None if fields is None else {k: v for k, v in fact.items() if k in fields}

    def _action(self, compiled: CompiledRule, ruleset_name: str) -> Any:
        def action(c: Any) -> None:
            collector = self._collectors.get(c.s.sid)
            if collector is None or collector.errors:
                return
            try:
                matched = {alias: collector.facts[c._m[alias]["fid"]] for alias, _ in compiled.aliases}
                for fact in collector.fire(compiled, matched):
                    slim = self._slim(ruleset_name, fact)
                    if slim is None:
                        continue  # a conclusion no rule consumes stays in the collector only
                    with suppress(durable.MessageNotHandledException):
                        c.assert_fact(slim)  # a fresh dict: durable adds `sid` to what it is given
            except Exception as err:  # durable would swallow it; keep it for the caller
                collector.errors.append(f"{compiled.key}: {err}")

        return action

    def _assert(self, ruleset: str, fact: dict[str, Any]) -> None:
        with suppress(durable.MessageNotHandledException):  # no rule looks at this fact
            self._host.assert_fact(ruleset, fact)

    @contextmanager
    def session(self, kb: KnowledgeBase, collector: Collector) -> Iterator[Session]:
        with self._lock:
            ruleset = self._ruleset_for(kb)
            sid = f"ask{next(self._ids)}"
            self._collectors[sid] = collector
            try:
                yield Session(self, ruleset, sid, collector)
            finally:
                del self._collectors[sid]
                with suppress(Exception):  # a session that stored no facts has no state to delete
                    self._host.delete_state(ruleset, sid)


ENGINE = Engine()
