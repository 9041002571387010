"""CI for clusterstack: preview every affected stack, one PR comment, drift, deployment checks.

The logic lives here and is testable offline; the GitHub workflows in ``.github/workflows/``
only call ``clusterstack ci …`` (docs/ci.md):

- :mod:`~clusterstack.ci.discover` — which stacks / services a git change affects (the matrix);
- :mod:`~clusterstack.ci.preview` — bounded-parallel previews, ``meta.json`` + ``diff.txt`` per stack;
- :mod:`~clusterstack.ci.redaction` — secrets and personal emails out of everything written;
- :mod:`~clusterstack.ci.comment` — the one Markdown comment, fairly truncated under the limit;
- :mod:`~clusterstack.ci.github` — the comment upsert, over the GitHub seam
  (:class:`clusterstack.adapters.github.GitHubRepo`);
- :mod:`~clusterstack.ci.drift` — drift fingerprint and the tracking-issue state machine;
- :mod:`~clusterstack.ci.deployment` — after a merge, was every changed stack applied from main;
- :mod:`~clusterstack.ci.flows` — the commands' flows (preview, comment, drift, deployment check)
  over the run's :class:`~clusterstack.clients.Clients`.

CI never applies a cluster stack: nothing in this package calls ``Engine.up``.
"""
