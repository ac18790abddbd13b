"""How the message browser shows one record's key, value and header values: as text, as pretty
JSON, or (bytes that are not UTF-8) as base64 with a hex preview, each cut at DISPLAY_BYTES.

A value is user data of any shape: the page must neither break on it nor run it. This module
decides only what text to show and says which form it took (`kind`), so the page needs no
guessing of its own; the page writes the text with textContent, never as markup.
"""

from __future__ import annotations

import base64
import json

from wire.records import Record

DISPLAY_BYTES = 16 * 1024  # the most of one key, value or header value sent to the page
HEX_PREVIEW_BYTES = 64
MAX_JSON_DEPTH = 64  # deeper documents are shown as text: pretty-printing them costs recursion


def shown(data: bytes | None) -> dict:
    """{kind: null|json|text|binary, text, size, cut}: `size` is the whole field's, `cut` says
    that only the first DISPLAY_BYTES are in `text`."""
    if data is None:
        return {"kind": "null", "text": None, "size": 0, "cut": False}
    cut = len(data) > DISPLAY_BYTES
    head = data[:DISPLAY_BYTES]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # a cut may split a multi-byte character at the very end: that is still text
        if not (cut and exc.start >= len(head) - 3):
            return _binary(head, len(data), cut)
        text = head[:exc.start].decode("utf-8")
    if not cut:
        pretty = _pretty_json(text)
        if pretty is not None:
            return {"kind": "json", "text": pretty, "size": len(data), "cut": False}
    return {"kind": "text", "text": text, "size": len(data), "cut": cut}


def _binary(head: bytes, size: int, cut: bool) -> dict:
    preview = " ".join(f"{b:02x}" for b in head[:HEX_PREVIEW_BYTES])
    return {"kind": "binary", "text": preview + (" …" if len(head) > HEX_PREVIEW_BYTES else ""),
            "base64": base64.b64encode(head).decode(), "size": size, "cut": cut}


def _pretty_json(text: str) -> str | None:
    """Indented JSON when `text` is a JSON object or array (a bare number or string is shown as
    it came), else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or _nesting(stripped) > MAX_JSON_DEPTH:
        return None
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _nesting(text: str) -> int:
    """An upper bound of the document's depth (brackets inside strings count too)."""
    depth = deepest = 0
    for ch in text:
        if ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
    return deepest


def record_row(partition: int, record: Record, timestamp_type: str) -> dict:
    return {"partition": partition, "offset": record.offset, "timestamp": record.timestamp,
            "timestamp_type": timestamp_type, "key": shown(record.key), "value": shown(record.value),
            "headers": [{"name": name, "value": shown(value)} for name, value in record.headers]}
