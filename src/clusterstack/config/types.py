"""The constrained types every reviewed-file model uses: one definition of each name rule.

Each is an ``Annotated`` type with ``Field`` constraints (so the rule is declared, shows in
JSON Schema and errors carry their location), validated with Python's ``re`` by the
:class:`~clusterstack.config.document.Strict` / ``Lenient`` bases. Every pattern is anchored
``\\A…\\Z``: ``$`` matches before a trailing newline, so ``"h100\\n"`` would pass ``^…$``.
The compiled ``*_RE`` patterns are the same rules for code that checks a derived name.

Sources: RFC 1123 §2.1 / Kubernetes "Object Names and IDs" (DNS label ≤ 63, DNS subdomain
≤ 253), RFC 1035 §2.3.1 (label starting with a letter; Kubernetes Service names, GCE resource
names), Google Cloud "Creating and managing projects" (project IDs: 6–30 characters),
Kubernetes "Resource units" (quantities).
"""

from __future__ import annotations

import ipaddress
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Iterable, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, Strict
from pydantic_core import PydanticCustomError

from clusterstack.config.instances import zone_problem

T = TypeVar("T")

RFC1123_LABEL = r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z"
RFC1123_SUBDOMAIN = r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\Z"
RFC1035_LABEL = r"\A[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z"
DNS_HOSTNAME = r"\A([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\Z"
EMAIL = r"\A[^@\s]+@[^@\s]+\.[^@\s]+\Z"
GCP_PROJECT_ID = r"\A[a-z][a-z0-9-]{4,28}[a-z0-9]\Z"
GCP_REGION = r"\A[a-z]+-[a-z]+\d+\Z"              # e.g. us-central1
GCP_ZONE = r"\A[a-z]+-[a-z]+\d+-[a-z]\Z"          # e.g. us-central1-a
GCP_ROLE = r"\A(roles/[A-Za-z0-9_.]+|projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/roles/[A-Za-z0-9_.]{3,64})\Z"
QUANTITY = r"\A(?P<num>\d+(\.\d+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?\Z"
ENV_NAME = r"\A[A-Za-z_][A-Za-z0-9_]*\Z"           # a POSIX environment variable name
NON_BLANK = r"\A\S(?:[^\n]*\S)?\Z"                 # one line, no surrounding whitespace
LABEL_VALUE = r"\A([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z"
COREWEAVE_ZONE = r"\A[A-Z0-9]+(-[A-Z0-9]+)*\Z"       # US-EAST-04A, RNO2A (Marin's configs)
GCP_SA_ID = r"\A[a-z][-a-z0-9]{4,28}[a-z0-9]\Z"
STACK_NAME = r"\A(?!\.{1,2}\Z)[A-Za-z0-9_.-]{1,100}\Z"
#: A Pulumi project name: a letter, '_' or '.', then letters, digits, '_', '.', '-'; at most 100
#: (pulumi/pulumi sdk/go/common/tokens: ``ValidateProjectName`` and ``IsName``, names.go@1647f904)
#: — and never only dots: the DIY backends keep a project's stacks in the directory
#: ``.pulumi/stacks/<project>/`` (pulumi/pulumi pkg/backend/diy), where ``.`` and ``..`` name
#: the directory itself and its parent.
PROJECT_NAME = r"\A(?!\.+\Z)[A-Za-z_.][A-Za-z0-9_.-]{0,99}\Z"
#: A CoreWeave instance type (the NodePool's ``spec.instanceType``): lowercase letters, digits
#: and '-', alphanumeric at both ends — how CoreWeave names every instance it lists
#: (``gd-8xh100ib-i128``, ``gb200-4x``, ``cd-gp-i64-erapids``, ``turin-gp-l``: CoreWeave docs,
#: "Instance availability matrix", docs.coreweave.com/platform/instances/availability-matrix;
#: "Node Pool reference", ``instanceType``). A space, '/', '..' or a newline in it names no
#: instance and lands in object names and labels.
INSTANCE_TYPE = r"\A[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?\Z"   # spelled apart from RFC1123_LABEL: its own rule text
#: A path inside the repository, as a reviewed file writes it: relative, '/'-separated, no
#: ``..`` or empty part, no backslash, no leading ``~`` (confinement: a reviewed file may only
#: name a place inside the workspace root; the resolved path is checked again where it is
#: used, symlinks followed — :func:`clusterstack.workspace.paths.confined`).
REPO_PATH = r"\A(?![/~])(?!.*(?:\A|/)\.\.(?:/|\Z))(?!.*//)[^\\\n\x00]{1,1024}\Z"

