"""Who may drop files into one recipe's inbox: the policy that lets one dropping principal write there only.

A file in ``<prefix>/inbox/<recipe id>/`` becomes a task made as the recipe's owner, so whoever may write
under that prefix may make tasks as them. :func:`drop_policy` gives, for the store in use, the document
that limits one principal (the system that drops the files) to creating objects under exactly
:meth:`s3task.layout.Layout.inbox_prefix` of one recipe — the prefix the sweep takes files from — and
nothing else: not a sibling recipe's inbox, not the task folders, no reading, listing or deleting.

- **S3**: an IAM policy (JSON) for the dropping user or role. ``aws s3 cp`` of a large file is an upload
  in parts: CreateMultipartUpload, UploadPart and CompleteMultipartUpload are all ``s3:PutObject``;
  ``s3:AbortMultipartUpload`` and ``s3:ListMultipartUploadParts`` let it clean up and resume. In an ARN
  ``*`` and ``?`` are wildcards and ``${…}`` a policy variable: a literal ``*``, ``?`` or ``$`` of the key is
  written ``${*}``, ``${?}``, ``${$}`` (which needs ``"Version": "2012-10-17"``).
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html,
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html)
- **Azure Blob**: a stored access policy or a SAS cannot be limited to a virtual directory without a
  hierarchical namespace; what limits writes to a blob-name prefix is an Azure role assignment
  *condition* (ABAC) on the blob path. A custom role with only the two data actions an upload needs
  (``blobs/write``: Put Blob, Put Block, Put Block List; ``blobs/add/action``: create), assigned on the
  container, with the condition ``@Resource[…/blobs:path] StringStartsWith '<prefix>'``. Not *Storage Blob
  Data Contributor*: its read, delete and move data actions, and its container actions (delete the
  container), are not what a condition on writes limits. The blob path is written without the container
  name or a leading slash and without URL encoding; ``StringStartsWith`` is case-sensitive and takes
  ``*`` and ``?`` literally (only the ``Like`` operators treat them as wildcards). A string is in single
  quotes, and the syntax gives no escape for a quote inside one, so a prefix with ``'`` is refused.
  (https://learn.microsoft.com/azure/storage/blobs/storage-auth-abac-attributes — "Blob path";
  https://learn.microsoft.com/azure/storage/blobs/storage-auth-abac-examples — "Write blobs in named
  containers with a path"; https://learn.microsoft.com/azure/role-based-access-control/conditions-format)
- **GCS**: ``roles/storage.objectCreator`` on the bucket with an IAM condition
  ``resource.name.startsWith("projects/_/buckets/<bucket>/objects/<prefix>")``: the object's full resource
  name (the bare prefix matches nothing). A CEL string literal in double quotes escapes ``\\`` and ``"``.
  IAM conditions need uniform bucket-level access on the bucket, and a policy of version 3.
  (https://cloud.google.com/storage/docs/access-control/iam#conditions,
  https://cloud.google.com/sdk/gcloud/reference/storage/buckets/add-iam-policy-binding,
  https://cloud.google.com/storage/docs/json_api/v1/buckets/setIamPolicy)
- **The local store**: words only: a folder's permissions, and their limits.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..errors import InvalidInput
from ..layout import Layout

#: The S3 actions the dropping principal gets, on its inbox's keys only.
S3_ACTIONS = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
#: The Azure data actions of the custom role: an upload (Put Blob, Put Block, Put Block List) and nothing else.
AZURE_DATA_ACTIONS = (
    "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
    "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action",
)
AZURE_PATH = "@Resource[Microsoft.Storage/storageAccounts/blobServices/containers/blobs:path]"
AZURE_CONTAINER = "@Resource[Microsoft.Storage/storageAccounts/blobServices/containers:name]"
AZURE_ROLE = "s3task inbox dropper"
GCS_ROLE = "roles/storage.objectCreator"


@dataclass(frozen=True)
class Part:
    """One document to paste: what it is (``caption``), its language (``json``, ``bash``, ``text``) and text."""

    caption: str
    language: str
    text: str


@dataclass(frozen=True)
class DropPolicy:
    """What limits who may drop files into one recipe's inbox, for one store."""

    #: ``s3``, ``azure``, ``gcs`` or ``local``.
    store: str
    recipe_id: str
    #: The key prefix the policy allows writes under: the layout's inbox prefix of the recipe.
    prefix: str
    #: The documents, in the order they are applied (none on the local store).
    parts: list[Part] = field(default_factory=list)
    #: What the documents do and do not do, in words.
    words: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "store": self.store,
            "recipe_id": self.recipe_id,
            "prefix": self.prefix,
            "parts": [{"caption": p.caption, "language": p.language, "text": p.text} for p in self.parts],
            "words": self.words,
        }


