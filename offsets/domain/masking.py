"""Mask secrets in connector configurations and in any text read from Kafka.

Every rule runs in time linear in the text: each pattern either starts only where a literal
anchor or the start of a run of name characters is, and each of its unbounded parts stops at a
character that also ends the scan of any later start, so no character is scanned more than a
few times whatever the text holds (``tests/rights/test_masking.py`` measures it).
"""

import re
from collections.abc import Mapping

MASK = "********"

# Lower-cased fragments of names whose values are secret.
_SECRET_NAME_FRAGMENTS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "credential",
    "jaas",  # sasl.jaas.config embeds username and password
    "user.info",  # basic.auth.user.info is "user:password"
    "api.key",
    "apikey",
    "api_key",
    "api-key",
    "access.key",
    "accesskey",
    "accountkey",  # Azure storage connection strings
    "sharedaccesskey",  # Azure Service Bus and Event Hubs connection strings
    "signature",  # SharedAccessSignature, AWS Signature
    "authorization",
    "cookie",
    "keyfile",
    "private",
)
# Whole words of a name (split at punctuation and camelCase) that mark a secret: a word
# only, since "oauthbearer" names SASL settings that are mostly not secret.
_SECRET_NAME_WORDS = frozenset({"pass", "pw", "psk", "bearer"})
# Names ending like this hold key material (ssl.key, ssl.keystore.key, aws...key).
_SECRET_NAME_SUFFIXES = (".key", "_key", "-key")
# Names ending like this name a secret rather than hold it (SharedAccessKeyName).
_NOT_SECRET_NAME_SUFFIXES = ("name", "names")
# Query parameters too short or common to be secret names elsewhere (?key=, Azure SAS &sig=).
_SECRET_QUERY_PARAMETERS = frozenset({"key", "sig", "auth"})
# "name: value" labels that are source positions or exception names in a stack trace.
_NOT_LABEL_SUFFIXES = (".java", ".scala", ".kt", "exception", "error")
# The Authorization header rule below masks these; the label rule leaves them to it.
_HEADER_NAMES = frozenset({"authorization", "proxy-authorization"})

# A config-provider reference, ${provider:key} or ${provider:path:key}, holds no secret and tells
# the reader where the secret lives, so it stays visible, whole or inside a text. Only that
# shape counts: a provider and a key that are names, a path without spaces, colons or braces.
# "${my.token=...}" or "${jdbc:postgresql://u:pw@db}" is no reference Connect could resolve,
# and Connect passes an unresolved one on as it is, secret included.
_REFERENCE = r"\$\{[\w.\-]+:(?:[^{}\s:]*:)?[\w.\-]+\}"
_CONFIG_PROVIDER_REFERENCE = re.compile(_REFERENCE)
_CONFIG_PROVIDER_REFERENCES = re.compile(f"({_REFERENCE})")

# A name followed by = or : ("password=", "Password: ", '"private_key": ', "--token="). The
# look-behind makes a run of name characters start a match only at its first character; the
# look-ahead keeps only names holding a fragment, word, suffix or parameter of the rule, so
# that a text of many ordinary labels ("a=1, b=2") is not judged label by label.
_LABEL_WORDS = sorted(
    {
        *_SECRET_NAME_FRAGMENTS,
        *_SECRET_NAME_WORDS,
        *(suffix[1:] for suffix in _SECRET_NAME_SUFFIXES),
        *_SECRET_QUERY_PARAMETERS,
    }
)
_LABEL = re.compile(
    r"(?i)(?<![\w.\-])(?=[\w.\-]*?(?:"
    + "|".join(re.escape(word) for word in _LABEL_WORDS)
    + r"))(?P<name>[\w.\-]+)\\?[\"']?[ \t]*[=:][ \t]*"
)
# The value after a secret label: quoted (closed or to the end of the line), braced (ODBC
# PWD={...}), or bare up to the next separator.
_QUOTED_VALUE = re.compile(r"(?P<quote>\\?[\"'])(?:[^\\\n]|\\.)*?(?P=quote)|\\?[\"'][^\n]*")
_OPENING_QUOTE = re.compile(r"\\?[\"']")
_BRACED_VALUE = re.compile(r"\{[^{}\n]*\}")
_BARE_VALUE = re.compile(r"[^\s;\"'<>]+")
_QUERY_VALUE = re.compile(r"[^\s&#;\"'<>]+")

