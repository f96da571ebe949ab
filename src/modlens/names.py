"""Names of things modlens can be asked for: the one registry type every kind of plug-in uses
(`Registry`: built-ins listed in modlens plus those installed packages add through Python entry
points), and unknown names with the close matches to suggest, worded once for the CLI,
study.toml validation and the registries."""
from __future__ import annotations

import difflib
import importlib
import warnings
from importlib import metadata
from importlib.metadata import EntryPoint
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, TypeGuard, TypeVar, cast

from modlens.errors import ErrorKind, ModlensError


def close_matches(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Known names that look like a misspelling of `name`, closest first."""
    return difflib.get_close_matches(name, list(known), n=n, cutoff=0.6)


class UnknownName(ModlensError, KeyError, ValueError):
    """A name no registry knows. A KeyError (as the detector and perturbation registries raised)
    and a ValueError (as the normalizer steps and exporters raised), printed as its message and
    its fix on one line (where it ends up inside another message; a bare KeyError would print
    its argument's repr)."""

    def __init__(self, what: str, name: str, known: Iterable[str]) -> None:
        self.what, self.name, self.known = what, name, list(known)
        self.suggestions = close_matches(name, self.known)
        fix = (f"did you mean {' or '.join(self.suggestions)}?" if self.suggestions
               else f"known: {', '.join(self.known)}")
        super().__init__(f"unknown {what} {name!r}", fix)

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"


def check_known(what: str, names: Iterable[str], known: Iterable[str]) -> None:
    """Raises UnknownName for the first name not in `known`."""
    known = list(known)
    for name in names:
        if name not in known:
            raise UnknownName(what, name, known)


class PluginError(ModlensError, RuntimeError):
    """A plug-in an installed package registered could not be loaded. Names the package, so the
    fix (reinstall or uninstall it) is obvious; the cause is chained. Other plug-ins are unaffected."""

    kind = ErrorKind.FAILED
    fix: str    # always one

    def __init__(self, what: str, name: str, package: str, err: BaseException) -> None:
        self.what, self.name, self.package = what, name, package
        super().__init__(f"{what} plug-in {name!r} from package {package} failed to load: {type(err).__name__}: {err}",
                         f"reinstall or uninstall {package.split()[0]}")


class PluginWarning(ModlensError, UserWarning):
    """An installed package's plug-in that was refused (it reuses a name already taken)."""


T = TypeVar("T")
B = TypeVar("B")


@dataclass(frozen=True)
class Kind(Generic[T]):
    """What a registry's names load to (`description`, for the error) and the check that a loaded
    object is one (`test`), which also gives `Registry.load` its type."""
    description: str
    test: Callable[[object], TypeGuard[T]]


def _is_module(found: object) -> TypeGuard[ModuleType]:
    return isinstance(found, ModuleType)


def _is_anything(found: object) -> TypeGuard[Any]:
    return True


MODULES: Kind[ModuleType] = Kind("a module", _is_module)
ANYTHING: Kind[Any] = Kind("anything", _is_anything)


def subclasses(base: Callable[..., B]) -> Kind[type[B]]:
    """A registry of classes (strategies, normalizer steps, attack parts): each a subclass of `base`
    (a class, typed as what makes a `B` so that an abstract base is accepted)."""
    cls = cast(type, base)

    def test(found: object) -> TypeGuard[type[B]]:
        return isinstance(found, type) and issubclass(found, cls)
    return Kind(f"a subclass of {cls.__name__}", test)


def instances(cls: type[B]) -> Kind[B]:
    """A registry of objects (report sections): each an instance of `cls`."""
    def test(found: object) -> TypeGuard[B]:
        return isinstance(found, cls)
    return Kind(f"a {cls.__name__}", test)


class Registry(Generic[T]):
    """The names of one kind of plug-in (detectors, dataset readers, fusions, ...) and what each
    one is: the built-ins modlens lists in `builtins` as "module" or "module:attr" (module relative
    to `package`, or a full module path from the top package: "modlens.daemon.serve"), then those
    installed packages add under the entry point `group`, found on first need (a built-in lookup
    never scans the installed packages) and imported only when loaded.

    `load(name)` returns the module (or its attribute) as a `T`, checked to be one (`kind`: a
    module, a subclass of a base, an instance) and to define each of `needs`; an unknown name
    raises UnknownName with the close matches, a plug-in that fails to import, is not of the kind
    or lacks one of `needs` raises PluginError naming its package. A plug-in reusing a built-in's
    name is refused with a PluginWarning: the built-in wins."""

    def __init__(self, what: str, package: str, builtins: Mapping[str, str], group: str | None = None,
                 needs: tuple[str, ...] = (), *, kind: Kind[T] = ANYTHING) -> None:
        self.what, self.package, self.builtins, self.group, self.needs = what, package, builtins, group, needs
        self.kind = kind
        self._plugins: dict[str, EntryPoint] | None = None

    # --- names ---------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Built-ins in their listed order, then plug-ins by name."""
        return [*self.builtins, *sorted(self.plugins())]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self.builtins or name in self.plugins()

    def check(self, names: Iterable[str]) -> None:
        """Raises UnknownName (with close matches) for the first name not registered."""
        for name in names:
            if name not in self:
                raise UnknownName(self.what, name, self.names())

    def origin(self, name: str) -> str | None:
        """None for a built-in, else "package version" of the plug-in's distribution."""
        if name in self.builtins:
            return None
        self.check([name])
        return _package(self.plugins()[name])

    # --- loading -------------------------------------------------------------------------------
    def module(self, name: str) -> str:
        """The full module path of the built-in `name` (without its ":attr")."""
        module = self.builtins[name].partition(":")[0]
        top = self.package.partition(".")[0]
        return module if module.startswith(top + ".") else f"{self.package}.{module}"

    def load(self, name: str) -> T:
        """The module (or "module:attr" attribute) registered under `name`. A built-in's import
        errors propagate as they are (a missing third-party dependency is the caller's to word);
        a built-in not of the kind or lacking one of `needs` is modlens's own bug (TypeError)."""
        if name in self.builtins:
            attr = self.builtins[name].partition(":")[2]
            found = importlib.import_module(self.module(name))
            return self._checked(getattr(found, attr) if attr else found,
                                 f"built-in {self.what} {name!r} ({self.builtins[name]})", "lacks")
        self.check([name])
        entry = self.plugins()[name]
        try:
            return self._checked(entry.load(), entry.value, "does not define")
        except Exception as err:  # anything a third-party import does: reported, never fatal to the others
            raise PluginError(self.what, name, _package(entry), err) from err

    def _checked(self, found: object, what: str, lacks: str) -> T:
        """`found` as a `T`; TypeError when it is not of the kind or lacks one of `needs` (callables)."""
        if not self.kind.test(found):
            raise TypeError(f"{what} is {found!r}, not {self.kind.description}")
        missing = [n for n in self.needs if not callable(getattr(found, n, None))]
        if missing:
            raise TypeError(f"{what} {lacks} {', '.join(missing)}")
        return found

    def plugins(self) -> dict[str, EntryPoint]:
        """name -> entry point of the installed plug-ins (found once per registry, see `refresh`)."""
        if self._plugins is None:
            self._plugins = self._discover()
        return self._plugins

    def refresh(self) -> None:
        """Forget the installed plug-ins found so far (after installing one in a running process)."""
        self._plugins = None

    def _discover(self) -> dict[str, EntryPoint]:
        found: dict[str, EntryPoint] = {}
        if not self.group:
            return found
        try:
            entries = list(metadata.entry_points(group=self.group))
        except Exception as err:  # a corrupt installed package must not stop the built-ins
            warnings.warn(f"cannot read installed {self.what} plug-ins: {err}", PluginWarning, stacklevel=3)
            return found
        for entry in entries:
            taken = "modlens's built-in" if entry.name in self.builtins else \
                _package(found[entry.name]) if entry.name in found else None
            if taken:  # the first registration stays: a plug-in never replaces what a study already means
                warnings.warn(f"{_package(entry)} registers {self.what} {entry.name!r}, the name of {taken}; "
                              f"its plug-in is ignored (rename it)", PluginWarning, stacklevel=3)
                continue
            found[entry.name] = entry
        return found


class ClassRegistry(Registry[type[B]]):
    """A registry of classes, each a subclass of `base` (strategies, normalizer steps, attack parts),
    that also makes one: `create(name, **options)`."""

    def __init__(self, what: str, package: str, builtins: Mapping[str, str], base: Callable[..., B],
                 group: str | None = None) -> None:
        super().__init__(what, package, builtins, group, kind=subclasses(base))

    def create(self, name: str, /, **options: Any) -> B:
        """An instance of the class registered under `name`, made with `options`."""
        return self.load(name)(**options)


def _package(entry: EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else f"(unknown package: {entry.value})"
