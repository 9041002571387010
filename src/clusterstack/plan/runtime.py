"""Run a real Pulumi program under Pulumi's mock runtime and record what it declares.

No CLI, no credentials, no network: the SDK's ``MockMonitor`` stands in for the engine. We
subclass it to capture each ``RegisterResource`` request, which carries the resource options
(``protect``, ``ignoreChanges``, ``retainOnDelete``, ``replaceOnChanges``, ``replaceWith``,
``importId``, ``parent``, ``dependencies``, ``propertyDependencies``) that ``MockResourceArgs``
does not expose.

The program is the project's own ``__main__.py``, executed as Pulumi's Python host would
(``runpy`` with ``__name__ == "__main__"``) after the stack config is taken from the
checked-in ``Pulumi.<stack>.yaml`` (never from ``PULUMI_CONFIG*`` environment variables).

Import IDs: while the program runs, :func:`clusterstack.pulumi.importids.importable` records each
leaf resource's import ID into a registry opened here; afterwards each resource's URN is
resolved and the ID attached to it as ``adoptId`` (never as Pulumi's ``importId`` option).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import runpy
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import resource as presource
from pulumi.runtime import rpc as prpc
from pulumi.runtime import settings as psettings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import resource_pb2, source_pb2
from pulumi.runtime.stack import run_in_stack
from clusterstack import reads, secrets
from clusterstack.errors import ClusterstackError
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import importids as import_ids
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.pulumi.urn import child_urn, provider_urn
from clusterstack.pulumi.values import plan_value
from clusterstack.workspace import ProjectInfo


_LOCK = threading.Lock()  # the Pulumi SDK's settings are process-global: one plan at a time

# Environment variables a program still sees while it is planned: process plumbing only.
_KEPT_ENV = frozenset({"PATH", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "TZ", "SYSTEMROOT"})


@contextlib.contextmanager
def hermetic_environ() -> Iterator[None]:
    """Hide every environment variable but ``PATH``, temp-dir and locale ones for the block.

    Rule: a plan comes only from reviewed files. The SDKs otherwise read configuration from
    the environment: ``pulumi.Config`` falls back to ``PULUMI_CONFIG_<KEY>`` and
    ``PULUMI_CONFIG`` for a key the stack file lacks, and provider constructors fill unset
    inputs from variables (``pulumi_gcp.Provider`` region/zone from ``GOOGLE_REGION``/
    ``GOOGLE_ZONE``, ``pulumi_kubernetes.Provider`` flags from ``PULUMI_K8S_*`` and
    ``kubeconfig`` from ``KUBECONFIG``), which would make the same checkout plan differently
    on two machines. The environment is restored exactly on exit (callers hold ``_LOCK``).
    """
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({k: v for k, v in saved.items() if k in _KEPT_ENV or k.startswith("LC_")})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _struct(msg: Any) -> dict[str, Any]:
    return plan_value(json_format.MessageToDict(msg)) if msg is not None else {}


class _Mocks(pmocks.Mocks):
    """Echo inputs as outputs; deterministic IDs (``<name>-id``)."""

    def new_resource(self, args: pmocks.MockResourceArgs):
        return (args.resource_id or f"{args.name}-id", dict(args.inputs))

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return {}, []   # no result, no check failures (the mock iterates them: [] and not None)


@contextlib.contextmanager
def _worker_loop_scope() -> Iterator[None]:
    """Close the event loop a MockMonitor call creates on an executor thread.

    The SDK calls the monitor from the run's default executor, and the mock's
    ``_ensure_event_loop`` gives each worker thread a fresh event loop that nothing closes:
    every plan would leak a few loops (an epoll fd and a socket pair each) until the garbage
    collector finds them, warning "unclosed event loop". The main thread's loop is the run's
    own and is left alone.
    """
    if threading.current_thread() is threading.main_thread():
        yield
        return
    try:
        asyncio.get_event_loop()
        had_loop = True
    except RuntimeError:
        had_loop = False
    try:
        yield
    finally:
        if not had_loop:
            try:
                loop = asyncio.get_event_loop()
            except RuntimeError:
                loop = None
            asyncio.set_event_loop(None)
            if loop is not None and not loop.is_running():
                loop.close()


_SIG = prpc._special_sig_key.encode()  # the key of every special value's struct (rpc.py)


class CapturingMonitor(pmocks.MockMonitor):
    """A MockMonitor that records every RegisterResource request and the stack's outputs.

    ``mocks`` answers the resources' outputs and the invokes (default :class:`_Mocks`);
    ``observe``, when given, sees each raw ``RegisterResource`` request (a
    ``resource_pb2.RegisterResourceRequest``) before it is recorded.
    """

    def __init__(self, mocks: pmocks.Mocks | None = None,
                 observe: Callable[[Any], None] | None = None) -> None:
        self._pending: dict[str, tuple[str, Any]] = {}  # urn → (ID, struct): see resources
        self._pending_lock = threading.Lock()
        super().__init__(mocks if mocks is not None else _Mocks())
        self._echoes = type(self.mocks) is _Mocks  # inputs are the state: see _echo
        self._observe = observe
        self.records: list[PlannedResource] = []
        self.stack_outputs: dict[str, Any] = {}
        self._stack_urn: str | None = None

    @property
    def resources(self) -> dict[str, Any]:  # the SDK mock's registrations (``getResource``)
        """``{urn: MockMonitor.ResourceRegistration}``, as the SDK mock keeps them. A
        registration :meth:`_echo` answered for the default mocks is kept as its request's
        struct and deserialized here, when the mock first reads them (a ``getResource`` invoke,
        ``ExistsResource``): a plan of thousands of resources reads none."""
        with self._pending_lock:  # the SDK calls the monitor from several executor threads
            for urn, (id_, struct) in self._pending.items():
                self._resources[urn] = pmocks.MockMonitor.ResourceRegistration(
                    urn, id_, prpc.deserialize_properties(struct))
            self._pending.clear()
            return self._resources

    # The SDK declares ``resources`` a plain attribute (pulumi/runtime/mocks.py:198); this property
    # with its setter serves each of the SDK's reads and writes of it (mocks.py:205, 222, 247,
    # 295, 304, 332), which no annotation can say of an attribute turned property.
    @resources.setter
    def resources(self, value: dict[str, Any]) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        with self._pending_lock:
            self._resources = value
            self._pending.clear()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The engine's URN rule (:func:`clusterstack.pulumi.urn.child_urn`, Pulumi
        ``resource.NewURN``): the parent's full qualified type joined with ``$``, except under
        the root Stack. The SDK mock keeps only the last segment and includes the Stack type,
        which would not match real state."""
        return child_urn(parent or None, pulumi.get_stack(), pulumi.get_project(), type_, name)

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        if self._observe is not None:
            self._observe(request)
        response = self._echo(request)
        if response is None:
            with _worker_loop_scope():
                response = super().RegisterResource(request)
        urn = response.urn
        if request.type == STACK_TYPE:
            self._stack_urn = urn
        self.records.append(PlannedResource(
            urn=urn, type=request.type, name=request.name, custom=bool(request.custom),
            parent=request.parent or None, provider=provider_urn(request.provider),
            inputs=_struct(request.object),
            dependencies=tuple(sorted(set(request.dependencies))),
            protect=bool(request.protect), retain_on_delete=bool(request.retainOnDelete),
            ignore_changes=tuple(request.ignoreChanges),
            delete_before_replace=bool(request.deleteBeforeReplace),
            import_id=request.importId or None, version=request.version or None,
            replace_on_changes=tuple(request.replaceOnChanges),
            replace_with=tuple(sorted(set(request.replace_with))),
            property_dependencies={k: tuple(sorted(set(v.urns)))
                                   for k, v in sorted(request.propertyDependencies.items()) if v.urns}))
        return response

    def _echo(self, request) -> Any:
        """``MockMonitor.RegisterResource``'s response without its round trip, or None.

        The SDK's mock (pulumi 3.272.0, ``pulumi/runtime/mocks.py:308-334``) deserializes the
        request's properties (``rpc.deserialize_properties``), asks the mocks for the state and
        serializes that back (``_sync_await(rpc.serialize_properties(state, {}))``: an event
        loop pumped on the worker thread per resource, ~0.3 ms). :class:`_Mocks` returns the
        inputs as the state, and for a property struct holding no special value and no null
        that round trip is the identity (``rpc.py:824-895``, ``1129-1167``: plain strings,
        numbers, booleans, lists and maps come back as they went; the unknown sentinel string
        becomes ``Unknown()`` under a preview and serializes to the same sentinel; only nulls,
        which both directions drop from maps, and the signature-keyed secrets, resource
        references, assets and output values change shape). So such a request is answered
        with its own struct, checked on the serialized bytes: no signature key
        (``rpc._special_sig_key``) and no encoded null (``Value.null_value``: the bytes
        ``08 00``; a false match only takes the SDK's path). The registration the mock keeps for
        ``getResource`` invokes is the SDK's; for the default :class:`_Mocks` it is deserialized
        only when read (:attr:`resources`), since their state is the inputs. Plan bytes are unchanged (the golden
        plans). Measured (2,000 scale groups, CPU of the plan, three alternating pairs under load):
        8.6–11.4 → 7.0–7.8 s.
        """
        if request.type == STACK_TYPE:
            return None
        raw = request.object.SerializeToString()
        if _SIG in raw or b"\x08\x00" in raw:
            return None
        if self._echoes:  # _Mocks: the inputs are the state and the ID is known without them
            urn = self.make_urn(request.parent, request.type, request.name)
            id_ = request.importId or f"{request.name}-id"
            with self._pending_lock:
                self._pending[urn] = (id_, request.object)
            return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=request.object)
        inputs = prpc.deserialize_properties(request.object)
        id_, state = self.mocks.new_resource(pmocks.MockResourceArgs(
            typ=request.type, name=request.name, inputs=inputs, provider=request.provider,
            resource_id=request.importId, custom=request.custom or False, transforms=[]))
        if state != inputs:
            return None  # not an echo after all: let the SDK serialize it
        urn = self.make_urn(request.parent, request.type, request.name)
        # the SDK keeps the mocks' ID as new_resource returns it, None included (mocks.py:149,
        # 289-295), in a registration its NamedTuple types ``id: str`` (mocks.py:194)
        self.resources[urn] = pmocks.MockMonitor.ResourceRegistration(
            urn, id_, state)  # pyright: ignore[reportArgumentType]
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_ or "", object=request.object)

    def ReadResource(self, request):  # noqa: N802
        with _worker_loop_scope():
            return super().ReadResource(request)

    def Invoke(self, request):  # noqa: N802
        with _worker_loop_scope():
            return super().Invoke(request)

    def RegisterResourceOutputs(self, request):  # noqa: N802
        if request.urn == self._stack_urn:
            self.stack_outputs = _struct(request.outputs)
        return super().RegisterResourceOutputs(request)


