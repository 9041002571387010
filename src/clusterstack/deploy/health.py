"""The HTTP health check of a service URL (cloud-run and pulumi services).

One GET, redirects *not* followed (an IAP or login redirect is not the service answering),
a bounded timeout, and the status compared with the registry's ``expect_status``. Kubernetes
services are checked through the API server's service proxy instead
(:meth:`clusterstack.deploy.kubernetes.KubernetesBackend.check_health`).
"""

from __future__ import annotations

import urllib.error
import urllib.request

from clusterstack.deploy.model import HealthResult


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: D102 — see module docstring
        return None


def http_check(url: str, *, expect_status: int = 200, timeout: float = 10.0) -> HealthResult:
    """GET ``url``; healthy when the answer's status is ``expect_status``. Never raises: a
    refused connection, a timeout or another status is an unhealthy result with the reason."""
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, method="GET", headers={"User-Agent": "clusterstack-deploy"})
    try:
        with opener.open(request, timeout=timeout) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return HealthResult(False, f"GET {url}: {reason}")
    if status == expect_status:
        return HealthResult(True, f"GET {url}: {status}")
    return HealthResult(False, f"GET {url}: {status}, expected {expect_status}")
