"""Wikidata dumps as the subset extractor reads them (``loaders.freebase``
does the passes; its ``WIKIDATA`` profile says what entities, names and
relations look like).

Two inputs:

- the "truthy" N-Triples dump (``latest-truthy.nt.gz``): read as it is;
- the JSON dump (``latest-all.json.gz`` / ``.bz2``: a JSON array, one entity
  per line): each entity line becomes the truthy triples it implies.

What is kept from an entity: its English label (``rdfs:label``) and aliases
(``skos:altLabel``, which feed entity linking), and its best-ranked
statements as ``wdt:`` triples (the preferred ones of a property when there
are any, else the normal ones; deprecated ones never), like the truthy dump.
Values: items and properties, times (``xsd:dateTime``; the leading ``+``
dropped), quantities (``xsd:decimal``, unit dropped), strings and English
monolingual texts. External ids, media, URLs and coordinates are left out.
Qualifiers and references are dropped. Properties keep their labels, so
the engine shows ``place of birth``, not ``P19``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from loaders.base import open_binary

ENTITY = "http://www.wikidata.org/entity/"
DIRECT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
ALIAS = "http://www.w3.org/2004/02/skos/core#altLabel"
XSD = "http://www.w3.org/2001/XMLSchema#"
SKIPPED_TYPES = {"external-id", "commonsMedia", "url", "globe-coordinate", "geo-shape", "tabular-data",
                 "math", "musical-notation"}
BAD = b"\x00not a Wikidata entity line\n"  # parse() rejects it: counted as a malformed line


_IDS = re.compile(rb'"(?:id|numeric-id)":\s*"?([QP]?\d+)"?')


def mentions(line: bytes, levels: dict[bytes, int]) -> bool:
    """Does a JSON entity line name an entity in ``levels`` (as itself or a
    value)? A regular expression, so most lines are never decoded."""
    for m in _IDS.finditer(line):
        key = m.group(1)
        if key in levels or (key[:1].isdigit() and (b"Q" + key in levels or b"P" + key in levels)):
            return True
    return False


def is_json_dump(path: Path) -> bool:
    """A JSON dump starts with ``[`` or ``{``; the truthy dump with ``<``."""
    with open_binary(path) as fh:
        head = fh.read(64).lstrip()
    return head[:1] in (b"[", b"{")


def _literal(text: str, suffix: str = "") -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"{suffix}'


def _value(snak: dict) -> str | None:
    """A main snak's value in N-Triples form, None when it is not kept."""
    if snak.get("snaktype") != "value" or snak.get("datatype") in SKIPPED_TYPES:
        return None
    dv = snak.get("datavalue") or {}
    kind, value = dv.get("type"), dv.get("value")
    if kind == "wikibase-entityid" and isinstance(value, dict) and value.get("id"):
        return f"<{ENTITY}{value['id']}>"
    if kind == "string" and isinstance(value, str):
        return _literal(value)
    if kind == "time" and isinstance(value, dict) and value.get("time"):
        return _literal(value["time"].lstrip("+"), f"^^<{XSD}dateTime>")
    if kind == "quantity" and isinstance(value, dict) and value.get("amount"):
        return _literal(value["amount"].lstrip("+"), f"^^<{XSD}decimal>")
    if kind == "monolingualtext" and isinstance(value, dict):
        lang = str(value.get("language", "")).lower()
        if lang == "en" or lang.startswith("en-"):
            return _literal(str(value.get("text", "")), f"@{lang}")
    return None


def ntriples_of(line: bytes) -> list[bytes]:
    """The truthy triples of one JSON dump line (tab-separated, as the
    extractor reads fastest); ``[BAD]`` for a line that is not an entity;
    nothing for the array's brackets."""
    text = line.strip().rstrip(b",")
    if text in (b"[", b"]", b""):
        return []
    try:
        entity = json.loads(text)
        eid = entity["id"]
    except (ValueError, KeyError, TypeError):
        return [BAD]
    if not isinstance(eid, str) or not eid[:1] in ("Q", "P"):
        return [BAD]
    s = f"<{ENTITY}{eid}>"
    out = []
    label = ((entity.get("labels") or {}).get("en") or {}).get("value")
    if label:
        out.append(f"{s}\t<{LABEL}>\t{_literal(label, '@en')}\t.")
    for alias in (entity.get("aliases") or {}).get("en") or []:
        if isinstance(alias, dict) and alias.get("value"):
            out.append(f"{s}\t<{ALIAS}>\t{_literal(alias['value'], '@en')}\t.")
    for prop, statements in sorted((entity.get("claims") or {}).items()):
        if not isinstance(statements, list):
            continue
        ranked = [st for st in statements if isinstance(st, dict) and st.get("rank") != "deprecated"]
        preferred = [st for st in ranked if st.get("rank") == "preferred"]
        for st in preferred or ranked:
            value = _value(st.get("mainsnak") or {})
            if value is not None:
                out.append(f"{s}\t<{DIRECT}{prop}>\t{value}\t.")
    return [(t + "\n").encode("utf-8") for t in out]
