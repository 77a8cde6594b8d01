"""``email_enrichment``: check and describe the email address on every row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..email_rule import ADDRESS as _ADDRESS  # the rule, shared with the steps' email check
from ..email_rule import DOMAIN as _DOMAIN
from ..email_rule import LOCAL as _LOCAL
from . import ERROR_COLUMN, Param, TaskType, columns, register

if TYPE_CHECKING:  # used in annotations; imported where used, so listing task types needs no pandas
    import numpy as np
    import pandas as pd
    import pyarrow as pa

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

#: The email column, as the New task page, the submit check and the worker find it (s3task.handlers.columns).
EMAIL = columns.Need(
    label="email",
    param="email_column",
    aliases=EMAIL_HEADERS,
    contains=("email",),
    looks_like=r"^[^@\s,;|]+@[^@\s,;|]+\.[^@\s,;|.]{2,}$",  # one address, nothing around it
)


def find_email_column(names: list[str], wanted: str, sample: Mapping[str, Sequence[str]] | None = None) -> str:
    """The column named ``wanted`` (exact, then ignoring case and spaces), or one whose header says
    email, or (``sample``: the first rows' values by column) the one whose values are addresses."""
    return columns.require((EMAIL,), {EMAIL.param: wanted}, names, sample or {})[EMAIL.param]


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
        "column is found by its header (email, e-mail, mail, email address and the like), else by values that "
        "look like addresses, unless you name it; a file without one is refused before it is queued."
    )
    params = (
        Param(
            "email_column",
            "str",
            default="",
            help="Header of the column that holds the email addresses. Leave empty to find it automatically.",
        ),
    )
    needs = (EMAIL,)

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__(self.validate(params))
        self._column: str | None = None

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        if self._column is None:  # the first chunk: its first rows are the ones the submit check looked at
            sample = {str(c): chunk[c].head(columns.SAMPLE_ROWS).fillna("").astype(str).tolist() for c in chunk.columns}
            self._column = find_email_column([str(c) for c in chunk.columns], self.values["email_column"] or "", sample)
        out = chunk.copy()
        for name, values in enrich(chunk[self._column]).items():
            out[name] = values
        return out


def enrich(raw: pd.Series) -> dict[str, pd.Series]:
    """The added columns for a column of addresses, computed column-wise with Arrow (no loop over rows).

    One regular expression decides which addresses are valid; the reasons are
    worked out only for the invalid ones, which are usually few.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    email = pc.utf8_lower(pc.utf8_trim_whitespace(_text(raw)))
    if pc.any(pc.starts_with(email, "mailto:")).as_py() or pc.any(pc.starts_with(email, "<")).as_py():
        email = pc.replace_substring_regex(pc.replace_substring_regex(email, "^mailto:", ""), "^<(.*)>$", r"\1")
    valid = _bools(pc.match_substring_regex(email, _ADDRESS))
    valid &= _bools(pc.less_equal(pc.binary_length(email), 254))
    valid &= _bools(pc.less_equal(pc.find_substring(email, "@"), 64))
    code = np.zeros(len(valid), dtype=np.int8)
    invalid = np.flatnonzero(~valid)
    if len(invalid):
        code[invalid] = _problems(email.take(pa.array(invalid)))
    domain = pc.replace_substring_regex(email, "^[^@]*@", "")
    base_local = pc.replace_substring_regex(email, "[+@].*$", "")  # before the @, without a +tag
    free = _bools(pc.is_in(domain, value_set=pa.array(sorted(FREE_PROVIDERS), domain.type)))
    role = _bools(pc.is_in(base_local, value_set=pa.array(sorted(ROLE_ACCOUNTS), base_local.type)))
    mask = pa.array(valid)
    flags = ["", "false", "true"]
    return {
        "email_normalized": _series(pc.if_else(mask, email, ""), raw.index),
        "email_domain": _series(pc.if_else(mask, domain, ""), raw.index),
        "is_free_provider": _pick(flags, np.where(valid, 1 + free, 0), raw.index),
        "is_role_account": _pick(flags, np.where(valid, 1 + role, 0), raw.index),
        ERROR_COLUMN: _pick(["", *(f"invalid email: {text}" for text in PROBLEMS)], code, raw.index),
    }


PROBLEMS = (
    "missing",
    "no @",
    "more than one @",
    "contains a space",
    "nothing before the @",
    "nothing after the @",
    "longer than 254 characters",
    "more than 64 characters before the @",
    "a dot at the start or end of the name, or two in a row",
    "characters before the @ that are not allowed",
    "the domain has no dot",
    "the domain is not valid",
)


def _problems(email: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """For invalid addresses: 1 + the index in PROBLEMS of the first rule each one breaks."""
    import numpy as np
    import pyarrow.compute as pc

    at = pc.count_substring(email, "@")
    local = pc.replace_substring_regex(email, "@.*$", "")
    domain = pc.replace_substring_regex(email, "^.*@", "")
    rules = [
        pc.equal(email, ""),
        pc.equal(at, 0),
        pc.greater(at, 1),
        pc.match_substring_regex(email, r"\s"),
        pc.starts_with(email, "@"),
        pc.ends_with(email, "@"),
        pc.greater(pc.binary_length(email), 254),
        pc.greater(pc.binary_length(local), 64),
        pc.match_substring_regex(local, r"^\.|\.\.|\.$"),
        pc.invert(pc.match_substring_regex(local, rf"^{_LOCAL}$")),
        pc.invert(pc.match_substring(domain, ".")),
        pc.invert(pc.match_substring_regex(domain, rf"^{_DOMAIN}$")),
    ]
    # The last rule catches everything the address pattern refuses, so every row gets a reason.
    return np.select([_bools(rule) for rule in rules], range(1, len(rules) + 1), len(rules)).astype(np.int8)


def _text(series: pd.Series) -> pa.ChunkedArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(series.astype("str"), from_pandas=True)
    arr = arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])
    return pc.fill_null(arr.cast(pa.large_string()), "")


def _bools(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    import numpy as np
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def _series(arr: pa.ChunkedArray, index: pd.Index) -> pd.Series:
    out: pd.Series = arr.to_pandas()
    out.index = index
    return out


def _pick(texts: list[str], codes: np.ndarray, index: pd.Index) -> pd.Series:
    """A text column holding ``texts[code]`` for each code (built by Arrow, no Python strings per row)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = pc.take(pa.array(texts, pa.large_string()), pa.array(codes.astype(np.int8)))
    return _series(pa.chunked_array([column]), index)
