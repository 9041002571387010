"""The GitHub repository policy: ``github.yaml`` (model and loader:
:mod:`clusterstack.config.github`) is declared by the ``github`` project's program
(:mod:`clusterstack.programs.github`, components in :mod:`clusterstack.components.github`);
the declared Actions secret and variable names are checked against the repository by
:mod:`clusterstack.github.audit` (``clusterstack github audit``).
"""
