"""The watched modules of the kernel's process (torch, Triton, the harness and the standard modules it looks
names up on): their globals and classes recorded by identity before candidate code runs, and what was
replaced since (evaluator.child.integrity's full check)."""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from evaluator.child.code_swaps import Runs, note_runs

# What torch.compile itself sets on the class of a module it compiles (torch._dynamo.mutation_guard).
COMPILE_SETS = {"__setattr__", "___needs_mutation_patch"}
WATCHED_MODULE_PREFIXES = ("torch", "triton", "evaluator", "time", "math")
# The standard modules the harness's own code in the kernel's process looks names up on when it runs (its
# pipes, its messages, its checks): a function replaced there (json.dumps rewriting a round's records, say)
# would act for the harness as surely as one of torch's.
WATCHED_STANDARD_MODULES = ("builtins", "json", "os", "posix", "select", "struct", "mmap", "socket", "gc")
WATCHED_CLASS_MODULES = ("torch", "triton", "json")  # classes whose attributes are watched one by one
HARNESS_MODULES = "evaluator.child"  # whose every global is watched, not only their functions
# Modules where a global added since the snapshot counts, unless it is a submodule imported since: torch's
# top level is where torch itself looks names up at call time (torch.manual_seed: torch.mps, torch.xpu, and
# a custom backend's module by its name).
ADDED_NAMES_WATCHED = ("torch",)
DESCRIPTORS = (staticmethod, classmethod, property)
MISSING = object()


def watched_modules() -> list[tuple[str, types.ModuleType]]:
    """Every loaded module of torch (torch._C's submodules too), of the harness, time, math, and the standard
    modules the harness's code looks names up on."""
    found = []
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (
            name.startswith(WATCHED_MODULE_PREFIXES) or name.split(".")[0] in WATCHED_STANDARD_MODULES
        ):
            found.append((name, module))
    return found


@dataclass
class Watched:
    """One watched module as the snapshot found it: the ids of the globals watched (every global of the
    harness's own child modules, the callables elsewhere) and, for each class of torch or Triton it binds,
    the ids of all the class's members (a member that becomes callable counts as much as a replaced one)."""

    ids: dict[str, int]
    classes: dict[str, dict[str, int]]
    module_id: int = 0  # the module object itself (sys.modules[name])
    submodules: dict[str, int] = field(default_factory=dict)  # globals bound to its own submodules
    names: frozenset[str] = frozenset()  # every global's name, where names added count (ADDED_NAMES_WATCHED)
    module_type: int = 0  # the module's class: attribute lookups on the module go through it
    bases: dict[str, int] = field(default_factory=dict)  # each watched class's __bases__ tuple
    # Every global's name and identity, watched or not (kept alive): what a refresh looks at to find a module
    # the harness's own code changed in any way since (a global added, or one that became callable).
    every: tuple[tuple[str, ...], tuple[int, ...]] = ((), ())
    # Each watched class itself, checked as recorded even where no global binds it any more, and whatever its
    # __module__ says later.
    class_objects: dict[str, type] = field(default_factory=dict)

    def __post_init__(self):
        # The same ids as tuples, in the dicts' order: a check compares them at once, in C, and goes name by
        # name only where something differs.
        self.values = tuple(self.ids.values())
        self.class_values = {name: tuple(members.values()) for name, members in self.classes.items()}


def watched_global(module: str, name: str, value: Any) -> bool:
    """Whether a global of a watched module is watched: in the harness's own child modules every one (a
    rebound module, constant or switch counts), elsewhere the callables that are not modules."""
    if module.startswith(HARNESS_MODULES):
        return not name.startswith("__")
    return callable(value) and not isinstance(value, types.ModuleType)


def watched_class(value: Any) -> bool:
    return isinstance(value, type) and str(getattr(value, "__module__", "")).startswith(WATCHED_CLASS_MODULES)


def watched_member(member: Any) -> bool:
    return callable(member) or isinstance(member, DESCRIPTORS)


