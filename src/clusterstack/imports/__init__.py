"""Adopting live resources: Pulumi bulk-import files built from the offline plan, and the
refusable, digest-confirmed import transaction.

- :mod:`clusterstack.imports.importfile` — where an import file may live (outside the
  repository, mode 0600) and reading one for ``import apply``;
- :mod:`clusterstack.imports.generate` — plan → import file (scope, ``--id`` overrides);
- :mod:`clusterstack.imports.apply` — the transaction against an :class:`~clusterstack.engine.Engine`.

The import-ID registry (``importable(resource, id)`` and the ID rules) and the import-file format
are Pulumi vocabulary: :mod:`clusterstack.pulumi.importids`, :mod:`clusterstack.pulumi.importfile`.
This package sits above the plan (``generate`` and ``apply`` read a :class:`StackPlan`).
"""