def drop_policy(description: str, layout: Layout, recipe_id: str) -> DropPolicy:
    """The policy for the store ``description`` names (a store's ``description``) and inbox ``recipe_id``."""
    prefix = layout.inbox_prefix(recipe_id)
    where, _, rest = description.partition(" ")
    endpoint = rest.strip().removeprefix("(").removesuffix(")")
    if where.startswith("s3://"):
        return _s3(where[5:], endpoint, recipe_id, prefix)
    if where.startswith("gs://"):
        return _gcs(where[5:], recipe_id, prefix)
    if where.startswith("az://"):
        return _azure(where[5:], endpoint, recipe_id, prefix)
    return _local(description.removeprefix("local directory "), recipe_id, prefix)


# --- S3 --------------------------------------------------------------------------------------------


def arn_literal(text: str) -> str:
    """``text`` as a literal in a resource ARN: ``*``, ``?`` and ``$`` as the policy variables that stand for them."""
    return re.sub(r"[*?$]", lambda m: "${" + m.group(0) + "}", text)


def s3_policy_document(bucket: str, prefix: str) -> dict[str, object]:
    """The IAM policy: create objects (whole or in parts) under ``prefix`` in ``bucket``, nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DropIntoOneInbox",
                "Effect": "Allow",
                "Action": list(S3_ACTIONS),
                "Resource": f"arn:aws:s3:::{arn_literal(bucket)}/{arn_literal(prefix)}*",
            }
        ],
    }


def _s3(bucket: str, endpoint: str, recipe_id: str, prefix: str) -> DropPolicy:
    on_aws = endpoint in ("", "None") or (urlsplit(endpoint).hostname or "").endswith(".amazonaws.com")
    words = [
        f"Attach this policy to the user or role that drops the files: it may create objects under "
        f"s3://{bucket}/{prefix} (in one PUT or in parts, as “aws s3 cp” sends a large file) and nothing else — "
        "no other inbox, no task's files, no reading, listing or deleting.",
        "It must be the only policy giving that principal write access to the bucket; nobody else should be able "
        "to write under inbox/ at all, since a file there becomes a task made as the recipe's owner.",
    ]
    if not on_aws:
        words.append(
            f"This store is not AWS's own ({endpoint}): an S3-compatible server that takes IAM policies may take "
            "this one as it is; s3task has not checked any."
        )
    text = json.dumps(s3_policy_document(bucket, prefix), indent=2, ensure_ascii=False)
    return DropPolicy("s3", recipe_id, prefix, [Part("IAM policy for the dropping user or role", "json", text)], words)


# --- Azure Blob ------------------------------------------------------------------------------------


def azure_literal(text: str) -> str:
    """``text`` as a single-quoted string of a role assignment condition (no quote can be escaped: refused)."""
    if "'" in text or any(ord(c) < 32 for c in text):
        raise InvalidInput(
            f"{text!r} cannot be written in an Azure role assignment condition (a quote or control character)"
        )
    return f"'{text}'"


def azure_condition(container: str, prefix: str) -> str:
    """Writes and creates only in ``container``, only to blob names starting with ``prefix``."""
    actions = "\n  AND\n  ".join(f"!(ActionMatches{{'{a}'}})" for a in AZURE_DATA_ACTIONS)
    return (
        "(\n (\n  " + actions + "\n )\n OR\n (\n"
        f"  {AZURE_CONTAINER} StringEquals {azure_literal(container)}\n  AND\n"
        f"  {AZURE_PATH} StringStartsWith {azure_literal(prefix)}\n )\n)"
    )


def azure_account(account_url: str) -> str:
    """The storage account's name: ``acct`` of ``https://acct.blob.core.windows.net`` (or Azurite's path)."""
    parts = urlsplit(account_url)
    host = parts.hostname or ""
    if ".blob." in host:
        return host.split(".", 1)[0]
    return parts.path.strip("/").split("/", 1)[0] or "ACCOUNT"


def _azure(container: str, account_url: str, recipe_id: str, prefix: str) -> DropPolicy:
    account = azure_account(account_url)
    group = "/subscriptions/SUBSCRIPTION_ID/resourceGroups/RESOURCE_GROUP"
    scope = f"{group}/providers/Microsoft.Storage/storageAccounts/{account}/blobServices/default/containers/{container}"
    role = {
        "Name": AZURE_ROLE,
        "IsCustom": True,
        "Description": "Upload blobs, nothing else; limited to one prefix by its assignment's condition.",
        "Actions": [],
        "NotActions": [],
        "DataActions": list(AZURE_DATA_ACTIONS),
        "NotDataActions": [],
        "AssignableScopes": [group],  # a custom role is assignable in a resource group; assigned on the container
    }
    condition = azure_condition(container, prefix)
    one_line = " ".join(line.strip() for line in condition.splitlines())
    assign = (  # single-quoted: bash expands no `!` there
        f"az role assignment create --role {shlex.quote(AZURE_ROLE)} --assignee PRINCIPAL_ID "
        f"--scope {shlex.quote(scope)} --condition-version 2.0 --condition {shlex.quote(one_line)}"
    )
    words = [
        f"Create the role once (“az role definition create --role-definition @inbox-dropper.json”), then assign "
        f"it to the identity that drops the files, on the container {container}, with the condition: it may upload "
        f"blobs whose names start with {prefix} and nothing else — no other inbox, no task's files, no reading, "
        "listing or deleting. Replace SUBSCRIPTION_ID, RESOURCE_GROUP and PRINCIPAL_ID.",
        "Not Storage Blob Data Contributor: the condition limits writes, and that role also reads, deletes and "
        "moves blobs and may delete the container. A SAS or stored access policy cannot be limited to a prefix "
        "of blob names on an account without a hierarchical namespace. The dropping command then signs in "
        "(“az storage blob upload --auth-mode login --account-name " + account + " …”).",
    ]
    return DropPolicy(
        "azure",
        recipe_id,
        prefix,
        [
            Part("custom role (inbox-dropper.json)", "json", json.dumps(role, indent=2, ensure_ascii=False)),
            Part("role assignment condition (version 2.0)", "text", condition),
            Part("assign it", "bash", assign),
        ],
        words,
    )


# --- Google Cloud Storage --------------------------------------------------------------------------


def cel_literal(text: str) -> str:
    """``text`` as a double-quoted CEL string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group(0)):04x}", escaped) + '"'