#: What each pattern means, in words: errors name the rule, never the regex.
PATTERN_RULES: dict[str, str] = {
    RFC1123_LABEL: "lowercase letters, digits and '-', starting and ending with a letter or digit, "
                   "at most 63 characters",
    RFC1123_SUBDOMAIN: "dot-separated lowercase labels (letters, digits, '-')",
    RFC1035_LABEL: "a lowercase letter, then lowercase letters, digits and '-', not ending in '-', "
                   "at most 63 characters",
    DNS_HOSTNAME: "a fully qualified hostname such as host.example.org",
    EMAIL: "an email address",
    GCP_PROJECT_ID: "a GCP project ID: 6–30 lowercase letters, digits and '-', starting with a letter",
    GCP_REGION: "a GCP region such as us-central1",
    GCP_ZONE: "a GCP zone such as us-central1-a",
    GCP_ROLE: "an IAM role: roles/<name> or projects/<project>/roles/<id>",
    ENV_NAME: "an environment variable name (letters, digits, '_', not starting with a digit)",
    NON_BLANK: "a non-blank value on one line without surrounding spaces",
    LABEL_VALUE: "a Kubernetes label value: letters, digits, '-', '_' and '.', alphanumeric at both "
                 "ends, at most 63 characters",
    COREWEAVE_ZONE: "a CoreWeave zone such as US-EAST-04A",
    GCP_SA_ID: "a service-account id: 6–30 lowercase letters, digits and '-', starting with a letter",
    STACK_NAME: "a stack name: letters, digits, '-', '_' and '.', at most 100 characters",
    PROJECT_NAME: "a Pulumi project name: letters, digits, '_', '.' and '-', not starting with a "
                  "digit or '-', not only dots, at most 100 characters",
    INSTANCE_TYPE: "a CoreWeave instance type such as gd-8xh100ib-i128: lowercase letters, digits and "
                   "'-', starting and ending with a letter or digit, at most 63 characters",
    REPO_PATH: "a path inside the repository: relative, '/'-separated, without '..' parts",
}

RFC1123_LABEL_RE = re.compile(RFC1123_LABEL)
RFC1035_LABEL_RE = re.compile(RFC1035_LABEL)
DNS_HOSTNAME_RE = re.compile(DNS_HOSTNAME)
QUANTITY_RE = re.compile(QUANTITY)
ENV_NAME_RE = re.compile(ENV_NAME)
STACK_NAME_RE = re.compile(STACK_NAME)
REPO_PATH_RE = re.compile(REPO_PATH)
PROJECT_NAME_RE = re.compile(PROJECT_NAME)

def at_most(limit: int, why: str) -> BeforeValidator:
    """A length limit in the house's words: runs before the type's own ``max_length`` (which
    stays, for the JSON Schema) and refuses a longer string with error type
    ``string_too_long`` and the message "'<value>' is N characters; at most <limit>
    characters are allowed: it is <why>", so the error says what the limit is and where it comes from, not pydantic's
    "String should have at most N characters". Other values pass through unchanged."""
    def check(value: object) -> object:
        if isinstance(value, str) and len(value) > limit:
            shown = repr(value) if len(value) <= 40 else repr(value[:37]) + "…"
            raise PydanticCustomError("string_too_long", "{shown} is {length} characters; at most "
                                      "{limit} characters are allowed: it is {why}", {"shown": shown, "length": len(value),
                                                          "why": why, "limit": limit})
        return value
    return BeforeValidator(check)


_DNS_LABEL_WHY = ("an RFC 1123 DNS label (what Kubernetes object names and label values are, "
                  "RFC 1123 §2.1)")

