""":class:`clusterstack.clients.Clients` for tests: every outside system a fake, so a test that
touches a system it did not set up fails at once instead of reaching the network.

``fake_clients(engine=eng, kubernetes=…)`` — the fields given, every other factory raising
AssertionError naming the system; ``clock`` a :class:`fakes.clock.FakeClock` and ``git`` the
real adapter (tests run git on real temporary repositories) unless given.
"""

from __future__ import annotations

from typing import Any

from clusterstack.adapters.git import Git
from clusterstack.clients import Clients
from fakes.clock import FakeClock


def _unexpected(system: str):
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError(f"this test did not expect to reach {system}")
    return refuse


class _NoGcp:
    def __getattr__(self, name: str) -> Any:
        return _unexpected(f"GCP ({name})")


def engine_of(eng: Any):
    """``Clients.engine`` answering with ``eng`` for any project (not bound to it)."""
    return lambda _ws, **_kw: eng


def bound_engine(eng: Any):
    """``Clients.engine`` answering with ``eng`` bound (``FakeEngine.bind``) to the project
    directory, config file and environment the caller asked for."""
    return lambda _ws, *, project_dir=None, config_file=None, env=None: eng.bind(
        project_dir=project_dir, config_file=config_file, env=env)


def fake_clients(**fields: Any) -> Clients:
    """Clients whose unset systems refuse to be used (see the module docstring). ``engine``
    may be a FakeEngine (used for every project, unbound) or a factory."""
    engine = fields.pop("engine", None)
    if engine is not None and not callable(engine):
        engine = engine_of(engine)
    base = dict(engine=engine or _unexpected("the Pulumi engine"), git=Git,
                kubernetes=_unexpected("Kubernetes"), cloud_run=_unexpected("Cloud Run"),
                secret_manager=_unexpected("Secret Manager"), gcp=_NoGcp(),
                github=_unexpected("GitHub"), clock=FakeClock())
    base.update(fields)
    return Clients(**base)
