"""Masking secrets in config values, error traces and malformed-record examples."""

import signal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.domain.masking import MASK, is_secret_name, mask_secrets, mask_text

# (text holding the secret SECRET, the masked text): one per form the rule catches.
FORMS = [
    (
        "jdbc:postgresql://app:SECRET@db:5432/shop",
        f"jdbc:postgresql://app:{MASK}@db:5432/shop",
    ),
    ("redis://:SECRET@cache:6379/0", f"redis://:{MASK}@cache:6379/0"),
    ("mysql://app:SE/CRET@db/shop", f"mysql://app:{MASK}@db/shop"),
    ("mongodb://app:SE@CRET@h1,h2/db", f"mongodb://app:{MASK}@h1,h2/db"),
    (
        "https://h/api?user=app&password=SECRET&ssl=true",
        f"https://h/api?user=app&password={MASK}&ssl=true",
    ),
    (
        "https://h/x?pwd=SECRET&secret=SECRET&token=SECRET&key=SECRET&x=1",
        f"https://h/x?pwd={MASK}&secret={MASK}&token={MASK}&key={MASK}&x=1",
    ),
    (
        "https://acct.blob.core.windows.net/c?sv=2020-08-04&sp=r&sig=SECRET%3D",
        f"https://acct.blob.core.windows.net/c?sv=2020-08-04&sp=r&sig={MASK}",
    ),
    (
        "jdbc:sqlserver://db:1433;databaseName=shop;user=sa;password=SECRET;encrypt=true",
        f"jdbc:sqlserver://db:1433;databaseName=shop;user=sa;password={MASK};encrypt=true",
    ),
    (
        "Driver={ODBC Driver 18};Server=db;UID=sa;PWD={SE;CRET};Encrypt=yes",
        f"Driver={{ODBC Driver 18}};Server=db;UID=sa;PWD={MASK};Encrypt=yes",
    ),
    (
        "jdbc:oracle:thin:scott/SECRET@db:1521/orcl",
        f"jdbc:oracle:thin:scott/{MASK}@db:1521/orcl",
    ),
    (
        "jdbc:oracle:thin:scott/SECRET@//db:1521/svc",
        f"jdbc:oracle:thin:scott/{MASK}@//db:1521/svc",
    ),
    (
        '{"type": "service_account", "private_key_id": "SECRET", "private_key": '
        '"-----BEGIN PRIVATE KEY-----\\nSECRET\\n-----END PRIVATE KEY-----\\n", '
        '"client_email": "app@p.iam.gserviceaccount.com"}',
        f'{{"type": "service_account", "private_key_id": "{MASK}", "private_key": '
        f'"{MASK}", '
        '"client_email": "app@p.iam.gserviceaccount.com"}',
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nSECRET\n-----END RSA PRIVATE KEY-----",
        f"-----BEGIN PRIVATE KEY-----{MASK}-----END PRIVATE KEY-----",
    ),
    (
        "headers=Authorization: Bearer SECRET, X-Tenant: shop",
        f"headers=Authorization: Bearer {MASK}, X-Tenant: shop",
    ),
    (
        "Authorization:Basic SECRET|Accept:application/json",
        f"Authorization:Basic {MASK}|Accept:application/json",
    ),
    ('{"Authorization": "Token SECRET"}', f'{{"Authorization": "Token {MASK}"}}'),
    ("request failed: bearer SECRET1 rejected", f"request failed: bearer {MASK} rejected"),
    (
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=SECRET+/=;EntityPath=orders",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        f"SharedAccessKey={MASK};EntityPath=orders",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=SECRET==;"
        "EndpointSuffix=core.windows.net",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={MASK};"
        "EndpointSuffix=core.windows.net",
    ),
    (
        'ScramLoginModule required username="app" password="SECRET";',
        f'ScramLoginModule required username="app" password="{MASK}";',
    ),
    ("--db-password=SECRET --verbose", f"--db-password={MASK} --verbose"),
    ("{user=app, dbPass=SECRET}", f"{{user=app, dbPass={MASK}"),
    ("client_secret: SECRET\nregion: eu", f"client_secret: {MASK}\nregion: eu"),
    (
        "Invalid value SECRET for configuration connection.password: too short",
        f"Invalid value {MASK} for configuration connection.password: {MASK} short",
    ),
    (
        'key=connect-offsets value=b\'{"properties":{"db.token":"SECRET"}}\'',
        f'key=connect-offsets value=b\'{{"properties":{{"db.token":"{MASK}"}}}}\'',
    ),
    (
        '{\\"password\\": \\"SECRET\\", \\"user\\": \\"app\\"}',
        f'{{\\"password\\": \\"{MASK}\\", \\"user\\": \\"app\\"}}',
    ),
    ("scott/SECRET@orcl", f"scott/{MASK}@orcl"),
    ("token=eyJhbGciOiJIUzI1.eyJzdWIiOiIx.SECRET", f"token={MASK}"),
    ("see eyJhbGciOiJIUzI1.eyJzdWIiOiIx.SECRET here", f"see {MASK} here"),
    ("clone https://ghp_SECRETSECRETSECRET12@github.com", "clone https://" + MASK + "@github.com"),
    # Braced, but no config-provider reference Connect could resolve: masked as text (a bare
    # value runs to the brace, which goes with it).
    ("${my.vault.token=SECRET}", f"${{my.vault.token={MASK}"),
    ("${jdbc:postgresql://app:SECRET@db/shop}", f"${{jdbc:postgresql://app:{MASK}@db/shop}}"),
    ("${Authorization: Bearer SECRET}", f"${{Authorization: Bearer {MASK}"),
]