def record_modules(
    keep: list[Any],
    runs: dict[int, Runs] | None = None,
    modules: list[tuple[str, types.ModuleType]] | None = None,
) -> dict[str, Watched]:
    """Every watched module's (or those of `modules`) watched globals and classes, by module name (their
    objects kept alive, so their ids stay unique); `runs` gathers what each watched Python function runs,
    once per function."""
    record = {}
    runs = {} if runs is None else runs
    shared: dict[int, dict[str, int]] = {}  # one record of a class, however many modules bind it
    for name, module in watched_modules() if modules is None else modules:
        try:
            namespace = dict(vars(module))
        except TypeError:
            continue
        found = {key: value for key, value in namespace.items() if watched_global(name, key, value)}
        keep.extend(found.values())
        classes, bases, class_objects = {}, {}, {}
        for attribute, value in found.items():
            if watched_class(value):
                if id(value) not in shared:
                    members = dict(vars(value))
                    keep.extend(members.values())
                    keep.append(value.__bases__)
                    shared[id(value)] = {key: id(member) for key, member in members.items()}
                    note_runs(runs, f"{name}.{attribute}", members)
                classes[attribute] = shared[id(value)]
                bases[attribute] = id(value.__bases__)
                class_objects[attribute] = value
        note_runs(runs, name, found)
        submodules = {key: id(value) for key, value in namespace.items() if own_submodule(name, key, value)}
        names = frozenset(namespace) if name in ADDED_NAMES_WATCHED else frozenset()
        ids = {key: id(value) for key, value in found.items()}
        keep.append(type(module))
        keep.extend(namespace.values())
        every = tuple(namespace), tuple(map(id, namespace.values()))
        record[name] = Watched(
            ids, classes, id(module), submodules, names, id(type(module)), bases, every, class_objects
        )
    return record


def own_submodule(module: str, name: str, value: Any) -> bool:
    """Whether a module's global is its submodule of that name, the one sys.modules holds."""
    # type(), not isinstance: isinstance reads __class__, which some of torch's deprecated names warn on
    return issubclass(type(value), types.ModuleType) and sys.modules.get(f"{module}.{name}") is value


def module_changes(name: str, module: types.ModuleType, watched: Watched) -> set[str]:
    """The module object replaced in sys.modules, a submodule global rebound (to a look-alike, say), and
    names added where they count."""
    changed = set()
    if watched.module_id and id(module) != watched.module_id:
        changed.add(f"sys.modules[{name!r}]")
    if watched.module_type and id(type(module)) != watched.module_type:
        changed.add(f"{name}.__class__")
    namespace = vars(module)
    for attribute, ident in watched.submodules.items():
        value = namespace.get(attribute, MISSING)
        if value is not MISSING and id(value) != ident:
            changed.add(f"{name}.{attribute}")
    if watched.names:
        added = namespace.keys() - watched.names
        changed |= {
            f"{name}.{key}"
            for key in added
            if not key.startswith("__") and not own_submodule(name, key, namespace[key])
        }
    return changed


def replaced_since(record: dict[str, Watched], names: Iterable[str] | None = None) -> set[str]:
    """Names whose object changed since the record (a name gone, or no longer watched, does not count);
    for the classes, also members added since (they shadow a base's), but those torch.compile sets. Only
    the modules named, where `names` is given (FlatRecord.suspects: those where anything differs)."""
    replaced = set()
    judged: dict[int, set[str]] = {}  # by the class's record, which every module binding it shares
    for name in record if names is None else names:
        watched = record[name]
        module = sys.modules.get(name)
        try:
            namespace = vars(module)
        except TypeError:
            continue
        replaced |= module_changes(name, module, watched)
        if tuple(map(id, map(namespace.get, watched.ids, repeat(MISSING)))) != watched.values:
            replaced |= globals_replaced(name, namespace, watched)
        for attribute, klass in watched.class_objects.items():
            ids = watched.classes[attribute]
            if id(ids) not in judged:
                values, bases = watched.class_values[attribute], watched.bases[attribute]
                judged[id(ids)] = class_verdict(klass, ids, values, bases)
            replaced |= {f"{name}.{attribute}.{member}" for member in judged[id(ids)]}
    return replaced


