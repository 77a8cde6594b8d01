"""The rule an email address is checked by, as RE2 patterns (Arrow's regex engine) for lower-cased addresses:
one rule for the "Check and enrich email addresses" task type and the steps' email check.

Any non-ASCII character other than a space is allowed, for internationalised addresses (RFC 6531) and
domains; punycode too. No counted repetition such as {0,61}: with Unicode classes it makes RE2 many times
slower.
"""

INTL = r"[^\x00-\x7f\x{a0}\x{2000}-\x{200b}\x{3000}]"
ATOM = rf"(?:[a-z0-9!#$%&'*+/=?^_`{{|}}~-]|{INTL})+"
LOCAL = rf"{ATOM}(?:\.{ATOM})*"
ALNUM = rf"(?:[a-z0-9]|{INTL})"
LABEL = rf"{ALNUM}(?:(?:{ALNUM}|-)*{ALNUM})?"
DOMAIN = rf"(?:{LABEL}\.)+(?:(?:[a-z]|{INTL}){{2,}}|xn--[a-z0-9-]+)"
ADDRESS = rf"^{LOCAL}@{DOMAIN}$"
