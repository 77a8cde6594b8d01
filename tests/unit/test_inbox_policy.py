"""The policy that lets one system drop files into one recipe's inbox and nowhere else (s3task.tasks.inbox_policy),
per store: its S3 Resource is exactly the prefix the sweep takes that recipe's files from (no sibling recipe's inbox,
no task folder), each format escapes what it must, and the S3, GCS and Azure documents name the same prefix.
That IAM enforces the S3 policy: tests/system/test_inbox_policy_enforced.py (moto's IAM, over HTTP, `aws s3 cp`)."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from inboxkit import ANN, OPERATOR, recipe

from s3task.errors import AccessDenied, InvalidInput
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.inbox_policy import AZURE_DATA_ACTIONS, S3_ACTIONS, drop_policy
from s3task.tasks.recipes import slug

LAYOUT = Layout("batch-tasks")
S3 = "s3://drops (https://s3.eu-west-1.amazonaws.com)"
GCS = "gs://drops (https://storage.googleapis.com)"
AZURE = "az://tasks (https://acct.blob.core.windows.net)"
TASK_ID = "01J9Z3X4Y5ABCDEFGHJKMNPQRS"
#: Owners and recipe names with what a key, an ARN, CEL or an Azure condition might take specially.
ODD = [
    ("ann", "CRM weekly"),
    ("o'brien", "Prix d'été * 2024?"),
    ("ann@example.com", 'the "big" $export'),
    ("a*b?c$d", "名前 / 半角"),
    ("back\\slash", "x"),
    (None, "Shared: suppliers' prices"),
]


def arn_pattern(resource: str) -> re.Pattern[str]:
    """An ARN of the Resource element as IAM matches it: ``*`` any run (slashes too), ``?`` one character,
    ``${*}``, ``${?}``, ``${$}`` the characters themselves."""
    out = ""
    for token in re.findall(r"\$\{[*?$]\}|[*?]|[^*?$]+|\$", resource):
        out += {"*": ".*", "?": "."}.get(token) or re.escape(token[2] if token.startswith("${") else token)
    return re.compile(out, re.DOTALL)


def s3_statement(policy_text: str) -> dict:
    document = json.loads(policy_text)
    assert document["Version"] == "2012-10-17"  # the version that knows ${*}, ${?} and ${$}
    [statement] = document["Statement"]
    assert statement["Effect"] == "Allow" and set(statement) == {"Sid", "Effect", "Action", "Resource"}
    return statement


def ids() -> list[str]:
    return [Layout.recipe_id(owner, slug(name)) for owner, name in ODD]


@pytest.mark.parametrize("rid", ids())
def test_the_s3_policy_allows_exactly_the_prefix_the_sweep_takes_that_recipes_files_from(rid: str) -> None:
    policy = drop_policy(S3, LAYOUT, rid)
    prefix = LAYOUT.inbox_prefix(rid)
    assert policy.store == "s3" and policy.prefix == prefix
    statement = s3_statement(policy.parts[0].text)
    assert statement["Action"] == list(S3_ACTIONS)
    allowed = arn_pattern(statement["Resource"])
    key = prefix + "2026-05 export.csv"
    assert allowed.fullmatch(f"arn:aws:s3:::drops/{key}")
    assert LAYOUT.inbox_file(key) == (rid, "2026-05 export.csv"), "the sweep takes it for this recipe"
    sibling = rid + "2"  # a recipe whose id this one's is a prefix of
    refused = [
        LAYOUT.inbox_prefix(sibling) + "a.csv",
        LAYOUT.inbox_prefix("own/bob/crm-weekly") + "a.csv",
        LAYOUT.inbox_prefix("shared/crm-weekly") + "a.csv",
        LAYOUT.inbox_root + "loose.csv",
        prefix.rstrip("/"),  # the prefix without its slash: not a key in the inbox
        LAYOUT.task_prefix(TASK_ID) + "status.json",
        LAYOUT.task_prefix(TASK_ID) + "input.csv",
        LAYOUT.recipe_key_of(rid),
        LAYOUT.inbox_paused_key(rid),
        LAYOUT.inbox_taken_root(rid) + "x.json",
        LAYOUT.inbox_lease_key,
        "other-prefix/" + key,
    ]
    for other in refused:
        assert not allowed.fullmatch(f"arn:aws:s3:::drops/{other}"), other
        assert not allowed.fullmatch(f"arn:aws:s3:::other-bucket/{key}")
    # Every key the policy lets the principal write is one the sweep takes as a file of this recipe.
    for name in ("a.csv", "sub/dir/b.csv", "*", "?", "${x}"):
        assert allowed.fullmatch(f"arn:aws:s3:::drops/{prefix}{name}")
        assert LAYOUT.inbox_file(prefix + name) == (rid, name)


def test_the_s3_resource_writes_wildcard_and_variable_characters_of_the_key_as_themselves() -> None:
    layout = Layout("odd$pre*fix?")
    statement = s3_statement(drop_policy(S3, layout, "own/ann/crm-weekly").parts[0].text)
    assert statement["Resource"] == "arn:aws:s3:::drops/odd${$}pre${*}fix${?}/inbox/own/ann/crm-weekly/*"
    allowed = arn_pattern(statement["Resource"])
    assert allowed.fullmatch("arn:aws:s3:::drops/odd$pre*fix?/inbox/own/ann/crm-weekly/a.csv")
    assert not allowed.fullmatch("arn:aws:s3:::drops/oddXpreANYTHINGfixZ/inbox/own/ann/crm-weekly/a.csv")


def gcs_prefix(policy_text: str) -> str:
    """The prefix the GCS condition's expression names, its CEL string literal read back (JSON's escapes are the
    same for the characters it uses)."""
    condition = json.loads(policy_text)
    assert set(condition) == {"title", "description", "expression"}
    found = re.fullmatch(r'resource\.name\.startsWith\(("(?:[^"\\]|\\.)*")\)', condition["expression"])
    assert found, condition["expression"]
    return json.loads(found.group(1))


def azure_prefix(condition: str, container: str = "tasks") -> str:
    """The blob path prefix an Azure condition names (single-quoted, nothing escaped), its container checked."""
    for action in AZURE_DATA_ACTIONS:
        assert f"!(ActionMatches{{'{action}'}})" in condition
    assert f"containers:name] StringEquals '{container}'" in condition
    [value] = re.findall(r"containers/blobs:path\] StringStartsWith '([^']*)'", condition)
    assert condition.count("StringStartsWith") == 1 and "StringLike" not in condition
    return value


@pytest.mark.parametrize("rid", ids())
def test_gcs_and_azure_name_the_same_prefix_as_s3(rid: str) -> None:
    prefix = LAYOUT.inbox_prefix(rid)
    s3 = arn_pattern(s3_statement(drop_policy(S3, LAYOUT, rid).parts[0].text)["Resource"])
    gcs = drop_policy(GCS, LAYOUT, rid)
    assert gcs.prefix == prefix and gcs_prefix(gcs.parts[0].text) == f"projects/_/buckets/drops/objects/{prefix}"
    assert "--role=roles/storage.objectCreator" in gcs.parts[1].text.split()
    azure = drop_policy(AZURE, LAYOUT, rid)
    role, condition, assign = (p.text for p in azure.parts)
    assert azure.prefix == prefix and azure_prefix(condition) == prefix
    assert s3.fullmatch(f"arn:aws:s3:::drops/{prefix}x")
    assert json.loads(role)["DataActions"] == list(AZURE_DATA_ACTIONS) and json.loads(role)["Actions"] == []
    words = shlex.split(assign)  # as bash reads the command: the condition arrives whole
    pasted = words[words.index("--condition") + 1]
    assert azure_prefix(pasted) == prefix and pasted == " ".join(line.strip() for line in condition.splitlines())
    assert words[words.index("--scope") + 1].endswith("/storageAccounts/acct/blobServices/default/containers/tasks")
    assert words[words.index("--condition-version") + 1] == "2.0"


def test_gcs_escapes_quotes_and_backslashes_and_azure_refuses_a_quote_it_cannot_escape() -> None:
    layout = Layout('q"uo\\te')
    gcs = drop_policy(GCS, layout, "shared/x")
    assert gcs_prefix(gcs.parts[0].text) == 'projects/_/buckets/drops/objects/q"uo\\te/inbox/shared/x/'
    assert azure_prefix(drop_policy(AZURE, layout, "shared/x").parts[1].text) == 'q"uo\\te/inbox/shared/x/'
    with pytest.raises(InvalidInput, match="Azure role assignment condition"):
        drop_policy(AZURE, Layout("it's"), "shared/x")
    assert "'" not in drop_policy(AZURE, LAYOUT, Layout.recipe_id("o'brien", slug("d'été"))).prefix


def test_the_store_description_gives_the_account_and_says_when_s3_is_not_aws() -> None:
    azurite = drop_policy("az://c1 (http://127.0.0.1:10000/devstoreaccount1)", LAYOUT, "shared/x")
    assert "/storageAccounts/devstoreaccount1/blobServices/default/containers/c1" in azurite.parts[2].text
    assert not any("not AWS's own" in w for w in drop_policy(S3, LAYOUT, "shared/x").words)
    minio = drop_policy("s3://drops (http://127.0.0.1:9000)", LAYOUT, "shared/x")
    assert any("not AWS's own (http://127.0.0.1:9000)" in w for w in minio.words)
    local = drop_policy("local directory /srv/tasks", LAYOUT, "own/ann/crm-weekly")
    assert local.store == "local" and local.parts == []
    assert "/srv/tasks/batch-tasks/inbox/own/ann/crm-weekly/" in local.words[0]
    assert any("treat an account that may drop files here as one that may make tasks" in w for w in local.words)


def test_the_policy_is_for_the_recipes_owner_and_operators(tmp_path) -> None:
    service = TaskService(LocalStore(tmp_path / "store"), LAYOUT)
    _, rid = recipe(service)
    mine = service.inboxes.policy(ANN, "CRM weekly")
    assert mine.recipe_id == rid and mine.prefix == LAYOUT.inbox_prefix(rid)
    assert f"{(tmp_path / 'store').resolve()}/{LAYOUT.inbox_prefix(rid)}" in mine.words[0]
    assert service.inboxes.policy(OPERATOR, rid) == mine
    with pytest.raises(AccessDenied, match="only an operator or its owner"):
        service.inboxes.policy(Actor("bob"), rid)
    _, shared = recipe(service, OPERATOR, "Suppliers", shared=True)
    with pytest.raises(AccessDenied):
        service.inboxes.policy(ANN, shared)
    assert service.inboxes.policy(OPERATOR, shared).prefix == LAYOUT.inbox_prefix(shared)
