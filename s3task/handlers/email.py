"""``email_enrichment``: check and describe the email address on every row."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidInput
from . import ERROR_COLUMN, Param, TaskType, register

ADDED_COLUMNS = ("email_normalized", "email_domain", "is_free_provider", "is_role_account")

#: Header names (lowercase, letters and digits only) taken to mean "the email column", best first.
EMAIL_HEADERS = (
    "email",
    "emailaddress",
    "mail",
    "mailaddress",
    "emailadresse",
    "emailadres",
    "correo",
    "correoelectronico",
    "courriel",
    "adressemail",
    "adresseemail",
    "posta",
    "emailid",
    "emails",
)

#: Mailbox providers anyone can sign up to for free.
FREE_PROVIDERS = frozenset(
    """
    gmail.com googlemail.com yahoo.com yahoo.co.uk yahoo.fr yahoo.de yahoo.es yahoo.it yahoo.co.in yahoo.co.jp
    yahoo.com.br ymail.com rocketmail.com hotmail.com hotmail.co.uk hotmail.fr hotmail.de hotmail.es hotmail.it
    outlook.com outlook.fr outlook.de live.com live.co.uk live.fr live.de msn.com aol.com aim.com icloud.com me.com
    mac.com proton.me protonmail.com protonmail.ch pm.me tutanota.com tuta.io tutamail.com fastmail.com
    fastmail.fm hushmail.com zoho.com zohomail.com mail.com email.com inbox.com gmx.com gmx.net gmx.de gmx.at
    gmx.ch gmx.fr web.de t-online.de freenet.de mail.ru bk.ru inbox.ru list.ru yandex.ru yandex.com ya.ru
    rambler.ru qq.com 163.com 126.com yeah.net sina.com sohu.com aliyun.com naver.com daum.net hanmail.net
    free.fr orange.fr wanadoo.fr laposte.net sfr.fr libero.it virgilio.it tiscali.it alice.it seznam.cz
    centrum.cz wp.pl o2.pl interia.pl onet.pl op.pl rediffmail.com uol.com.br bol.com.br terra.com.br
    btinternet.com sky.com virginmedia.com talktalk.net comcast.net verizon.net att.net sbcglobal.net cox.net
    charter.net earthlink.net juno.com netzero.net optonline.net bigpond.com optusnet.com.au shaw.ca
    rogers.com sympatico.ca telenet.be skynet.be ziggo.nl kpnmail.nl home.nl planet.nl bluewin.ch
    """.split()  # noqa: SIM905  (a word list reads better than a list literal)
)

#: Local parts that name a function or a team rather than a person.
ROLE_ACCOUNTS = frozenset(
    """
    abuse accounting accounts admin administrator billing booking bookings careers compliance contact
    contactus customercare customerservice customersupport dev devnull dns enquiries enquiry events feedback
    finance ftp hello help helpdesk hostmaster hr info information inquiries inquiry investor investors it
    jobs legal list mail mailer-daemon marketing media news newsletter no-reply noc noreply do-not-reply
    donotreply office ops orders partners partnership postmaster press privacy pr purchasing recruiting
    recruitment reservations root sales security service services shop support sysadmin team tech
    webmaster welcome usenet uucp www
    """.split()  # noqa: SIM905  (a word list reads better than a list literal)
)

_LOCAL = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = rf"(?:{_LABEL}\.)+(?:[a-z]{{2,63}}|xn--[a-z0-9-]{{1,59}})"


def _key(header: str) -> str:
    return re.sub(r"[\W_]+", "", header.lower())


def find_email_column(columns: list[str], wanted: str) -> str:
    """The column named ``wanted`` (exact, then ignoring case and spaces), or one whose header says email."""
    listed = ", ".join(repr(c) for c in columns) or "(none)"
    if wanted:
        if wanted in columns:
            return wanted
        for column in columns:
            if column.strip().lower() == wanted.strip().lower():
                return column
        raise InvalidInput(f"there is no column named {wanted!r}; columns are: {listed}")
    keys = {column: _key(column) for column in columns}
    for name in EMAIL_HEADERS:
        for column, key in keys.items():
            if key == name:
                return column
    for column, key in keys.items():
        if "email" in key:
            return column
    raise InvalidInput(f"no email column found; columns are: {listed}; set the 'email column' parameter")


@register
class EmailEnrichment(TaskType):
    name = "email_enrichment"
    title = "Check and enrich email addresses"
    description = (
        "Checks the email address on every row and adds four columns: the address cleaned up "
        "(spaces removed, lower case) in email_normalized, the part after the @ in email_domain, "
        "is_free_provider (true for addresses at free mailbox providers such as Gmail or Outlook) and "
        "is_role_account (true for shared addresses such as info@ or sales@ rather than a person). "
        "Rows whose address is missing or not valid keep their place in the file; the new columns stay "
        "empty and the error column says what is wrong, for example 'invalid email: no @'. The email "
        "column is found by its header (email, e-mail, mail, email address and the like) unless you name it."
    )
    params = (
        Param(
            "email_column",
            "str",
            default="",
            help="Header of the column that holds the email addresses. Leave empty to find it automatically.",
        ),
    )

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__(self.validate(params))
        self._column: str | None = None

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        if self._column is None:
            self._column = find_email_column([str(c) for c in chunk.columns], self.params["email_column"] or "")
        out = chunk.copy()
        for name, values in enrich(chunk[self._column]).items():
            out[name] = values
        return out


def enrich(raw: pd.Series) -> dict[str, pd.Series]:
    """The added columns for a column of addresses, computed column-wise (no loop over rows)."""
    email = raw.astype("str").str.strip().str.lower()
    if email.str.contains(r"^mailto:|^<.*>$", regex=True).any():
        email = email.str.replace(r"^mailto:", "", regex=True).str.replace(r"^<(.*)>$", r"\1", regex=True)
    at = email.str.count("@")
    local = email.str.replace(r"@.*$", "", regex=True)
    domain = email.str.replace(r"^.*@", "", regex=True)
    problems = [
        (email == "", "missing"),
        (at == 0, "no @"),
        (at > 1, "more than one @"),
        (email.str.contains(r"\s", regex=True), "contains a space"),
        (local == "", "nothing before the @"),
        (domain == "", "nothing after the @"),
        (email.str.len() > 254, "longer than 254 characters"),
        (local.str.len() > 64, "more than 64 characters before the @"),
        (local.str.contains(r"^\.|\.\.|\.$", regex=True), "a dot at the start or end of the name, or two in a row"),
        (~local.str.fullmatch(_LOCAL), "characters before the @ that are not allowed"),
        (~domain.str.contains(".", regex=False), "the domain has no dot"),
        (~domain.str.fullmatch(_DOMAIN), "the domain is not valid"),
    ]
    # The first problem found on a row, as a code (0 = none): one pass per rule, not per row.
    code = np.select([mask.to_numpy(dtype=bool) for mask, _ in problems], range(1, len(problems) + 1), 0)
    valid = code == 0
    errors = ["", *(f"invalid email: {text}" for _, text in problems)]
    free = domain.isin(FREE_PROVIDERS).to_numpy(dtype=bool)
    role = local.str.replace(r"\+.*$", "", regex=True).isin(ROLE_ACCOUNTS).to_numpy(dtype=bool)
    flags = ["", "false", "true"]
    return {
        "email_normalized": email.where(valid, ""),
        "email_domain": domain.where(valid, ""),
        "is_free_provider": _pick(flags, np.where(valid, 1 + free, 0), raw.index),
        "is_role_account": _pick(flags, np.where(valid, 1 + role, 0), raw.index),
        ERROR_COLUMN: _pick(errors, code, raw.index),
    }


def _pick(texts: list[str], codes: np.ndarray, index: pd.Index) -> pd.Series:
    """A text column holding ``texts[code]`` for each code (built by Arrow, no Python strings per row)."""
    column = pc.take(pa.array(texts, pa.string()), pa.array(codes.astype(np.int8)))
    return pd.Series(pa.chunked_array([column]).to_pandas(), index=index)