@pytest.mark.parametrize(("text", "masked"), FORMS, ids=[text[:40] for text, _ in FORMS])
def test_it_masks_each_form(text: str, masked: str) -> None:
    assert mask_text(text) == masked
    assert "SECRET" not in mask_text(text)


@pytest.mark.parametrize(("text", "_"), FORMS, ids=[text[:40] for text, _ in FORMS])
def test_masking_masked_text_changes_nothing(text: str, _: str) -> None:
    assert mask_text(mask_text(text)) == mask_text(text)


# What people need to read stays as it is.
PUBLIC = [
    "orders,payments.v1",
    "io.confluent.connect.jdbc.JdbcSourceConnector",
    "org.apache.kafka.connect.json.JsonConverter",
    "https://metrics.example.com/api/v1/query?step=15s&query=up",
    "jdbc:postgresql://db.internal:5432/shop?sslmode=require",
    "jdbc:oracle:thin:@//db:1521/orcl",
    "SASL_SSL",
    "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;EntityPath=orders",
    'org.postgresql.util.PSQLException: FATAL: password authentication failed for user "app"\n'
    "\tat org.example.TokenService.refresh(TokenService.java:42)\n"
    "Caused by: org.example.InvalidTokenException: expired",
    'key=connect-offsets value=b\'["jdbc",{"table":"orders"}]\'',
    "transforms.passthrough.type=org.example.Keep",
    "basic authentication with a Bearer token failed",
    "images/logo/a@2x.png",  # no separator before the user: not Oracle's form
    "jdbc:mysql://db:3306/shop?password=${vault:secret/db:password}&useSSL=true",
    "${file:/opt/secrets.properties:db.password}",
    "password=${file:/opt/secrets.properties:db.password}",
]


@pytest.mark.parametrize("text", PUBLIC)
def test_it_leaves_what_is_not_secret(text: str) -> None:
    assert mask_text(text) == text


@pytest.mark.parametrize(
    "name",
    [
        "connection.password",
        "db.pwd",
        "dbPass",
        "db.pw",
        "ssl.key.passphrase",
        "azure.storage.account.key",
        "AccountKey",
        "SharedAccessKey",
        "sas.signature",
        "http.headers.authorization",
        "session.cookie",
        "bigquery.keyfile",
        "tls.psk",
        "gcp.private.key.id",
    ],
)
def test_names_that_hold_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "connection.user",
        "topics",
        "key.converter",
        "SharedAccessKeyName",
        "transforms.passthrough.type",
        "ftp.passive.mode",
        "connection.url",
        "headers",
    ],
)
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize("name", ["auth.bearer", "bearer", "oauth.bearer", "http.Bearer"])
def test_bearer_names_hold_secrets_in_configs_and_in_text(name: str) -> None:
    assert is_secret_name(name)
    assert mask_secrets({name: "abc123"}) == {name: MASK}
    assert mask_text(f"failed with {name}=abc123 set") == f"failed with {name}={MASK} set"