def gcs_resource_prefix(bucket: str, prefix: str) -> str:
    """The full resource name every object under ``prefix`` in ``bucket`` starts with."""
    return f"projects/_/buckets/{bucket}/objects/{prefix}"


def gcs_condition(bucket: str, prefix: str) -> dict[str, str]:
    """The IAM condition (as ``--condition-from-file`` reads it): objects under ``prefix`` only."""
    return {
        "title": "one s3task inbox",
        "description": f"create objects under {prefix} only",
        "expression": f"resource.name.startsWith({cel_literal(gcs_resource_prefix(bucket, prefix))})",
    }


def _gcs(bucket: str, recipe_id: str, prefix: str) -> DropPolicy:
    condition = json.dumps(gcs_condition(bucket, prefix), indent=2, ensure_ascii=False)
    grant = (
        f"gcloud storage buckets add-iam-policy-binding gs://{bucket} --member=PRINCIPAL "
        f"--role={GCS_ROLE} --condition-from-file=inbox-condition.json"
    )
    words = [
        f"Grant {GCS_ROLE} on the bucket to the account that drops the files (PRINCIPAL: "
        "serviceAccount:…, user:…), with this condition (saved as inbox-condition.json): it may create objects "
        f"under gs://{bucket}/{prefix} and nothing else — no other inbox, no task's files, no reading, listing or "
        "deleting. IAM conditions need uniform bucket-level access on the bucket.",
        "The role cannot delete, so it cannot replace a file of the same name still waiting in the inbox, and "
        "“gcloud storage cp” must not use parallel composite uploads (they delete their temporary parts: "
        "“gcloud config set storage/parallel_composite_upload_enabled False”).",
    ]
    return DropPolicy(
        "gcs",
        recipe_id,
        prefix,
        [Part("IAM condition (inbox-condition.json)", "json", condition), Part("grant it", "bash", grant)],
        words,
    )


# --- the local store -------------------------------------------------------------------------------


def _local(root: str, recipe_id: str, prefix: str) -> DropPolicy:
    folder = f"{root}/{prefix}"
    words = [
        "On a local directory there is no policy to attach: the folders' permissions decide, and they cannot "
        f"limit an account to this inbox as the clouds' policies do. The drop command writes into {folder}, "
        "making it first (“mkdir -p”) when it is missing.",
        "A sweep removes an inbox's folder once it is empty, and every folder above it left empty, up to the "
        "store's directory. Making them again needs write permission on the nearest folder still there — at "
        "worst the store's directory itself — and an account that may write in a folder may make any inbox "
        "(or anything else) in it. So on the local store, treat an account that may drop files here as one that "
        "may make tasks as the recipe's owner, and possibly as anyone.",
        "Not tested here: a set-up where an administrator makes the folder, writable by the dropping account and "
        "the workers' account, inside a folder neither may write. The sweep then cannot remove it (it leaves a "
        "folder it cannot remove) and the dropping account cannot make another.",
    ]
    return DropPolicy("local", recipe_id, prefix, [], words)
