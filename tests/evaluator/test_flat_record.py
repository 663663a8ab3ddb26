"""The full check's flat comparison (watched.FlatRecord): it names every module the name-by-name check
would report, so checking only those finds the same replacements, and none where nothing changed."""

from __future__ import annotations

import sys
import types

import pytest
import torch
import torch.nn.functional

from evaluator.child import integrity
from evaluator.child.watched import FlatRecord, replaced_since, stale_modules


def replace_global(monkeypatch):
    monkeypatch.setattr(torch.nn.functional, "relu", lambda x, inplace=False: x)


def replace_member(monkeypatch):
    monkeypatch.setattr(torch.Tensor, "add", lambda self, other: self)


def add_member(monkeypatch):
    monkeypatch.setattr(torch.nn.Module, "brand_new_call", lambda self: None, raising=False)


def remove_member(monkeypatch):
    monkeypatch.delattr(torch.nn.Module, "register_buffer")
    monkeypatch.setattr(torch.nn.Module, "brand_new_call", lambda self: None, raising=False)


def swap_bases(monkeypatch):
    """(monkeypatch would delete __bases__ to undo it: the undo is returned instead)"""
    bases = torch.nn.ReLU6.__bases__
    torch.nn.ReLU6.__bases__ = (torch.nn.Module,)

    def undo():
        torch.nn.ReLU6.__bases__ = bases

    return undo


def replace_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.random", types.ModuleType("torch.random"))


def rebind_submodule(monkeypatch):
    monkeypatch.setattr(torch, "random", types.ModuleType("torch.random"))


def add_top_level_name(monkeypatch):
    monkeypatch.setattr(torch, "planted_backend", object(), raising=False)


def change_module_class(monkeypatch):
    class Module(types.ModuleType):
        pass

    monkeypatch.setattr(torch.nn.functional, "__class__", Module)


CHANGES = [
    replace_global,
    replace_member,
    add_member,
    remove_member,
    swap_bases,
    replace_module,
    rebind_submodule,
    add_top_level_name,
    change_module_class,
]


@pytest.fixture(scope="module")
def snapshot():
    return integrity.Snapshot.take()


def test_nothing_changed_names_no_module(snapshot):
    assert snapshot.flat.suspects() == []


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__)
def test_a_change_is_found_by_the_flat_comparison_as_by_the_name_by_name_one(
    snapshot, change, monkeypatch, request
):
    undo = change(monkeypatch)
    if undo is not None:
        request.addfinalizer(undo)
    everywhere = replaced_since(snapshot.modules)
    assert everywhere
    assert replaced_since(snapshot.modules, snapshot.flat.suspects()) == everywhere
    assert set(snapshot.full(operators=False)["functions_replaced"]) >= everywhere


def test_a_refresh_records_again_the_modules_changed_before_it(monkeypatch):
    booted = integrity.Snapshot.take()
    replace_member(monkeypatch)
    stale = {name for name, _ in stale_modules(booted.modules, booted.flat)}
    assert {name for name in booted.modules if name.startswith("torch")} >= stale
    assert "torch._tensor" in stale or "torch" in stale
    refreshed = booted.refresh({})
    assert isinstance(refreshed.flat, FlatRecord)
    assert refreshed.full(operators=False)["functions_replaced"] == []
