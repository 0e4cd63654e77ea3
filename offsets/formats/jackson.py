"""Write and read JSON byte for byte like Kafka Connect's internal JsonConverter.

The Connect runtime serializes offsets-topic keys and values with ``JsonConverter``
(``schemas.enable=false``), which hands a Jackson tree to ``ObjectMapper.writeValueAsBytes``:
Jackson 2.x ``UTF8JsonGenerator`` with its default features. Since the runtime keys offsets by
the raw key bytes, a key we write must match what a Java task would write to the last byte.

What Jackson 2.x does by default (``UTF8JsonGenerator``, ``CharTypes``, ``JsonWriteFeature``):

- no whitespace at all; object fields in map iteration order;
- ``"`` and ``\\`` escaped; ``\\b \\t \\n \\f \\r`` as short escapes; every other char below
  0x20 as ``\\u00XX`` with UPPERCASE hex (``WRITE_HEX_UPPER_CASE`` is on by default);
- ``/`` and DEL (0x7F) written as is; every other non-ASCII BMP char written raw as UTF-8;
- surrogate chars escaped one by one as ``\\uD83D\\uDE00``: ``_outputMultiByteChar`` escapes
  anything in 0xD800-0xDFFF because ``COMBINE_UNICODE_SURROGATES_IN_UTF8`` is off in 2.x (it
  only becomes the default in Jackson 3). So an emoji is NOT written as raw 4-byte UTF-8, and a
  lone surrogate (which a Java String may hold) is escaped the same way rather than rejected;
- doubles as ``Double.toString`` (``USE_FAST_DOUBLE_WRITER`` is off, so the JDK's own method);
  NaN and the infinities as the quoted strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
  (``QUOTE_NON_NUMERIC_NUMBERS`` / ``WRITE_NAN_AS_STRINGS`` is on by default).
"""

import json
import math
import re
from fractions import Fraction

type JsonValue = bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None

# Java's long: JsonConverter reads every JSON integer as INT64 (JsonNode.longValue(), which
# silently wraps), so a wider integer written here would come back as garbage in a task.
_JAVA_LONG_MIN = -(2**63)
_JAVA_LONG_MAX = 2**63 - 1

# CharTypes.sOutputEscapes128: the five short escapes besides the quote and the backslash.
_SHORT_ESCAPES = {
    0x22: '\\"',
    0x5C: "\\\\",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
}

# Everything Jackson does not copy through unchanged: control chars, quote, backslash,
# surrogate code points and the supplementary planes (which Java holds as surrogate pairs).
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\\ud800-\udfff\U00010000-\U0010ffff]')


