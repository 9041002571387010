"""Declaring a provider's resources by type token, without importing its Python SDK.

A generated provider SDK (``pulumi_gcp``, ``pulumi_cloudflare``) imports every module of a
package when one of its classes is used: ``pulumi_gcp.compute``'s ``__init__`` imports all of
its 288 modules for one ``Address``, ``pulumi_cloudflare``'s all ~780. Their bytecode is most
of what a fresh clone's first ``make demo`` compiles, and importing them most of a GCP plan's
start-up (docs/performance.md "Set-up"). What a generated class adds over
:class:`pulumi.CustomResource` is small and fixed per resource; it is repeated here, read from
the generated ``_internal_init`` of each class (``pulumi_gcp`` 10.2.0, ``pulumi_cloudflare``
6.23.1; the tables that use this module cite the files):

- the type token (``super().__init__('gcp:compute/address:Address', …)``);
- the camelCase wire names of the inputs, nested ones too: the SDK translates ``address_type``
  to ``addressType`` with its input types' metadata (``pulumi/runtime/rpc.py``
  ``serialize_properties``: ``input_type_py_to_pulumi_names``), so a declaration by token
  writes the wire names itself — and reads outputs by them (``resource.output("selfLink")``);
- the resource options every class merges first, ``_utilities.get_resource_opts_defaults()``:
  ``version`` (the installed SDK's, which pins the provider plugin the engine runs) and
  ``plugin_download_url`` (``get_plugin_download_url()``: None for both packages here);
- the class's own options merged last: its aliases (``alias_opts``, former type tokens whose
  state is adopted, not replaced) and then its ``additional_secret_outputs`` (``secret_opts``);
- output properties the program reads are registered as inputs of value None, which the
  serializer drops (``rpc.serialize_properties``: "properties that serialize to None [are
  treated] as if they don't exist"), as the SDK registers every output property. They come
  back untyped, by wire name: nested maps as dicts, every number a float (the SDK's typed
  outputs turn an int-typed one into an int: ``rpc.translate_output_properties``), so a reader
  of an integer output converts it as the SDK would.

A test reads each table's facts back from the installed SDK's source
(tests/components/gcp/test_kinds.py; the Cloudflare version: tests/test_import_hygiene.py),
and the golden plans hold the wire form of every declaration.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any, Mapping

import pulumi


@functools.cache
def sdk_version(distribution: str) -> str:
    """The installed version of ``distribution`` (``pulumi_gcp`` → ``10.2.0``), as its SDK sends
    it with every registration (``_utilities._get_semver_version`` reads the same distribution
    metadata). Raises RuntimeError for a pre-release or local build, whose semver form the SDK
    derives with rules not repeated here, and PackageNotFoundError when it is not installed."""
    version = importlib.metadata.version(distribution)
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise RuntimeError(f"{distribution} {version} is not a plain release: pin one in uv.lock")
    return version


@dataclass(frozen=True)
class Package:
    """A provider package declared by token: ``name`` is the token's package (``gcp``),
    ``distribution`` the SDK's (``pulumi_gcp``), ``provider_secret_outputs`` the provider
    resource's ``additional_secret_outputs`` (its ``provider.py``), ``plugin_download_url`` its
    ``_utilities.get_plugin_download_url()``."""

    name: str
    distribution: str
    provider_secret_outputs: tuple[str, ...] = ()
    plugin_download_url: str | None = None

    def version(self) -> str:
        return sdk_version(self.distribution)

    def defaults(self) -> pulumi.ResourceOptions:
        """``_utilities.get_resource_opts_defaults()`` of the SDK."""
        return pulumi.ResourceOptions(version=self.version(),
                                      plugin_download_url=self.plugin_download_url)

    def provider(self, name: str, props: Mapping[str, Any],
                 opts: pulumi.ResourceOptions | None = None) -> pulumi.ProviderResource:
        """``pulumi:providers:<name>`` with ``props`` (wire names), as the SDK's ``Provider``
        registers it: defaults, then ``opts``, then its secret outputs."""
        merged = pulumi.ResourceOptions.merge(self.defaults(), opts)
        if self.provider_secret_outputs:
            merged = pulumi.ResourceOptions.merge(merged, pulumi.ResourceOptions(
                additional_secret_outputs=list(self.provider_secret_outputs)))
        return pulumi.ProviderResource(self.name, name, dict(props), merged)

    def invoke_output(self, token: str, args: Mapping[str, Any],
                      opts: pulumi.InvokeOutputOptions | None = None) -> pulumi.Output[Any]:
        """A function (data source) call, ``<fn>_output`` of the SDK: ``args`` by wire name,
        the SDK's invoke defaults (version, plugin URL) merged first. The result is the
        provider's response by wire name (a dict), not the SDK's result class."""
        merged = pulumi.InvokeOutputOptions.merge(
            pulumi.InvokeOutputOptions(version=self.version(),
                                       plugin_download_url=self.plugin_download_url), opts)
        return pulumi.runtime.invoke_output(token, dict(args), opts=merged)


class Declared(pulumi.CustomResource):
    """A resource declared by type token; :meth:`output` reads a declared output by wire name."""

    def __init__(self, kind: Kind, name: str, props: Mapping[str, Any],
                 opts: pulumi.ResourceOptions | None) -> None:
        self._kind = kind
        super().__init__(kind.token, name, {**props, **{o: None for o in kind.outputs if o not in props}},
                         kind.options(opts))

    def output(self, name: str) -> pulumi.Output[Any]:
        """The output property ``name`` (wire name: ``generatedId``). Raises KeyError for one
        the kind neither declares as an output nor received as an input."""
        value = self.__dict__.get(name)
        if not isinstance(value, pulumi.Output):
            raise KeyError(f"{self._kind.token} declares no output {name!r}")
        return value


@dataclass(frozen=True)
class Kind:
    """One resource class of a package: its ``token``, the ``outputs`` programs read (wire
    names), its ``aliases`` (former types) and ``secret_outputs`` as its ``_internal_init``
    merges them, and ``source``, the SDK file they are read from (relative to the package)."""

    package: Package
    token: str
    source: str
    outputs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    secret_outputs: tuple[str, ...] = ()

    def options(self, opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
        """The SDK's merge order: defaults, the caller's ``opts``, aliases, secret outputs."""
        merged = pulumi.ResourceOptions.merge(self.package.defaults(), opts)
        if self.aliases:
            merged = pulumi.ResourceOptions.merge(merged, pulumi.ResourceOptions(
                aliases=[pulumi.Alias(type_=a) for a in self.aliases]))
        if self.secret_outputs:
            merged = pulumi.ResourceOptions.merge(merged, pulumi.ResourceOptions(
                additional_secret_outputs=list(self.secret_outputs)))
        return merged

    def __call__(self, name: str, props: Mapping[str, Any],
                 opts: pulumi.ResourceOptions | None = None) -> Declared:
        """Declare one resource ``name`` with ``props`` by wire name."""
        return Declared(self, name, props, opts)

