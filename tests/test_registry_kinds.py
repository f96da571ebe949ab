"""`Registry[T]` checks what it loads is a `T` (a module, a subclass of the kind's base, an
instance), so the registries return typed objects without wrapping `load` again."""
from __future__ import annotations

import pytest

from modlens.analysis.sections import REGISTRY as SECTIONS
from modlens.analysis.sections.base import Section
from modlens.detectors.registry import DETECTORS
from modlens.names import MODULES, ClassRegistry, PluginError, Registry, instances
from modlens.normalize.steps import REGISTRY as STEPS
from modlens.normalize.steps._base import Step
from modlens.perturb import registry as strategies
from modlens.perturb.strategies._word import Strategy
from test_plugins import install


def test_each_kind_loads_what_it_says():
    assert DETECTORS.load("profanity-check").__name__ == "modlens.detectors.profanity"
    assert isinstance(strategies.create("mixed_case"), Strategy)
    assert issubclass(strategies.REGISTRY.load("mixed_case"), Strategy)
    assert all(isinstance(SECTIONS.load(k), Section) for k in SECTIONS.builtins)
    assert STEPS.create("leet").name == "leet"


def test_a_built_in_of_the_wrong_kind_is_modlens_own_bug():
    modules = Registry("thing", "modlens", {"names": "names:Registry"}, kind=MODULES)
    with pytest.raises(TypeError, match=r"built-in thing 'names' \(names:Registry\) is .*, not a module"):
        modules.load("names")
    classes = ClassRegistry("strategy", "modlens.perturb.strategies", {"x": "_word:WordEdit"}, Strategy)
    with pytest.raises(TypeError, match="not a subclass of Strategy"):
        classes.create("x")
    objects = Registry("report section", "modlens", {"s": "names:MODULES"}, kind=instances(Section))
    with pytest.raises(TypeError, match="not a Section"):
        objects.load("s")


def test_a_plug_in_of_the_wrong_kind_is_reported_with_its_package(tmp_path, monkeypatch):
    site = install(tmp_path / "site", "modlens-odd", "0.3", {"odd_steps.py": "class NotAStep:\n    pass\n"},
                   {"modlens.normalizer_steps": {"odd": "odd_steps:NotAStep"}})
    monkeypatch.syspath_prepend(str(site))
    reg = ClassRegistry("normalizer step", "modlens.normalize.steps", {}, Step, group="modlens.normalizer_steps")
    with pytest.raises(PluginError, match="normalizer step plug-in 'odd' from package modlens-odd 0.3 failed to load: "
                                          "TypeError: odd_steps:NotAStep is .*, not a subclass of Step"):
        reg.create("odd")