#: A Kubernetes object name or label value that must be an RFC 1123 DNS label (namespaces,
#: Deployments, ServiceAccounts, …): lowercase letters, digits, '-', alphanumeric at both ends.
Rfc1123Label = Annotated[str, Field(pattern=RFC1123_LABEL, max_length=63), at_most(63, _DNS_LABEL_WHY)]
#: An RFC 1123 DNS subdomain (most Kubernetes object names): dot-separated labels, ≤ 253.
Rfc1123Subdomain = Annotated[str, Field(pattern=RFC1123_SUBDOMAIN, max_length=253),
                             at_most(253, "an RFC 1123 DNS subdomain (a Kubernetes object name)")]
#: An RFC 1035 label: like an RFC 1123 label but starting with a letter (Kubernetes Service
#: names, GCE resource names and network tags).
Rfc1035Label = Annotated[str, Field(pattern=RFC1035_LABEL, max_length=63),
                         at_most(63, "an RFC 1035 label (a Kubernetes Service name, a GCE resource "
                                     "name or network tag)")]
#: A GCP (Compute Engine) resource name: an RFC 1035 label of at most 63 characters.
GcpResourceName = Rfc1035Label
GcpProjectId = Annotated[str, Field(pattern=GCP_PROJECT_ID)]
GcpRegion = Annotated[str, Field(pattern=GCP_REGION)]
GcpZone = Annotated[str, Field(pattern=GCP_ZONE)]
GcpRole = Annotated[str, Field(pattern=GCP_ROLE)]
#: A fully qualified DNS hostname (labels ≤ 63, a letters-only top-level label, ≤ 253).
DnsHostname = Annotated[str, Field(pattern=DNS_HOSTNAME, max_length=253),
                        at_most(253, "a DNS hostname (RFC 1035 §2.3.4)")]
Email = Annotated[str, Field(pattern=EMAIL, max_length=254)]
#: A one-line value that is not blank and has no surrounding whitespace (``" "`` as a
#: kube context or a cluster name passes ``min_length=1`` but names nothing).
NonEmptyStr = Annotated[str, Field(pattern=NON_BLANK, min_length=1, max_length=1024)]
#: A Kubernetes label value: ≤ 63 characters, alphanumeric at both ends, ``-_.`` inside, or
#: empty (Kubernetes "Labels and Selectors", syntax and character set).
KubernetesLabelValue = Annotated[str, Field(pattern=LABEL_VALUE, max_length=63),
                                 at_most(63, "a Kubernetes label value (\"Labels and Selectors\")")]