@pytest.mark.parametrize("name", ["sasl.oauthbearer.jwks.endpoint.url", "ssl.client.auth"])
def test_names_near_bearer_and_auth_that_hold_no_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_config_values_under_any_name_are_masked_by_shape() -> None:
    masked = mask_secrets(
        {
            "connection.url": "jdbc:sqlserver://db;user=sa;password=SECRET",
            "headers": "Authorization: Bearer SECRET",
            "topics": "orders",
            "db.pwd": "SECRET",
        }
    )
    assert masked == {
        "connection.url": f"jdbc:sqlserver://db;user=sa;password={MASK}",
        "headers": f"Authorization: Bearer {MASK}",
        "topics": "orders",
        "db.pwd": MASK,
    }


# --- Linear time: a 1 MB hostile value against a 1 KB one, as a ratio. -------------------------

# Units repeated into hostile values: runs that once made a pattern rescan from every position.
HOSTILE_UNITS = [
    "a",
    "@",
    ":",
    "/",
    "a://",
    "a://b:",
    "a:b@",
    "a=",
    "key=",
    "password=",
    'password="',
    "'password':'\\\"",
    "pwd={;",
    ":a/b",
    "a/b:",
    "-----BEGIN PRIVATE KEY-----",
    "Bearer a1 ",
    "authorization:",
    "eyJaaaaaaaaaa.",
    "Invalid value ",
    "a  ",
    "\"'\\",
    "?key=&",
    "a://b:c/d@e ",
]


@pytest.mark.parametrize("unit", HOSTILE_UNITS)
def test_masking_ends_on_a_megabyte_of_a_hostile_value(unit: str) -> None:
    """A rule that backtracks from every position needs about 10^12 steps on 1 MB of these
    and never ends in practice; the rules take well under a second. The alarm turns such a
    hang into a failure. It is a guard, not a speed measure: ``make bench-masking`` prints
    the 1 KB to 1 MB ratios.
    """
    large = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    signal.signal(signal.SIGALRM, _hung)
    signal.alarm(120)
    try:
        mask_text(large)
    finally:
        signal.alarm(0)


def _hung(signum, frame) -> None:
    raise AssertionError("masking 1 MB of a hostile value did not end within 120 s")


# --- Property: a planted secret never survives masking. -----------------------------------------

PLANTED = "Zq7SECRETx9"
# Each form with {s} where the secret goes.
PLANT_FORMS = [
    "jdbc:postgresql://app:{s}@db:5432/shop",
    "redis://:{s}@cache:6379",
    "mysql://app:a/{s}@db/x",
    "https://h/x?a=1&password={s}&b=2",
    "https://h/x?sig={s}",
    "https://h/x?key={s}",
    "jdbc:sqlserver://db;user=sa;password={s};encrypt=true",
    "Driver=x;PWD={{a;{s}}};Server=y",
    "jdbc:oracle:thin:scott/{s}@db:1521/orcl",
    '{{"private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----\\n"}}',
    '{{"client_secret": "{s}"}}',
    "headers=Authorization: Bearer {s}",
    "Authorization:Basic {s}",
    "SharedAccessKeyName=Root;SharedAccessKey={s};EntityPath=t",
    "AccountName=a;AccountKey={s};EndpointSuffix=core.windows.net",
    'PlainLoginModule required username="u" password="{s}";',
    "--api-token={s}",
    "db.pw: {s}",
]
# Text around the secret: anything but the separators that end a secret in its form.
SURROUNDINGS = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=40
)


@settings(database=None, max_examples=300, deadline=None)
@given(form=st.sampled_from(PLANT_FORMS), before=SURROUNDINGS, after=SURROUNDINGS)
def test_a_planted_secret_never_survives(form: str, before: str, after: str) -> None:
    text = before + " " + form.format(s=PLANTED) + " " + after
    assert PLANTED not in mask_text(text)
