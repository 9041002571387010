"""The GitHub repository policy as its own Pulumi project, ``github/`` (docs/github.md).

``github.yaml`` (reviewed) → :func:`load_github` → :class:`GithubConfig` →
:mod:`clusterstack.components.github` (ruleset + environments) →
:func:`clusterstack.github.program.build`; the declared Actions secret and variable names are
checked against the repository by :mod:`clusterstack.github.audit` (``clusterstack github audit``).
"""

from clusterstack.github.loader import load_github
from clusterstack.github.model import GithubConfig

__all__ = ["GithubConfig", "load_github"]