def _qualified_name(value: str) -> str:
    # Rule: a label or taint key is a qualified name — an optional DNS-subdomain prefix (≤ 253)
    # and '/', then a name of ≤ 63 characters, alphanumeric at both ends, '-_.' inside
    # (Kubernetes "Labels and Selectors", syntax and character set; a taint's key follows the
    # same rule, "Taints and Tolerations"; kubernetes/apimachinery pkg/util/validation
    # IsQualifiedName). The API server refuses a NodePool's node taint or a flavor's
    # toleration with any other key.
    prefix, _, name = value.rpartition("/")
    if ("/" in value and not (len(prefix) <= 253 and re.match(RFC1123_SUBDOMAIN, prefix))) or not (
            len(name) <= 63 and re.match(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z", name)):
        raise ValueError(f"{value!r} is not a Kubernetes label or taint key: [<DNS subdomain>/]<name>, "
                         "the name ≤ 63 characters of letters, digits, '-', '_', '.', alphanumeric at "
                         "both ends (e.g. nvidia.com/gpu)")
    return value


#: A Kubernetes label or taint key (a qualified name, :func:`_qualified_name`).
KubernetesQualifiedName = Annotated[str, AfterValidator(_qualified_name)]
#: The same, or ``""`` for "none".
OptionalQualifiedName = Annotated[str, AfterValidator(lambda v: v if v == "" else _qualified_name(v))]

#: A CKS cluster name: CoreWeave publishes a cluster's endpoints as
#: ``<org id>-<cluster name>.coreweave.app`` (CoreWeave "Create a public DNS name"), so the
#: name is an RFC 1123 label; a blank or dotted name cannot be reached.
CksClusterName = Annotated[str, Field(pattern=RFC1123_LABEL, max_length=63),
                           at_most(63, "a CKS cluster name, a DNS label of <org id>-<name>.coreweave.app "
                                       "(RFC 1123 §2.1)")]
def _known_zone(value: str) -> str:
    # Rule: a CKS cluster lives in one Availability Zone (CoreWeave CKS API, ``zone``), one of
    # CoreWeave's published list (clusterstack.config.instances.COREWEAVE_ZONES, with its
    # sources); a Region (``US-EAST-04``) is not a zone and names its zones (``US-EAST-04A``).
    problem = zone_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


#: A CoreWeave Availability Zone: uppercase letters and digits in dash-separated parts
#: (``US-EAST-04A``; the older ``RNO2A`` form, which Marin's configs use), one of CoreWeave's
#: published zones (:data:`clusterstack.config.instances.COREWEAVE_ZONES`) — CoreWeave
#: "All Availability Zones".
CoreweaveZone = Annotated[str, Field(pattern=COREWEAVE_ZONE), AfterValidator(_known_zone)]
#: A GCP service-account id (the part before ``@``): 6–30 characters, a lowercase letter
#: first, lowercase letters, digits and ``-`` (IAM API ``projects.serviceAccounts.create``,
#: ``accountId``).
GcpServiceAccountId = Annotated[str, Field(pattern=GCP_SA_ID)]
#: A Pulumi stack name: letters, digits, ``-``, ``_``, ``.``, at most 100 characters
#: (pulumi/pulumi sdk/go/common/tokens: ``stackNameRE`` and ``ValidateStackName``), never
#: ``.`` or ``..`` alone (those name directories).
StackName = Annotated[str, Field(pattern=STACK_NAME, max_length=100)]
ProjectName = Annotated[str, Field(pattern=PROJECT_NAME, max_length=100)]
#: A CoreWeave instance type: see :data:`INSTANCE_TYPE`.
InstanceType = Annotated[str, Field(pattern=INSTANCE_TYPE, max_length=63)]
#: A path a reviewed file names (a directory or file of the repository), relative to the
#: workspace root or the file's own directory: see :data:`REPO_PATH`.
RepoPath = Annotated[str, Field(pattern=REPO_PATH, max_length=1024)]


#: The URL schemes ``pulumi login`` takes (Pulumi docs, "pulumi login" and "Using a DIY
#: backend"): Pulumi Cloud or a self-hosted one over ``https://``, and the DIY backends
#: ``s3://``, ``azblob://``, ``gs://``, ``file://``.
BACKEND_SCHEMES = ("https://", "s3://", "azblob://", "gs://", "file://")


def _is_backend_url(value: str) -> str:
    if not value.startswith(BACKEND_SCHEMES) or len(value) == len(value.split("://")[0]) + 3:
        raise ValueError(f"{value[:60]!r} is not a Pulumi backend URL: one of "
                         + ", ".join(f"{s}…" for s in BACKEND_SCHEMES)
                         + " (plain http:// would send the access token in clear)")
    if value.startswith("file://"):
        path = value[len("file://"):].partition("?")[0]
        if not (path.startswith("~") or path.startswith("/")) and ".." in path.split("/"):
            raise ValueError(f"{value[:60]!r}: a relative file:// backend is taken from the "
                             "repository root and may not leave it ('..' parts); give an absolute "
                             "path, file://~, or a path inside the repository")
    return value


#: ``[workspace] backend_url``: a URL ``pulumi login`` takes (:data:`BACKEND_SCHEMES`).
BackendUrl = Annotated[str, Field(pattern=NON_BLANK, min_length=1, max_length=1024),
                       AfterValidator(_is_backend_url)]

#: An integer written as one: ``true``/``false``, ``"5"`` and ``5.0`` are refused (pydantic's
#: lax mode would read ``port: true`` as port 1).
Int = Annotated[int, Strict()]
#: Kubernetes ``int32`` fields (NodePool ``minNodes``/``maxNodes``/``targetNodes``, Kueue's
#: ``burst``) take at most 2**31 − 1 (Kubernetes API conventions, "Primitive types").
INT32_MAX = 2**31 - 1
#: A count that lands in a Kubernetes int32 field or a quota (nodes, slices, CPUs, devices).
Count = Annotated[Int, Field(ge=0, le=INT32_MAX)]
#: A positive count (≥ 1) of the same range.
PositiveCount = Annotated[Int, Field(gt=0, le=INT32_MAX)]
#: A TCP port (1–65535; RFC 793 16-bit port, a Kubernetes ``containerPort`` int32 in range).
Port = Annotated[Int, Field(gt=0, lt=65536)]
EnvName = Annotated[str, Field(pattern=ENV_NAME)]

_SUFFIX = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


MAX_QUANTITY_BYTES = 2**63 - 1
"""The largest size in bytes a reviewed file may give (2^63 − 1, just under 8 EiB): Kubernetes
stores a quantity's value as an int64 (apimachinery ``resource.Quantity``, ``Value()``), and every quota and
NodePool field it becomes is one."""


#: How the int64 limit of a quantity reads in a message (8 EiB itself is 2^63: one byte too many).
QUANTITY_RANGE = (f"at most {MAX_QUANTITY_BYTES} bytes (2^63 − 1, just under 8 EiB: a Kubernetes "
                  "quantity is an int64)")


def check_quantity_range(text: object, num: str, unit: int) -> None:
    """Raise ValueError when ``num`` × ``unit`` bytes exceeds :data:`MAX_QUANTITY_BYTES`,
    computed exactly (a 400-digit number would overflow a float to infinity)."""
    if Decimal(num) * unit > MAX_QUANTITY_BYTES:
        raise ValueError(f"{str(text)[:40]!r}{'…' if len(str(text)) > 40 else ''} is out of range: "
                         f"{QUANTITY_RANGE}")


def quantity_bytes(text: str) -> int:
    """Bytes in a Kubernetes memory quantity (``4Gi`` → 4294967296), at most
    :data:`MAX_QUANTITY_BYTES`.

    Source: Kubernetes "Resource units — memory" (binary Ki..Ei and decimal k..E suffixes).
    Raises ValueError for anything else.
    """
    m = QUANTITY_RE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a Kubernetes memory quantity such as 4Gi or 4096Mi")
    check_quantity_range(text, m["num"], _SUFFIX[m["suffix"]])
    return int(Decimal(m["num"]) * _SUFFIX[m["suffix"]])   # exact, as the range check


#: The one unit a review shows sizes in: Kubernetes' ``G`` (10^9 bytes), the unit a
#: ClusterQueue's memory quota is written in when it divides it (``derive.bytes_quantity``).
SIZE_UNIT, SIZE_UNIT_BYTES = "GB", 10**9


def size_note(old: object, new: object) -> str:
    """A size change in the one unit :data:`SIZE_UNIT` — ``32000 GB → 30698.36 GB``, one side
    for an added or removed size — when a side is written otherwise (raw bytes, ``Ti``,
    ``Mi``): a review never shows raw bytes beside ``G``. ``""`` when every side is already in
    ``G`` or none is a quantity (``None``, a secret, an unknown). Two decimals unless whole."""
    def parse(v: object) -> tuple[int, str] | None:
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            return None
        try:
            return quantity_bytes(str(v)), str(v).lstrip("0123456789.")
        except ValueError:
            return None

    sides = [x for x in (parse(old), parse(new)) if x is not None]
    if not sides or all(suffix == "G" for _, suffix in sides):
        return ""

    def show(n: int) -> str:
        whole, rest = divmod(n, SIZE_UNIT_BYTES)
        return f"{whole} {SIZE_UNIT}" if not rest else f"{n / SIZE_UNIT_BYTES:.2f} {SIZE_UNIT}"

    return " → ".join(show(n) for n, _ in sides)


def _plain_number_as_quantity(value: object) -> object:
    # A bare number of bytes (``4294967296``) is a valid Kubernetes quantity; YAML reads it as int.
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _is_quantity(value: str) -> str:
    quantity_bytes(value)
    return value


#: A Kubernetes memory quantity as written (``4Gi``, ``4096Mi``, ``4294967296``).
MemoryQuantity = Annotated[str, BeforeValidator(_plain_number_as_quantity), AfterValidator(_is_quantity)]


_BYTES = re.compile(r"^(?P<num>\d+(\.\d+)?)\s*(?P<unit>[KMGTPE]i?B?|B)?$")
_UNIT = {"": 1, "B": 1, **{f"{p}{s}": (1000 ** (i + 1)) for i, p in enumerate("KMGTPE") for s in ("", "B")},
         **{f"{p}i{s}": (1024 ** (i + 1)) for i, p in enumerate("KMGTPE") for s in ("", "B")}}


def parse_bytes(text: str) -> int:
    """Bytes in a scheduler size (``512GB``, ``6.98TiB``, ``4Gi``, ``1024``): decimal K..E
    (×1000) and binary Ki..Ei (×1024), with or without ``B``; at most
    :data:`MAX_QUANTITY_BYTES` (a Kubernetes int64 quantity). A sign is no part of a size, so
    ``-1GB`` is refused. Raises ValueError."""
    m = _BYTES.match(str(text).strip())
    if not m:
        raise ValueError(f"{text!r} is not a size such as 512GB or 7TiB")
    check_quantity_range(text, m["num"], _UNIT[m["unit"] or ""])
    return int(Decimal(m["num"]) * _UNIT[m["unit"] or ""])   # exact: a float rounds 2^63 − 1 up


def _size_as_written(value: object) -> object:
    # Rule: a scheduler size is written with its unit (``512GB``). YAML reads ``ram: 512`` as
    # a number, and taken as 512 bytes it would make a quota nobody meant; refused here with
    # the unit to add. Zero is zero in every unit: kept (as "0") for the rule that refuses a
    # node with none (config.cluster_file._coreweave_capacity) to name the real problem.
    # The same number quoted (``ram: "512"``) is the same mistake: refused alike.
    if isinstance(value, str) and _UNITLESS.fullmatch(value):
        number = value.strip()
        if float(number) == 0:
            return value
        raise ValueError(f"{value!r} has no unit: write a size such as {number}GB or {number}GiB")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if value == 0:
        return "0"
    raise ValueError(f"{value!r} has no unit: write a size such as {value}GB or {value}GiB")


_UNITLESS = re.compile(r"\s*[0-9]+(?:\.[0-9]*)?\s*")


#: A per-node size as the scheduler's ``resources.ram`` / ``resources.disk`` write it
#: (``512GB``, ``6.98TiB``): a string; a number without a unit, bare or quoted, is refused
#: (:func:`_size_as_written`).
#: Parsed (:func:`parse_bytes`) where it becomes a quota, for the scale groups that are NodePools.
SchedulerSize = Annotated[str, BeforeValidator(_size_as_written)]


def _ip_or_cidr(value: str) -> str:
    # Rule: Traefik's ipAllowList sourceRange and Cloud Armor take IPs or CIDRs; bare IPs are
    # normalised to /32 (IPv4) or /128 (IPv6) so the rendered list is uniform.
    try:
        return str(ipaddress.ip_network(value, strict=True))
    except ValueError as exc:
        raise ValueError(f"{value!r} is not an IP address or CIDR ({exc})") from None


#: An IP address or CIDR range, normalised (``203.0.113.10`` → ``203.0.113.10/32``).
IpOrCidr = Annotated[str, AfterValidator(_ip_or_cidr)]


#: A tuple of at least one ``T``, validated as a list and kept as a tuple. Rule: one problem
#: per mistake — pydantic's tuple validator (measured with pydantic 2.14.4) checks
#: ``min_length`` against the items that *passed*, so a list whose only entry is bad gets a
#: second, misleading "Tuple should have at least 1 item after validation, not 0"; the list
#: validator reports the bad entry alone (an empty list is still ``too_short``). A type
#: checker sees what the model holds after validation: the tuple.
if TYPE_CHECKING:
    NonEmptyTuple = Annotated[tuple[T, ...], Field(min_length=1)]
else:
    NonEmptyTuple = Annotated[list[T], Field(min_length=1), AfterValidator(tuple)]


def unique_items(values: Iterable[T]) -> Iterable[T]:
    """Reject a repeated item in a list that declares a set (TTL days, prefixes, principals,
    secret names): a repeat is almost always a typo for a different value. Raises ValueError."""
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{v!r} is listed twice")
        seen.add(v)
    return values
