"""Redaction of everything CI writes (preview files, PR comments, drift issues).

A PR comment and a CI artifact are readable by everyone with read access to the repository,
so every string that leaves the engine passes through a :class:`Redactor`:

1. **structured values** (:meth:`Redactor.mask_value`) — Pulumi's secret envelope and the value
   of any property whose key *ends* in a secret noun (``password``, ``apiToken``,
   ``clientSecret``, ``privateKey``, ``secretData`` …) become ``[secret]``, as do the ``data`` /
   ``stringData`` of a Kubernetes ``Secret``. Keys that merely *mention* a secret (``secretRef``,
   ``secretName``, ``tokenProxy``) name things, not values, and stay readable for review;
2. **known values** — the values of this process's environment variables whose names say they
   are secrets (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*PASSPHRASE*``, ``*CREDENTIAL*``,
   ``*_KEY``), wherever they appear, like GitHub Actions' own log masking;
3. **token formats** — well-known credential shapes (GitHub ``ghp_…``/``github_pat_…``, Google
   API keys ``AIza…`` and OAuth tokens ``ya29.…``, AWS key ids, Slack ``xox?-``, Pulumi
   ``pul-…``, JWTs, PEM private keys; the patterns follow gitleaks' default rules) and
   ``password=…``/``token: …`` assignments in free text;
4. **personal emails** (:func:`clusterstack.redact.redact_text`, the one rule the CLI's error
   lines follow too): ``alice@lab.example`` → ``a***@lab.example``; service-account addresses
   (``*.gserviceaccount.com``) are machines and stay readable.

A secret that has none of these marks (an unlabelled random string in a plain property) cannot
be recognised; the program must mark it secret (``pulumi.Output.secret``), as the house rule is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from clusterstack.pulumi.tokens import K8S_SECRET
from clusterstack.pulumi.values import SECRET
from clusterstack.pulumi.wire import SIG_KEY
from clusterstack.redact import redact_text

MASK = SECRET
_SECRET_KEY_SUFFIXES = ("password", "passwd", "passphrase", "secret", "token", "apikey",
                        "privatekey", "privatekeypem", "secretdata", "secretkey", "accesskey",
                        "credential", "credentials", "clientsecret", "authkey")
_SECRET_ENV_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|(^|_)KEY$|_KEY_", re.I)
_MIN_KNOWN = 8  # shorter environment values (e.g. "true") would mask ordinary words
_TOKEN_PATTERNS = (
    r"gh[pousr]_[A-Za-z0-9]{36,255}",
    r"github_pat_[A-Za-z0-9_]{22,255}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"ya29\.[0-9A-Za-z_\-]{20,}",
    r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    r"xox[abposr]-[0-9A-Za-z\-]{10,}",
    r"pul-[0-9a-f]{40}",
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
)
_TOKENS = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS))
# `password=hunter2`, `"apiToken": "abc"`, `token: abc` in free text (logs, error messages)
_ASSIGNMENT = re.compile(
    r"(?i)(\b[\w.\-]*(?:password|passwd|passphrase|secret|token|api[_\-]?key|private[_\-]?key)"
    r"(?:\s*=\s*|\"?\s*:(?=[\s\"])\s*)\"?)(?!\[secret\]|null\b|true\b|false\b)([^\s\"',;}]{4,})")
# (a ":" must be followed by a space or a quote: `key: v`, `"key":"v"` — never a type token
# such as `gcp:secretmanager/secret:Secret` or a URN's `Secret::name`)


def is_secret_key(key: str) -> bool:
    """True when a property key names a secret value (its normalised form ends in a secret noun)."""
    norm = re.sub(r"[^a-z0-9]", "", key.lower())
    return norm.endswith(_SECRET_KEY_SUFFIXES)


@dataclass(frozen=True)
class Redactor:
    """Masks secrets and personal emails (see the module docstring). ``known``: literal secret
    values to mask wherever they appear (longest first)."""

    known: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> "Redactor":
        """A redactor that also masks the values of secret-named environment variables of
        ``environ`` (default: ``os.environ``) and the ``extra`` values."""
        env = os.environ if environ is None else environ
        values = {v for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v) >= _MIN_KNOWN}
        values |= {v for v in extra if v and len(v) >= _MIN_KNOWN}
        return cls(known=tuple(sorted(values, key=lambda v: (-len(v), v))))

    def text(self, value: str) -> str:
        """Redact a free-text string (all four rules; known values first, then token shapes,
        assignments, emails)."""
        for k in self.known:
            value = value.replace(k, MASK)
        value = _TOKENS.sub(MASK, value)
        value = _ASSIGNMENT.sub(lambda m: m.group(1) + MASK, value)
        return redact_text(value)

    def mask_value(self, value: Any, *, resource_type: str = "") -> Any:
        """A copy of a JSON-like value with secret envelopes and secret-keyed properties masked
        and every string redacted. ``resource_type``: the Pulumi type of the resource the value
        belongs to (a Kubernetes Secret's ``data``/``stringData`` are masked whole)."""
        return self._mask(value, resource_type == K8S_SECRET)

    def _mask(self, value: Any, k8s_secret: bool) -> Any:
        if isinstance(value, Mapping):
            if SIG_KEY in value:
                return MASK
            out = {}
            for k, v in value.items():
                key = str(k)
                if is_secret_key(key) or (k8s_secret and key in ("data", "stringData")):
                    out[self.text(key)] = MASK if not isinstance(v, Mapping) else {
                        self.text(str(kk)): MASK for kk in v}
                else:
                    out[self.text(key)] = self._mask(v, k8s_secret)
            return out
        if isinstance(value, (list, tuple)):
            return [self._mask(v, k8s_secret) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def step(self, step):
        """A :class:`clusterstack.pulumi.steps.Step` with old/new inputs masked and its URN redacted
        (URNs carry resource names, which may hold an email)."""
        return replace(step, urn=self.text(step.urn),
                       old_inputs=None if step.old_inputs is None else
                       self.mask_value(step.old_inputs, resource_type=step.type),
                       new_inputs=None if step.new_inputs is None else
                       self.mask_value(step.new_inputs, resource_type=step.type))