async def _resolve_import_ids(registry: import_ids.Registry) -> dict[str, str]:
    """``{urn: import ID}`` of the registrations the program made (see
    :mod:`clusterstack.pulumi.importids`), each URN read with the public ``resource.urn.future()``.
    An ID given as an Output that is unknown offline becomes ``<PLACEHOLDER>``."""
    regs = registry.registrations
    urns = await asyncio.gather(*(reg.resource.urn.future() for reg in regs))
    values = await asyncio.gather(*(
        reg.import_id.future() if isinstance(reg.import_id, pulumi.Output) else _known(reg.import_id)
        for reg in regs))
    out: dict[str, str] = {}
    for urn, value, reg in zip(urns, values, regs):
        if not urn:
            raise RuntimeError(f"no URN for a resource with import ID {reg.import_id!r}")
        out[urn] = value if isinstance(value, str) and value else import_ids.PLACEHOLDER
    return out


async def _known(value: str) -> str:
    return value


@contextlib.contextmanager
def _no_source_positions() -> Iterator[None]:
    """Skip the SDK's per-resource stack-trace capture for the block.

    ``pulumi.runtime.resource._get_stack_trace`` walks and formats the Python stack for every
    registration (for the engine's source positions); a plan never uses them and it costs
    ~12 % of a stack's plan time (measured with cProfile, bench/plan_bench.py). Private SDK
    name: when it is absent the block simply runs unchanged.
    """
    target = getattr(presource, "_get_stack_trace", None)
    if target is None:
        yield
        return
    presource._get_stack_trace = lambda: source_pb2.StackTrace()
    try:
        yield
    finally:
        presource._get_stack_trace = target


