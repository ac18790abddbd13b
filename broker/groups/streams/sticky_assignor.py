"""Broker-side task assignment of a streams group: Kafka's StickyTaskAssignor, in its rules.

Active tasks first, the stateful ones, then the stateless ones on top of them (so each kind is
balanced, as Kafka's assignor balances them independently). A task stays with the member that
ran it, then goes to a member that kept it as a standby (its state is warm there), each while
that member is under its fair share (floor(tasks / members)) or at it while some member may
still run one more (tasks % members of them may); the rest go one by one to the member with
the fewest active tasks. No member ends more than one task apart from another.

Then `standbys` standby replicas of each stateful task, each on a member of another process
than the task's active one and than its other standbys (a standby on the same process would
not survive what it is there for): a member that had the standby keeps it, others go to the
least-loaded member (actives and standbys counted). A task with fewer eligible processes gets
fewer standbys, as in Kafka.

No warm-up tasks, as Kafka 4.3's StickyTaskAssignor gives none (its warm-up map stays empty;
warm-ups came after 4.3, docs/streams-groups.md): an active moves at once, its new owner
restoring from the changelog.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.groups.streams.tasks import Tasks, of_pairs

Task = tuple[str, int]


@dataclass(frozen=True)
class MemberView:
    process_id: str
    previous: Tasks  # its target before this assignment


def assign(members: dict[str, MemberView], tasks: dict[str, int], stateful: set[str],
           standbys: int) -> dict[str, Tasks]:
    """Each member's target: `tasks` maps subtopology id -> its task count."""
    if not members:
        return {}
    every = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    load = {mid: 0 for mid in members}
    active = _actives(members, [t for t in every if t[0] in stateful], load)
    active.update(_actives(members, [t for t in every if t[0] not in stateful], load))
    standby = _standbys(members, active, [t for t in every if t[0] in stateful], standbys)
    return {mid: Tasks(active=of_pairs(t for t, m in active.items() if m == mid),
                       standby=of_pairs(t for t, ms in standby.items() for m in ms if m == mid))
            for mid in members}


def _actives(members: dict[str, MemberView], every: list[Task], load: dict[str, int]) -> dict[Task, str]:
    """Places `every` on top of the active tasks each member has already (`load`, updated)."""
    fair, extra = divmod(len(every) + sum(load.values()), len(members))  # `extra` members may run one more
    extra -= sum(1 for n in load.values() if n > fair)
    owner: dict[Task, str] = {}

    def take(task: Task, mid: str | None) -> None:
        """`mid` gets `task` if under its fair share, or at it while a member may still run one more."""
        nonlocal extra
        if mid is None or task in owner or load[mid] > fair or (load[mid] == fair and not extra):
            return
        if load[mid] == fair:
            extra -= 1
        owner[task] = mid
        load[mid] += 1

    ran = {t: mid for mid, m in sorted(members.items()) for t in _pairs(m.previous.active)}
    warm = {t: mid for mid, m in sorted(members.items()) for t in _pairs(m.previous.standby)}
    for task in every:
        take(task, ran.get(task))
    for task in every:
        take(task, warm.get(task))  # its state is warm there
    for task in every:
        if task not in owner:
            mid = min(members, key=lambda m: (load[m], m != ran.get(task), m))
            owner[task] = mid
            load[mid] += 1
    return owner


def _standbys(members: dict[str, MemberView], active: dict[Task, str], stateful: list[Task],
              replicas: int) -> dict[Task, list[str]]:
    load = {mid: 0 for mid in members}
    for mid in active.values():
        load[mid] += 1
    placed: dict[Task, list[str]] = {t: [] for t in stateful}

    def eligible(task: Task, mid: str) -> bool:
        taken = {members[active[task]].process_id, *(members[m].process_id for m in placed[task])}
        return members[mid].process_id not in taken

    for mid, m in sorted(members.items()):  # sticky standbys first
        for task in sorted(_pairs(m.previous.standby)):
            if task in placed and len(placed[task]) < replicas and eligible(task, mid):
                placed[task].append(mid)
                load[mid] += 1
    for task in stateful:
        while len(placed[task]) < replicas:
            candidates = [mid for mid in members if eligible(task, mid)]
            if not candidates:
                break
            mid = min(candidates, key=lambda c: (load[c], c))
            placed[task].append(mid)
            load[mid] += 1
    return placed


def _pairs(tasks: dict[str, frozenset[int]]) -> set[Task]:
    return {(s, p) for s, ps in tasks.items() for p in ps}
