"""The HTTP health check of a service URL (cloud-run, gce-vm and pulumi services).

One GET, redirects *not* followed (an IAP or login redirect is not the service answering),
a bounded timeout, and the status compared with the registry's ``expect_status``; with
``expect_json``, the body must also be a JSON object holding those top-level fields (Marin's
Loom readiness answers ``{"status": "ready"}`` only once it serves:
marin-community/marin ``infra/deploy/src/marin_deploy/loom.py``@52e58bb8 ``_require_ready``).
Kubernetes services are checked through the API server's service proxy instead
(:meth:`clusterstack.deploy.kubernetes.KubernetesBackend.check_health`).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any, Mapping

from clusterstack.config.document import json_loads
from clusterstack.deploy.model import HealthResult


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: D102 — see module docstring
        return None


def http_check(url: str, *, expect_status: int = 200, expect_json: Mapping[str, Any] | None = None,
               timeout: float = 10.0) -> HealthResult:
    """GET ``url``; healthy when the answer's status is ``expect_status`` and, with
    ``expect_json``, its body is a JSON object whose top-level fields include those values.
    Never raises: a refused connection, a timeout, another status or another body is an
    unhealthy result with the reason (at most 64 KiB of the body is read)."""
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, method="GET", headers={"User-Agent": "clusterstack-deploy"})
    body = b""
    try:
        with opener.open(request, timeout=timeout) as resp:
            status = resp.status
            if expect_json:
                body = resp.read(65536)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return HealthResult(False, f"GET {url}: {reason}")
    if status != expect_status:
        return HealthResult(False, f"GET {url}: {status}, expected {expect_status}")
    if expect_json:
        try:
            doc = json_loads(body.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            return HealthResult(False, f"GET {url}: {status}, but the body is not JSON")
        wrong = {k: (doc.get(k) if isinstance(doc, dict) else None) for k, v in expect_json.items()
                 if not isinstance(doc, dict) or doc.get(k) != v}
        if wrong:
            got = ", ".join(f"{k}={v!r}" for k, v in sorted(wrong.items()))
            want = ", ".join(f"{k}={v!r}" for k, v in sorted(expect_json.items()))
            return HealthResult(False, f"GET {url}: {status}, body has {got}, expected {want}")
    return HealthResult(True, f"GET {url}: {status}")