_GC_FROZEN = False


def _freeze_imported_objects() -> None:
    """After the first plan in a process, move the surviving objects — mostly the provider
    SDK modules, hundreds of thousands of objects — out of the cyclic GC's reach
    (``gc.freeze``). Without it every full collection during later plans walks them all:
    mean plan time per stack 85 ms → 64 ms and worst case 365 ms → 95 ms over 50 stacks
    (bench/plan_bench.py). Garbage of the first plan is collected first, so nothing leaks."""
    global _GC_FROZEN
    if not _GC_FROZEN:
        gc.collect()
        gc.freeze()
        _GC_FROZEN = True


@contextlib.contextmanager
def _plan_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block (one plan), its previous state restored.

    A plan allocates tens of objects per resource (the SDK's Outputs, futures, protobuf
    messages) that live until the plan ends; with the collector on, every generation-2 pass
    walks all of them again, so plan time bent upwards with the resource count
    (bench/scale_bench.py: 100 scale groups 2.0 → 0.66 s, 2,000 groups 35 → 18 s under load).
    The plan's cyclic garbage is collected by the first collection after the block (on the
    first plan, :func:`_freeze_imported_objects` collects it before freezing)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run_program(project: str, stack: str, config: dict[str, Any],
                program: Callable[[], None], *, mocks: pmocks.Mocks | None = None,
                observe: Callable[[Any], None] | None = None) -> StackPlan:
    """Run ``program`` as stack ``project/stack`` under mocks with ``config``; return its plan.

    ``mocks`` and ``observe`` go to :class:`CapturingMonitor` (tests: answer like a cloud API,
    see the raw requests); the defaults are what every plan uses.

    Secret specs are never resolved (see :func:`clusterstack.secrets.offline`) and the program
    sees no configuration from the environment (see :func:`hermetic_environ`). Exceptions from
    the program propagate unchanged (a ConfigError stays a ConfigError); two registrations with
    one URN raise ClusterstackError, as the engine refuses them (its diagnostic 2001,
    ``GetDuplicateResourceURNError``: "Duplicate resource URN '…'; try giving it a unique name";
    the SDK's mock monitor does not check it).
    """
    with _LOCK, secrets.offline(), hermetic_environ(), _no_source_positions(), _plan_gc():
        monitor = CapturingMonitor(mocks, observe)
        psettings.configure(pmocks.MockSettings(
            monitor=monitor, monitor_features=set(monitor.GetDeploymentInfo(None).supportedFeatures),
            engine=pmocks.MockEngine(None), project=project, stack=stack, dry_run=True,
            organization="organization", callbacks=None, root_directory=None, parallel=None))
        psettings.ROOT.set(None)
        set_all_config(dict(config), [])
        loop = asyncio.new_event_loop()
        try:
            asyncio.set_event_loop(loop)
            with import_ids.collecting() as registry:
                loop.run_until_complete(run_in_stack(program))
            adopt_ids = loop.run_until_complete(_resolve_import_ids(registry))
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
            asyncio.set_event_loop(None)
            set_all_config({}, [])
        resources = tuple(sorted(
            (replace(r, adopt_id=adopt_ids[r.urn]) if r.urn in adopt_ids else r
             for r in monitor.records), key=lambda r: r.urn))
        for a, b in zip(resources, resources[1:]):
            if a.urn == b.urn:  # the engine's own refusal ("Duplicate resource URN"), offline
                raise ClusterstackError(
                    f"stack {stack}: two resources have the URN {a.urn} — the Pulumi engine "
                    "refuses a duplicate URN on preview and up",
                    "two names in the reviewed files give one object: rename one of them")
        plan = StackPlan(project=project, stack=stack, resources=resources,
                         outputs=monitor.stack_outputs)
    _freeze_imported_objects()
    return plan


