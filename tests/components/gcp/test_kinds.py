"""The GCP kinds declared by type token (components/gcp/kinds.py) say what the installed
``pulumi_gcp`` says: each row is read back from the generated source of the class it names —
the token its ``_internal_init`` registers, its ``alias_opts`` and ``secret_opts``, the outputs
the components read — and the provider's and the instance lookup's facts from ``provider.py``,
``compute/get_instance.py`` and ``_utilities.py``. The package is located, never imported
(its ``__init__`` imports every module, which is what declaring by token avoids); only
``_utilities.py`` is executed, alone."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from clusterstack.components.gcp import kinds

SDK = Path(importlib.util.find_spec("pulumi_gcp").origin).parent   # found, not imported


def _source(rel: str) -> str:
    return (SDK / rel).read_text(encoding="utf-8")


def _init(text: str) -> str:
    """The body of the resource class's ``_internal_init`` (up to the next ``def``)."""
    start = text.index("def _internal_init(")
    return text[start:text.index("\n    def ", start + 1)]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize("kind", kinds.ALL, ids=lambda k: k.token)
def test_each_kind_is_what_its_sdk_class_registers(kind):
    init = _init(_source(kind.source))
    assert re.search(r"super\(\w+, __self__\)\.__init__\(\s*'([^']+)'", init).group(1) == kind.token
    aliases = re.search(r"alias_opts = pulumi\.ResourceOptions\(aliases=\[(.*)\]\)", init)
    assert tuple(re.findall(r'type_="([^"]+)"', aliases.group(1)) if aliases else ()) == kind.aliases
    secret = re.search(r"secret_opts = pulumi\.ResourceOptions\(additional_secret_outputs=\[(.*)\]\)", init)
    assert tuple(re.findall(r'"([^"]+)"', secret.group(1)) if secret else ()) == kind.secret_outputs
    # no input is made secret by the class (a declaration by token would have to repeat it)
    assert "Output.secret(" not in init
    for output in kind.outputs:          # every output read is a property, under this wire name
        assert f'__props__.__dict__["{_snake(output)}"] = ' in init
        assert (f'@pulumi.getter(name="{output}")' in _source(kind.source)
                or output == _snake(output))


def test_every_gcp_token_of_the_table_has_a_kind():
    from clusterstack.pulumi import tokens
    gcp_tokens = {v for k, v in vars(tokens).items()
                  if k.isupper() and isinstance(v, str) and v.startswith("gcp:")}
    assert {k.token for k in kinds.ALL} == gcp_tokens


def test_the_provider_is_what_the_sdk_provider_registers(monkeypatch):
    init = _init(_source("provider.py"))
    assert "additional_secret_outputs=[\"accessToken\"]" in init
    assert kinds.GCP.provider_secret_outputs == ("accessToken",)
    for field, names in kinds._ENV_FALLBACK.items():
        quoted = ", ".join(f"'{n}'" for n in names)
        assert f"if {field} is None:\n                {field} = _utilities.get_env({quoted})" in init
    # the fallback applies as the SDK's does: first variable set wins, an argument beats both
    monkeypatch.setenv("GCLOUD_REGION", "europe-west4")
    monkeypatch.setenv("CLOUDSDK_COMPUTE_REGION", "us-east1")
    assert kinds._env(kinds._ENV_FALLBACK["region"]) == "europe-west4"


def test_version_and_plugin_url_are_the_sdks():
    spec = importlib.util.spec_from_file_location("pulumi_gcp._utilities", SDK / "_utilities.py")
    utilities = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utilities)
    assert kinds.GCP.version() == utilities.get_version()
    assert kinds.GCP.plugin_download_url == utilities.get_plugin_download_url()


def test_the_instance_lookup_is_the_sdks():
    text = _source("compute/get_instance.py")
    body = text[text.index("def get_instance_output("):]
    body = body[:body.index("\ndef ", 1) if "\ndef " in body[1:] else len(body)]
    assert f"invoke_output('{kinds.GET_INSTANCE}', __args__" in body
    assert sorted(re.findall(r"__args__\['(\w+)'\]", body)) == ["name", "project", "selfLink", "zone"]
