"""Multi-step operations as library functions (docs/architecture.md): each takes the
:class:`~clusterstack.clients.Clients` of the run and ``prompt=`` / ``report=`` / ``warn=`` /
``progress=`` callbacks, and returns a typed result or raises a typed
:class:`~clusterstack.errors.ClusterstackError` — so a library test calls the same flow the CLI
does. The CLI (:mod:`clusterstack.cli`) parses arguments, builds Clients, calls a flow, renders
the result and sets the exit code.

- :mod:`clusterstack.flows.plan` — the offline plans of the selected stacks;
- :mod:`clusterstack.flows.up` — ``preview`` and the guarded ``up``;
- :mod:`clusterstack.flows.diff` — the static diff against a git ref or a state file.

The side roads keep their flows in their own packages: :mod:`clusterstack.imports.apply`,
:mod:`clusterstack.deploy.service`, :mod:`clusterstack.ci.flows`, :mod:`clusterstack.iam.ops`,
:mod:`clusterstack.verify`.
"""