def class_verdict(klass: type, ids: dict[str, int], values: tuple[int, ...], bases: int) -> set[str]:
    """A recorded class's members replaced or added since, and its bases if they changed: its members'
    ids looked up by name and compared at once, one by one only where something differs."""
    members = vars(klass)
    changed = set()
    if members.keys() != ids.keys() or tuple(map(id, map(members.get, ids, repeat(MISSING)))) != values:
        changed = class_changes(klass, ids)
    if id(klass.__bases__) != bases:
        changed.add("__bases__")
    return changed


def globals_replaced(name: str, namespace: dict[str, Any], watched: Watched) -> set[str]:
    """A module's watched globals bound to another watched object since the record (one gone does not
    count)."""
    replaced = set()
    for attribute, ident in watched.ids.items():
        value = namespace.get(attribute, MISSING)
        if value is not MISSING and id(value) != ident and watched_global(name, attribute, value):
            replaced.add(f"{name}.{attribute}")
    return replaced


def class_changes(klass: type, ids: dict[str, int]) -> set[str]:
    """A class's callable members that replaced another object since, and those added since."""
    members = vars(klass)
    changed = {
        key
        for key, ident in ids.items()
        if key in members and id(members[key]) != ident and watched_member(members[key])
    }
    if members.keys() != ids.keys():  # only then look for members added
        changed |= {
            key
            for key in members.keys() - ids.keys()
            if key not in COMPILE_SETS and watched_member(members[key])
        }
    return changed


def stale_modules(record: dict[str, Watched], flat: FlatRecord) -> list[tuple[str, types.ModuleType]]:
    """The watched modules loaded since the record, those with any global added, removed or rebound since
    (watched or not: one may have become watched), and those where a class changed (flat: the record's)."""
    stale = []
    suspects = set(flat.suspects())
    for name, module in watched_modules():
        watched = record.get(name)
        if (
            watched is None
            or id(module) != watched.module_id
            or (tuple(vars(module)), tuple(map(id, vars(module).values()))) != watched.every
            or (name in suspects and replaced_since(record, [name]))
        ):
            stale.append((name, module))
    return stale


