"""What an event's id and timestamp look like in the stored JSON: the envelope checks them when it
reads or makes an event, `row_envelope` when it reads a few fields (each without loading the other)."""

_HYPHENATED = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# The forms Rust's `Uuid::try_parse` accepts: hyphenated, urn:uuid:, {braced}, simple (32 hex).
UUID_PATTERN = rf"^(?:(?:urn:uuid:)?{_HYPHENATED}|\{{{_HYPHENATED}\}}|[0-9a-fA-F]{{32}})$"
# RFC 3339 as chrono reads it; the fields' ranges are checked after the pattern (month 13, hour 25 ...).
TIMESTAMP_PATTERN = r"^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:[Zz]|[+-]\d\d:\d\d)$"
