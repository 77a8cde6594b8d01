"""``S3TASK_STORE=az://<container>/<prefix>``: which credentials of the environment open the Azure store.

Nothing here reaches a server: the clients are made, not used (the contract suite runs on Azurite).
"""

from __future__ import annotations

import pytest

from s3task.config import Settings
from s3task.errors import SettingsError, StoreError
from s3task.layout import DEFAULT_PREFIX
from s3task.store import open_store
from s3task.store.azure import AzureStore

AZURITE = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6"
    "IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
)
VARIABLES = ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_URL", "AZURE_STORAGE_ACCOUNT")


@pytest.fixture(autouse=True)
def no_azure_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_connection_string_opens_the_container_with_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", AZURITE)
    store, layout = open_store("az://tasks/team/batch")
    assert isinstance(store, AzureStore) and store.container == "tasks" and layout.prefix == "team/batch"
    assert store.description == "az://tasks (http://127.0.0.1:10000/devstoreaccount1)"  # no key in it
    assert open_store("az://tasks")[1].prefix == DEFAULT_PREFIX


def test_the_connection_string_wins_over_an_account_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", AZURITE)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_URL", "https://other.blob.core.windows.net")
    assert "127.0.0.1:10000" in open_store("az://tasks/p")[0].description


@pytest.mark.parametrize(
    ("name", "value"),
    [("AZURE_STORAGE_ACCOUNT_URL", "https://acct.blob.core.windows.net"), ("AZURE_STORAGE_ACCOUNT", "acct")],
)
def test_an_account_url_or_name_signs_in_with_default_azure_credential(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    identity = pytest.importorskip("azure.identity", reason="azure-identity (the azure extra) is not installed")
    monkeypatch.setenv(name, value)
    store, _ = open_store("az://tasks/p")
    assert store.description == "az://tasks (https://acct.blob.core.windows.net)"
    assert isinstance(store.client.credential, identity.DefaultAzureCredential)


def test_no_credentials_and_no_container_are_one_line_errors() -> None:
    with pytest.raises(StoreError, match="az:// needs AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_URL"):
        open_store("az://tasks/p")
    with pytest.raises(ValueError, match="names no container"):
        open_store("az:///p")


def test_settings_take_an_az_url_and_refuse_a_broken_one() -> None:
    assert Settings.load(environ={"S3TASK_STORE": "az://tasks/p"}).store == "az://tasks/p"
    with pytest.raises(SettingsError):
        Settings.load(environ={"S3TASK_STORE": "az:/tasks"})


def test_a_client_the_sdk_refuses_to_make_is_a_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("azure.identity", reason="azure-identity (the azure extra) is not installed")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_URL", "http://acct.blob.core.windows.net")  # a token needs HTTPS
    with pytest.raises(
        StoreError, match="cannot set up the Azure client: Token credential is only supported with HTTPS"
    ):
        open_store("az://tasks/p")
