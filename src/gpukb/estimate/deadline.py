"""Time budgets for training: per GPU type, the cluster that trains the workload's tokens within a deadline.

Memory gives each GPU type its fewest GPUs; at that count the rules estimate tokens/s (compute, then
the communication compute does not hide). Where the tokens then take longer than the deadline, the ask is
repeated with more GPUs of that type: the count linear scaling would need, rounded up to a cluster size
people build (1, 2, 4 or 8 GPUs in one server; past one server, whole nodes of the GPU type's system), and
grown again while communication keeps it short of the deadline. The planner lays the replica out on that
many GPUs as placement 'all' does (the least intrusive layout that fits, the rest data parallelism), in whole
data-parallel ranks of its tp x pp group: counts are rounded up to whole groups of the last plan, and a count
asked before is not asked again (it gave fewer GPUs than asked, and would again).

A cluster grown past what the deadline needs is tightened: the count linear scaling says suffices, while it
meets the deadline; where that misses, halfway between the largest count that missed and the fewest that met,
while that saves more than 1 - GAIN of them; then the fewest that met.

A GPU type stops growing at gpu_count or the largest published cluster (policy largest-cluster), or when
more GPUs shorten the run by less than GAIN and by less than half what linear scaling of the added GPUs
gives (MARGINAL); it keeps the fastest count tried and misses the deadline,
ranked after the options that meet it. A type whose larger cluster the rules reject keeps the count before.
Nor does it grow past the GPUs the workload's global batch keeps busy (global_batch_size / micro_batch_size
data-parallel ranks of the widest model-parallel group the planner tries): more would stand idle.
Nor does it grow into its communication wall: a larger cluster that still misses the deadline while its step
computes less than the scaling efficiency floor (policy scaling-efficiency-floor, where the parallel layout
must change rather than the GPU count grow) sends it back, halfway at a time, to the largest count tried above
the floor, which then misses the deadline. A cluster that meets the deadline may fall below the floor.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from .planner import NODE_SIZE, Sized

if TYPE_CHECKING:
    from ..answer.answer import Answer

ROUNDS = 8  # asks after the first: linear scaling's guess, then growth where communication eats into it
GAIN = 0.98  # a larger cluster that shortens the run by less than 2% is not worth its GPUs: stop growing...
MARGINAL = 0.5  # ...unless it returned at least half the speed-up its added GPUs give at linear scaling
SERVER = (1, 2, 4, 8)  # GPU counts of one server as sold and rented (1-, 2-, 4- and 8-GPU machines)

Run = Callable[[dict[str, Sized]], "Answer"]


def _not_worth(before: tuple[int, float], after: tuple[int, float]) -> bool:
    """Whether growing a cluster from `before` to `after` (GPUs, seconds) gained too little to grow it again: the
    run shortened by less than GAIN, and by less than MARGINAL of what the added GPUs give at linear scaling. (Near
    the deadline the steps are small: 0.9% more GPUs that shorten the run by 0.8% scale, and are worth growing.)"""
    (n0, t0), (n1, t1) = before, after
    if t1 <= t0 * GAIN:
        return False
    return n1 <= n0 or (t0 / t1 - 1) < MARGINAL * (n1 / n0 - 1)


def cluster_size(n: float, node: int = NODE_SIZE) -> int:
    """The smallest cluster people build of at least n GPUs: 1, 2, 4 or 8 in one server, whole servers past it."""
    n = max(1, math.ceil(n - 1e-9))
    if n <= node:
        return next((size for size in SERVER if n <= size <= node), node)
    return node * math.ceil(n / node)


def largest_size(most: int, node: int = NODE_SIZE) -> int:
    """The largest cluster size of at most `most` GPUs."""
    if most >= node:
        return node * (most // node)
    return max(size for size in SERVER if size <= most)


def sized_for_deadline(tokens: int, deadline_s: float, most: int, run: Run, node_of: dict[str, int] | None = None,
                       floor: float = 0.0, fed: dict[str, int] | None = None,
                       keep: dict[str, Sized] | None = None, start: dict[str, int] | None = None,
                       held: dict[str, int] | None = None) -> Answer:
    """Ask with the memory plan, then size each GPU type whose run misses the deadline; `most` caps a cluster,
    `node_of` gives each GPU type's node size (its system's GPUs per node; NODE_SIZE where not given), `floor`
    the scaling efficiency below which a cluster is not grown further (0: grow while it shortens the run), `fed`
    the most GPUs of each type the workload's global batch keeps busy (planner.batch_feeds; no limit where not
    given): a cluster grows no further than that. `keep`, where given, receives the final sizes; `start`, where
    given, the counts the GPU types it names begin at instead of their memory plans (a cluster another layout
    was sized to, tightened from there). `held` gives the most GPUs of a type its systems hold (one node where
    none has a network between nodes): no more are asked for."""
    node_of, fed, held = node_of or {}, fed or {}, held or {}
    efficient: dict[str, list[int]] = {}  # per GPU type, the counts tried whose scaling efficiency held the floor
    wall: dict[str, int] = {}  # per GPU type, the fewest GPUs tried whose scaling efficiency fell below it
    sizes: dict[str, Sized] = {}
    tried: dict[str, list[tuple[int, float]]] = {}
    asked: dict[str, set[int]] = {}  # per GPU type, the counts asked for (a plan may use fewer: whole groups)
    group: dict[str, int] = {}  # per GPU type, the GPUs of one data-parallel rank of its last plan (tp x pp x cp)
    done: set[str] = set()
    tightened: set[str] = set()

    def size(gpu: str, count: int) -> None:
        asked.setdefault(gpu, set()).add(count)
        limit = fed.get(gpu, most)  # grown as far as the global batch feeds, the sentence says so
        largest = largest_size(limit, node_of.get(gpu, NODE_SIZE))
        sizes[gpu] = Sized(count, deadline_s, tokens, tried[gpu], largest if limit < most and count >= largest else 0)

    def whole(gpu: str, n: float) -> int:
        """The cluster size of at least n GPUs in whole groups of the GPU type's last plan: a model-parallel plan
        runs whole data-parallel ranks of tp x pp GPUs, fewer than it is given where they do not divide it."""
        g = group.get(gpu, 1)
        return cluster_size(math.ceil(n / g - 1e-9) * g, node_of.get(gpu, NODE_SIZE))

    def met(gpu: str) -> int:
        """The fewest GPUs tried that meet the deadline."""
        return min(n for n, s in tried[gpu] if s <= deadline_s)

    def between(gpu: str) -> int | None:
        """A count halfway between the largest tried that misses the deadline below the fewest that meet it and those
        fewest, where one lies there that saves more than 1 - GAIN of them; None where none does."""
        fewest = met(gpu)
        missed = max((n for n, s in tried[gpu] if s > deadline_s and n < fewest), default=0)
        if not missed:
            return None
        mid = whole(gpu, (missed + fewest) / 2)
        return mid if missed < mid < fewest * GAIN and mid not in asked.get(gpu, ()) else None

    for gpu, count in (start or {}).items():
        tried[gpu] = []
        size(gpu, count)
    answer = run(sizes)
    for _ in range(ROUNDS):
        changed = False
        fitting = {o.gpu: o for o in answer.options}
        for gpu in [g for g in sizes if g not in fitting and g not in done]:
            done.add(gpu)  # the rules reject the larger cluster: back to the last count that fit
            changed = True
            if len(tried[gpu]) > 1:
                size(gpu, tried[gpu][-1][0])
            else:
                del sizes[gpu]
        for o in fitting.values():
            t = o.time_to_train_s
            if o.gpu in done or t is None:
                continue
            history = tried.setdefault(o.gpu, [])
            history.append((o.count, t))
            group[o.gpu] = max(1, o.count // max(1, o.strategy.data_parallel))
            node = node_of.get(o.gpu, NODE_SIZE)
            if o.efficiency is None or o.efficiency >= floor:
                efficient.setdefault(o.gpu, []).append(o.count)
            elif t > deadline_s and efficient.get(o.gpu):
                # grown into the communication wall: halfway back (geometrically) to the largest count above the
                # floor while one lies between, else that count, which misses the deadline. (A cluster that meets
                # the deadline may pay for it in efficiency; and a GPU type already below the floor at its smallest
                # cluster, whose step is bound by a per-step transfer that does not grow with the ranks, has no wall
                # to stop at: it grows while that shortens the run, as it would without a floor.)
                wall[o.gpu] = min(wall.get(o.gpu, o.count), o.count)
                low = max(efficient[o.gpu])
                mid = cluster_size(math.sqrt(low * o.count), node)
                if not low < mid < o.count:
                    done.add(o.gpu)
                    mid = low
                size(o.gpu, mid)
                changed = True
                continue
            if t <= deadline_s:
                # grown past what the deadline needs (a larger cluster also lets a leaner layout run): try the
                # smallest cluster linear scaling says suffices, again while it meets the deadline (a smaller
                # cluster communicates less, so linear scaling overshoots). Below a count that missed, halve the
                # gap to it instead: a model-parallel plan runs whole groups of tp x pp GPUs, fewer than it was
                # given, so linear scaling's guess can land below what the deadline needs.
                tight: int | None = whole(o.gpu, o.count * t / deadline_s)
                missed = max((n for n, s in history if s > deadline_s and n < o.count), default=0)
                if tight < o.count and (tight <= missed or tight in asked.get(o.gpu, ())):
                    tight = between(o.gpu)
                if tight is None or tight >= o.count:
                    done.add(o.gpu)
                    if o.gpu in tightened and o.count != met(o.gpu):
                        size(o.gpu, met(o.gpu))
                        changed = True
                    elif o.gpu in sizes and sizes[o.gpu].count < o.count:  # asked for fewer than hold the replica:
                        size(o.gpu, o.count)  # the count is what the plan runs on
                        changed = True
                    continue
                tightened.add(o.gpu)
                size(o.gpu, tight)
                changed = True
                continue
            if o.gpu in tightened:  # the tighter cluster misses: halfway back to the fewest that met the deadline,
                mid = between(o.gpu)  # while that saves GPUs, else those fewest
                if mid is None:
                    done.add(o.gpu)
                size(o.gpu, met(o.gpu) if mid is None else mid)
                changed = True
                continue
            # the counts a cluster may keep: those short of the communication wall
            usable = [h for h in history if h[0] < wall.get(o.gpu, most + 1)]
            smaller = [h for h in usable if h[0] < o.count]
            if smaller and _not_worth(max(smaller), (o.count, t)):  # communication ate the gain: the fastest tried
                done.add(o.gpu)
                fastest = min(usable, key=lambda h: (h[1], h[0]))[0]
                if fastest != o.count:
                    size(o.gpu, fastest)
                    changed = True
                continue
            want = min(max(whole(o.gpu, o.count * t / deadline_s), whole(o.gpu, o.count + 1)),
                       largest_size(min(most, fed.get(o.gpu, most), held.get(o.gpu, most)), node))
            if o.gpu in wall:  # not into the wall again: halfway to it (geometrically)
                want = min(want, cluster_size(math.sqrt(o.count * wall[o.gpu]), node))
                if want >= wall[o.gpu]:
                    want = o.count
            if want <= o.count or want in asked.get(o.gpu, ()):  # asked before: a plan of whole groups used fewer
                done.add(o.gpu)
                continue
            size(o.gpu, want)
            changed = True
        if not changed:
            break
        answer = run(sizes)
    # out of rounds while halving back from the wall: keep the largest count tried above the floor
    back = {o.gpu: max(n for n in efficient[o.gpu] if n < o.count) for o in answer.options
            if o.gpu in sizes and o.efficiency is not None and o.efficiency < floor
            and (o.time_to_train_s or 0) > deadline_s and any(n < o.count for n in efficient.get(o.gpu, ()))}
    # out of rounds while tightening: a count that misses the deadline goes back to the fewest that met it
    back.update({o.gpu: met(o.gpu) for o in answer.options if o.gpu in tightened and o.gpu not in back
                 and (o.time_to_train_s or 0) > deadline_s and o.count != met(o.gpu)})
    for gpu, count in back.items():
        size(gpu, count)
    if keep is not None:
        keep.update(sizes)
    return run(sizes) if back else answer