# A surrogate code point in a Python str: it is lone, since Python joins an escaped pair.
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonParseError(ValueError):
    """Bad JSON or bad UTF-8, with the 1-based line and column where it went wrong."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} (line {line}, column {column})")
        self.message = message
        self.line = line
        self.column = column


def dumps(value: object) -> bytes:
    """Serialize ``value`` exactly as JsonConverter (schemas.enable=false) would."""
    parts: list[str] = []
    _write(value, parts)
    # Every char outside the BMP or in the surrogate range has been escaped, so plain UTF-8
    # encoding cannot fail here.
    return "".join(parts).encode("utf-8")


def dumps_text(value: object, *, indent: int | None = None) -> str:
    """Write JSON text for people and files: raw Unicode, but lone surrogates escaped.

    A Java String may hold a lone surrogate: Jackson writes it as ``\\ud800`` and Python reads
    that back into a str that has no UTF-8 form, so a page or download holding it could not be
    sent at all. Escaped as Jackson escapes it, it stays the same JSON value.
    """
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)
    return escape_lone_surrogates(text)


def escape_lone_surrogates(text: str) -> str:
    """Escape each surrogate code point of JSON text as ``\\udxxx`` (then UTF-8 can encode it).

    In JSON text written with raw Unicode a surrogate can only be inside a string, where the
    escape stands for the same character.
    """
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def replace_lone_surrogates(value: JsonValue) -> JsonValue:
    """Return ``value`` with each lone surrogate of its strings (and keys) as U+FFFD.

    For text that is only shown (configs, status traces): a Java String may hold a lone
    surrogate, but no page, file or database column can hold it as it is.
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [replace_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {
            replace_lone_surrogates(key): replace_lone_surrogates(item)
            for key, item in value.items()
        }
    return value


def dumps_key(connector: str, partition: dict[str, JsonValue]) -> bytes:
    """Serialize an offsets-topic key ``[connector, partition]`` (OffsetStorageWriter.doFlush)."""
    if not isinstance(connector, str):
        raise TypeError(f"connector name must be str, not {type(connector).__name__}")
    if not isinstance(partition, dict):
        raise TypeError(f"partition must be dict, not {type(partition).__name__}")
    return dumps([connector, partition])


def _make_strict_decoder() -> json.JSONDecoder:
    # Built once: json.loads(text, parse_constant=...) builds a new decoder on every call,
    # which doubles the cost of parsing a million small records.
    return json.JSONDecoder(parse_constant=_reject_non_numeric, parse_float=_finite_float)


def loads(data: bytes | bytearray | str) -> JsonValue:
    """Parse strict JSON keeping key order and big integers; raise JsonParseError if bad.

    Stricter than Jackson's ``ObjectMapper.readTree`` in three corners, none of which the Java
    runtime writes: trailing content after the first value is rejected (Jackson ignores
    it unless FAIL_ON_TRAILING_TOKENS is on), so is a UTF-8 byte order mark, and so is a
    decimal number beyond a double's range (Jackson would read 1e400 as Infinity). Like Jackson's
    defaults, it rejects NaN/Infinity literals, comments and raw control chars in strings, and
    a duplicate key keeps its first position with the last value (ObjectNode is a LinkedHashMap).
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            line, column = _line_column(bytes(data), exc.start)
            raise JsonParseError(f"invalid UTF-8: {exc.reason}", line, column) from None
    try:
        return _STRICT_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise JsonParseError(exc.msg, exc.lineno, exc.colno) from None
    except RecursionError:
        raise JsonParseError("nested too deeply", 1, 1) from None
    except ValueError as exc:
        # int() refuses more than sys.get_int_max_str_digits() digits; the position is lost.
        raise JsonParseError(str(exc), 1, 1) from None


def java_double_to_string(x: float) -> str:
    """Render ``x`` like Java's ``Double.toString`` (JDK 19 and later).

    Digits: the shortest decimal that reads back as ``x``; when one digit is enough, the
    closest decimal of one or two digits (so ``Double.MIN_VALUE`` is ``4.9E-324``, not
    ``5.0E-324``); ties go to the even digit. Layout: plain notation with at least one digit
    after the point when 1e-3 <= |x| < 1e7, else ``d.dddE±n``.

    JDK 17 and older use the FloatingDecimal algorithm, which sometimes prints more digits than
    needed (JDK-4511638: 1.0E23 prints as ``9.999999999999999E22``). A worker on such a JDK
    writes those longer forms; keys read from the topic are reused verbatim, so this only
    matters for brand-new keys holding doubles.
    """
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, exponent = _shortest_decimal(abs(x))
    scientific_exponent = len(digits) - 1 + exponent
    if -3 <= scientific_exponent < 7:
        point = len(digits) + exponent
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{scientific_exponent}"


def _write(value: object, parts: list[str]) -> None:
    # bool before int: True is an int in Python, but JSON true in Java.
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(_quote(value))
    elif isinstance(value, int):
        if not _JAVA_LONG_MIN <= value <= _JAVA_LONG_MAX:
            raise ValueError(f"integer {value} does not fit a Java long")
        parts.append(str(int(value)))
    elif isinstance(value, float):
        text = java_double_to_string(value)
        parts.append(text if math.isfinite(value) else f'"{text}"')
    elif isinstance(value, dict):
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"object keys must be str, not {type(key).__name__}")
            if index:
                parts.append(",")
            parts.append(_quote(key))
            parts.append(":")
            _write(item, parts)
        parts.append("}")
    elif isinstance(value, list | tuple):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
    else:
        raise TypeError(f"cannot serialize {type(value).__name__} as Connect JSON")


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    short = _SHORT_ESCAPES.get(code)
    if short is not None:
        return short
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    # A Java String holds this code point as a surrogate pair; Jackson escapes each half.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def _reject_non_numeric(literal: str) -> JsonValue:
    # Jackson's ALLOW_NON_NUMERIC_NUMBERS is off by default.
    raise ValueError(f"{literal} is not valid JSON")


def _finite_float(text: str) -> float:
    # Python reads 1e400 as inf, which no JSON column (PostgreSQL jsonb) can store and which
    # Jackson would only write back as the string "Infinity": refuse it as out of range.
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is out of a double's range")
    return number


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


def _shortest_decimal(value: float) -> tuple[str, int]:
    # Follows the specification of Double.toString since JDK 19 (Schubfach, JDK-4511638):
    # among decimals that round to the double, take the shortest, the closest of those, and
    # when the shortest has one digit also weigh the two-digit ones. Exact rational arithmetic
    # keeps this independent of Python's own repr.
    exact = Fraction(value)
    decade = math.floor(math.log10(value))
    while Fraction(10) ** decade > exact:
        decade -= 1
    while Fraction(10) ** (decade + 1) <= exact:
        decade += 1
    for length in range(1, 18):
        found = _closest_on_grid(exact, value, decade - length + 1)
        if found is None:
            continue
        if length == 1:
            two_digits = _closest_on_grid(exact, value, decade - 1)
            if two_digits is not None:
                found = two_digits
        return found
    raise AssertionError(f"no decimal of 17 digits reads back as {value!r}")


def _closest_on_grid(exact: Fraction, value: float, grid: int) -> tuple[str, int] | None:
    quotient = exact / Fraction(10) ** grid
    below = math.floor(quotient)
    candidates = [c for c in (below, below + 1) if _reads_back(c, grid, value)]
    if not candidates:
        return None
    # Closest first; on a tie the even least significant digit, as Double.toString specifies.
    best = min(candidates, key=lambda c: (abs(c - quotient), c % 2))
    while best % 10 == 0:
        best //= 10
        grid += 1
    return str(best), grid


def _reads_back(significand: int, exponent: int, value: float) -> bool:
    try:
        return float(significand * Fraction(10) ** exponent) == value
    except OverflowError:
        return False


def describe_type(value: object) -> str:
    """Name a decoded JSON value's type for an error message ("a string", "an array of 3")."""
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case list():
            return f"an array of {len(value)}"
        case dict():
            return "an object"
        case _:
            return type(value).__name__


_STRICT_DECODER = _make_strict_decoder()