# Text-wide rules: (pattern, replacement), applied in this order.
_TEXT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, raw or inside JSON (\n escapes), with or without their END line (the
    # body may be a mask already, so that masking twice gives the same text).
    (
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[A-Za-z0-9+/=*\s]|\\[nr])*"
            r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----)?"
        ),
        f"-----BEGIN PRIVATE KEY-----{MASK}-----END PRIVATE KEY-----",
    ),
    # The password of a URL's user info: scheme://user:password@host, redis://:password@host.
    # The password runs to the last @ before whitespace, a quote or the next "://", so it may
    # hold "/" and "@".
    (
        re.compile(r"(?<=://)(?P<user>[^\s/:@\"'<>]*):(?:[^\s:\"'<>]|:(?!//))+@"),
        rf"\g<user>:{MASK}@",
    ),
    # Oracle's user/password@host (jdbc:oracle:thin:scott/tiger@db:1521/orcl, sqlplus).
    (
        re.compile(
            r"(?<![^\s=:\"'(,;])(?P<user>[A-Za-z][\w$#.]{0,127})/"
            r"(?:\"[^\"\s]*\"|[^\s@/\"']+)@"
        ),
        rf"\g<user>/{MASK}@",
    ),
    # Authorization headers in header settings: the scheme stays visible, the rest is masked
    # up to the end of the header.
    (
        re.compile(
            r"(?i)(?<![\w\-])(?P<label>(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*"
            r"\\?[\"']?(?:(?:bearer|basic|digest|token|negotiate|ntlm|apikey|sso-key|"
            r"sharedkey|sharedaccesssignature|aws4-hmac-sha256)[ \t]+)?)"
            r"[^\r\n,;|\"'<>\\]+"
        ),
        rf"\g<label>{MASK}",
    ),
    # A bearer token anywhere: long, or holding a digit (not "Bearer authentication").
    (
        re.compile(
            r"(?i)(?<![\w\-])(?P<label>bearer[ \t]+)"
            r"(?:[\w\-.~+/]{16,}|(?=[\w\-.~+/]*\d)[\w\-.~+/]+)=*"
        ),
        rf"\g<label>{MASK}",
    ),
    # JSON Web Tokens and tokens whose prefix says what they are (GitHub, GitLab, Slack,
    # Stripe, Google API keys).
    (
        re.compile(
            r"(?<![\w\-])(?:eyJ[\w\-]{8,}\.[\w\-]{8,}\.[\w\-]*|"
            r"(?:gh[pousr]_|github_pat_|glpat-|xox[abposr]-|[sr]k_live_|AIza)[\w\-]{16,})"
        ),
        MASK,
    ),
)
# Kafka's ConfigException: "Invalid value <value> for configuration <name>".
_INVALID_VALUE = re.compile(
    r"(?<=Invalid value )(?P<value>\S+)(?= for configuration (?P<name>[\w.\-]+))"
)


def is_secret_name(name: str) -> bool:
    """Tell whether a property or parameter of this name holds a secret.

    The name, lower-cased, contains password, passwd, passphrase, pwd, secret, token,
    credential, jaas, user.info, api.key, apikey, api_key, api-key, access.key, accesskey,
    accountkey, sharedaccesskey, signature, authorization, cookie, keyfile or private; or has
    the word pass, pw, psk or bearer; or ends in ``.key``, ``_key`` or ``-key``; and does not end in
    ``name`` (SharedAccessKeyName names a key, it does not hold one).
    """
    lowered = name.lower()
    if lowered.endswith(_NOT_SECRET_NAME_SUFFIXES):
        return False
    if any(fragment in lowered for fragment in _SECRET_NAME_FRAGMENTS):
        return True
    if lowered.endswith(_SECRET_NAME_SUFFIXES):
        return True
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1.\2", name).lower())
    return any(word in _SECRET_NAME_WORDS for word in words)


def mask_secrets(properties: Mapping[str, str | None]) -> dict[str, str | None]:
    """Return a copy of ``properties`` safe to show, with secret values replaced by ``MASK``.

    A value whose property name is secret (`is_secret_name`) is masked whole. Empty and null
    values stay as they are (nothing to hide), and so does a value that is only a
    config-provider reference such as ``${file:/secrets:db}``. Every other value keeps its
    text with the credential-shaped parts masked (`mask_text`).
    """
    masked: dict[str, str | None] = {}
    for name, value in properties.items():
        if not value or _CONFIG_PROVIDER_REFERENCE.fullmatch(value.strip()):
            masked[name] = value
        elif is_secret_name(name):
            masked[name] = MASK
        else:
            masked[name] = mask_text(value)
    return masked