def flat_record(record: dict[str, Watched]) -> FlatRecord:
    """FlatRecord(record), the cyclic collector paused meanwhile: the build makes some hundred thousand
    references in a few containers, and a full collection over the process's heap falling inside it would
    cost several times the build (taken before candidate code runs, so no kernel's collection is moved)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return FlatRecord(record)
    finally:
        if collecting:
            gc.enable()


class FlatRecord:
    """A record's identities in flat sequences, compared at once in C: the modules in sys.modules and their
    classes, each module's watched globals and submodules, each watched class's members, member count and
    bases, and the names of the modules where names added count. suspects() names the modules where anything
    differs (usually none), the only ones replaced_since then checks name by name."""

    def __init__(self, record: dict[str, Watched]):
        self.names = list(record)
        self.modules = [sys.modules.get(name) for name in self.names]
        self.module_ids = tuple(watched.module_id for watched in record.values())
        self.module_types = tuple(watched.module_type for watched in record.values())
        entries = list(enumerate(zip(self.modules, record.values(), strict=True)))
        self.always = {
            index for index, (module, watched) in entries if module is None or id(module) != watched.module_id
        }
        present = [
            (index, vars(module), watched) for index, (module, watched) in entries if index not in self.always
        ]
        # where names added count: the namespace and the names it had
        self.keyed = [
            (index, namespace, watched.names) for index, namespace, watched in present if watched.names
        ]
        self.globals = Flat.of(
            (namespace, {**watched.ids, **watched.submodules}, index) for index, namespace, watched in present
        )
        unique: dict[int, int] = {}  # a class record's id: the class's index in self.classes
        self.classes: list[tuple[type, dict[str, int]]] = []
        self.class_modules: list[list[int]] = []
        bindings = []  # (the class, its bases' id as recorded, the binding module's index)
        for index, watched in enumerate(record.values()):
            for attribute, klass in watched.class_objects.items():
                members = watched.classes[attribute]
                if unique.setdefault(id(members), len(self.classes)) == len(self.classes):
                    self.classes.append((klass, members))
                    self.class_modules.append([])
                self.class_modules[unique[id(members)]].append(index)
                bindings.append((klass, watched.bases[attribute], index))
        self.bound = [klass for klass, _, _ in bindings]
        self.bases = tuple(bases for _, bases, _ in bindings)
        self.binders = [index for _, _, index in bindings]
        # Each class's members as recorded, in its dict's order: compared in that order, without a lookup
        self.proxies = [vars(klass) for klass, _ in self.classes]
        self.member_keys = tuple(chain.from_iterable(members for _, members in self.classes))
        self.member_ids = tuple(chain.from_iterable(members.values() for _, members in self.classes))
        sizes = [len(members) for _, members in self.classes]
        self.member_owners = list(chain.from_iterable(map(repeat, range(len(sizes)), sizes)))

    def suspects(self) -> list[str]:
        """The modules where any recorded identity differs now, in the record's order."""
        found = set(self.always)
        found |= {index for index, namespace, names in self.keyed if namespace.keys() - names}
        found |= differing(tuple(map(id, map(sys.modules.get, self.names))), self.module_ids)
        found |= differing(tuple(map(id, map(type, self.modules))), self.module_types)
        found |= self.globals.changed(dict.get)
        found |= {self.binders[at] for at in differing(tuple(map(id, map(BASES, self.bound))), self.bases)}
        found |= {index for at in self.changed_classes() for index in self.class_modules[at]}
        return [self.names[index] for index in sorted(found)]

    def changed_classes(self) -> set[int]:
        """The classes (their index) with a member replaced, added or removed, or moved in their dict."""
        if tuple(chain.from_iterable(self.proxies)) != self.member_keys:  # one added, removed or moved
            return {
                at
                for at, (proxy, (_, members)) in enumerate(zip(self.proxies, self.classes, strict=True))
                if tuple(proxy) != tuple(members) or tuple(map(id, proxy.values())) != tuple(members.values())
            }
        now = tuple(map(id, chain.from_iterable(map(MappingProxyType.values, self.proxies))))
        return {self.member_owners[at] for at in differing(now, self.member_ids)}


@dataclass
class Flat:
    """Mappings, keys and the ids recorded under them, with what each entry belongs to (its owner)."""

    mappings: list[Any]
    keys: list[str]
    ids: tuple[int, ...]
    owners: list[int]

    @classmethod
    def of(cls, groups: Iterable[tuple[Any, dict[str, int], int]]) -> Flat:
        """From (a mapping, the ids recorded under its keys, their owner) groups, joined in C."""
        groups = list(groups)
        if not groups:
            return cls([], [], (), [])
        mappings, recorded, owners = zip(*groups, strict=True)
        sizes = list(map(len, recorded))
        return cls(
            list(chain.from_iterable(map(repeat, mappings, sizes))),
            list(chain.from_iterable(recorded)),
            tuple(chain.from_iterable(ids.values() for ids in recorded)),
            list(chain.from_iterable(map(repeat, owners, sizes))),
        )

    def changed(self, get: Any) -> set[int]:
        """The owners of the entries whose id differs now (get: the mappings' own get method)."""
        now = tuple(map(id, map(get, self.mappings, self.keys, repeat(MISSING))))
        return {self.owners[at] for at in differing(now, self.ids)}


BASES = attrgetter("__bases__")


def differing(now: tuple, recorded: tuple) -> set[int]:
    """The positions where two tuples of ids differ (none, at C speed, where they are equal)."""
    if now == recorded:
        return set()
    return {at for at, (a, b) in enumerate(zip(now, recorded, strict=True)) if a != b}
