"""Adopting what already runs, by either of two reviewed paths.

From live objects (``import generate`` / ``report`` / ``apply``):

- :mod:`clusterstack.imports.importfile` — where an import file may live (outside the
  repository, mode 0600) and reading one for ``import apply``;
- :mod:`clusterstack.imports.generate` — plan → import file (scope, ``--id`` overrides, only
  what exists);
- :mod:`clusterstack.imports.live` — the live objects: dump files in the tools' formats, or the
  read-only adapters;
- :mod:`clusterstack.imports.rules` — the receiving systems' rules (server-side apply, refused
  updates, provider replacements, Pulumi's import artefacts), each cited;
- :mod:`clusterstack.imports.report` — the adoption report, per object same / no-op / change /
  refused / replace / create / unverified;
- :mod:`clusterstack.imports.apply` — the transaction against an :class:`~clusterstack.engine.Engine`,
  gated by the report.

From an existing Pulumi stack (``import migrate`` / ``state``):
:mod:`clusterstack.imports.migrate` — the old stack's state under clusterstack's URNs, the
checked ``pulumi stack import``, and the old stack's retirement
(:mod:`clusterstack.imports.statescript`: the generated ``pulumi state delete`` step).

The import-ID registry (``importable(resource, id)`` and the ID rules) and the import-file format
are Pulumi vocabulary: :mod:`clusterstack.pulumi.importids`, :mod:`clusterstack.pulumi.importfile`;
the state documents :mod:`clusterstack.pulumi.state`. This package sits above the plan.
"""
