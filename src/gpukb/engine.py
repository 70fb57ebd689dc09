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


class Session:
    """One ask's working memory inside the shared ruleset."""

    def __init__(self, engine: Engine, ruleset: str, sid: str, collector: Collector):
        self._engine = engine
        self._ruleset = ruleset
        self.sid = sid
        self.collector = collector

    def assert_facts(self, facts: list[dict[str, Any]]) -> None:
        for fact in facts:
            self._engine._assert(self._ruleset, {**fact, "sid": self.sid})
        self.collector.check()


class Engine:
    def __init__(self) -> None:
        self._host = _Host()
        self._lock = threading.RLock()
        self._rulesets: dict[str, str] = {}
        self._collectors: dict[str, Collector] = {}
        self._ids = itertools.count(1)

    def _ruleset_for(self, kb: KnowledgeBase) -> str:
        name = f"gpukb_{kb.content_hash[:24]}"
        if name not in self._rulesets:
            definition = {}
            for compiled in kb.active_rules:
                rule = compiled.durable_definition()
                rule["run"] = self._action(compiled)
                definition[compiled.key.replace("@", "_v")] = rule
            if not definition:
                raise EngineError("the knowledge base has no active rules")
            self._host.register_rulesets({name: definition})
            self._rulesets[name] = kb.content_hash
        return name

    def _action(self, compiled: CompiledRule):
        def action(c: Any) -> None:
            collector = self._collectors.get(c.s.sid)
            if collector is None or collector.errors:
                return
            try:
                matched = {alias: dict(c._m[alias]) for alias, _ in compiled.aliases}
                for fact in collector.fire(compiled, matched):
                    # a conclusion no rule consumes stays in the collector only
                    with suppress(durable.MessageNotHandledException):
                        c.assert_fact(dict(fact))
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