def mask_text(text: str) -> str:
    """Return ``text`` with its credential-shaped parts replaced by ``MASK``.

    For any text read from Kafka: config values, status-topic error traces, examples of
    malformed records. It masks private keys (PEM), URL passwords (``scheme://user:pw@``),
    Oracle ``user/pw@host``, Authorization headers and bearer tokens, JSON Web Tokens and
    tokens with a known prefix, and the value after any secret name followed by ``=`` or ``:``
    (``password=``, ``;PWD={...}``, ``"private_key": "..."``, ``?sig=``, ``AccountKey=``).
    Config-provider references (``${file:/secrets:db.password}``) stay visible. Masking masked
    text changes nothing.
    """
    pieces = _CONFIG_PROVIDER_REFERENCES.split(text)
    # Odd pieces are the references: they stay as they are.
    return "".join(
        piece if index % 2 else _mask_outside_references(piece)
        for index, piece in enumerate(pieces)
    )


def _mask_outside_references(text: str) -> str:
    for pattern, replacement in _TEXT_RULES:
        text = pattern.sub(replacement, text)
    text = _INVALID_VALUE.sub(_mask_invalid_value, text)
    return _mask_labelled_values(text)


def _mask_invalid_value(match: re.Match[str]) -> str:
    return MASK if is_secret_name(match["name"]) else match["value"]


def _mask_labelled_values(text: str) -> str:
    """Mask the value after every secret name followed by ``=`` or ``:``."""
    parts: list[str] = []
    position = 0
    while label := _LABEL.search(text, position):
        parts.append(text[position : label.end()])
        position = label.end()
        name = label["name"]
        in_query = label.start() > 0 and text[label.start() - 1] in "?&"
        if not _is_secret_label(name, in_query=in_query):
            continue
        value = _label_value(text, position, in_query=in_query)
        if value is None:
            continue
        parts.append(_masked_value(value.group()))
        position = value.end()
    parts.append(text[position:])
    return "".join(parts)


def _masked_value(value: str) -> str:
    """The masked form of a secret label's value: quotes stay, references stay visible."""
    if _CONFIG_PROVIDER_REFERENCE.fullmatch(value):
        return value
    quote = _OPENING_QUOTE.match(value)
    if quote is None:
        return MASK
    closed = len(value) > len(quote.group()) and value.endswith(quote.group())
    return f"{quote.group()}{MASK}{quote.group() if closed else ''}"


def _is_secret_label(name: str, *, in_query: bool) -> bool:
    """Tell whether the value after ``name=`` or ``name:`` is a secret."""
    lowered = name.lower()
    if lowered in _HEADER_NAMES or lowered.endswith(_NOT_LABEL_SUFFIXES):
        return False
    if in_query and lowered in _SECRET_QUERY_PARAMETERS:
        return True
    return is_secret_name(name)


def _label_value(text: str, position: int, *, in_query: bool) -> re.Match[str] | None:
    """The value that starts at ``position``, after a secret label."""
    if position >= len(text):
        return None
    if text[position] in "\"'\\":
        quoted = _QUOTED_VALUE.match(text, position)
        if quoted:
            return quoted
    if text[position] == "{":
        braced = _BRACED_VALUE.match(text, position)
        if braced:
            return braced
    return (_QUERY_VALUE if in_query else _BARE_VALUE).match(text, position)


# Where a shown prefix of a record may end: between tokens, so that no secret is cut in two.
_TOKEN_DELIMITERS = " \t\r\n\"',;&{}[]"


def prefix_between_tokens[T: (str, bytes)](data: T, limit: int) -> T:
    """Return at most ``limit`` characters of ``data``, cut back to the end of a token.

    A secret cut in two may no longer look like one (``scheme://user:pass`` without its
    ``@host``), so a prefix ends at a delimiter (space, quote, comma, semicolon, ampersand,
    bracket) or is empty.
    """
    if len(data) <= limit:
        return data
    window = data[:limit]
    if isinstance(window, str):
        cut = max(window.rfind(delimiter) for delimiter in _TOKEN_DELIMITERS)
    else:
        cut = max(window.rfind(delimiter.encode()) for delimiter in _TOKEN_DELIMITERS)
    return window[: cut + 1]