def plan_stack(project_dir: Path, stack: str) -> StackPlan:
    """Plan one stack of the Pulumi project in ``project_dir`` by running its ``__main__.py``.

    Raises ConfigError for a missing project/stack file and whatever ClusterstackError the
    program raises; any other program failure becomes a ClusterstackError with its message.
    """
    info = ProjectInfo.load(project_dir, program=True)
    config = info.stack_config(stack)

    def program() -> None:
        reads.note(reads.FILE, info.main)  # read by runpy, not the byte reader
        runpy.run_path(str(info.main), run_name="__main__")

    try:
        return run_program(info.name, stack, config, program)
    except ClusterstackError:
        raise
    except pulumi.RunError as exc:
        # program.main turns a ClusterstackError into a RunError for the Pulumi CLI; hand the
        # original (located problems, exit code) back rather than wrapping its text.
        original = exc.__cause__ or exc.__context__
        if isinstance(original, ClusterstackError):
            raise original from None
        raise ClusterstackError(f"stack {stack}: {exc}", "fix the config named above") from None
    except Exception as exc:  # the program's own failure: keep its text, not a traceback
        err = ClusterstackError(f"stack {stack}: the program failed: {type(exc).__name__}: {exc}",
                                "run with --debug for the traceback")
        err.exit_code = 1
        raise err from exc
