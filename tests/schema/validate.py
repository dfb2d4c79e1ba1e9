#!/usr/bin/python3
"""Validate kernelbrain JSON files against the schemas in schemas/.

usage: validate.py SCHEMA FILE...          one JSON document per file
       validate.py --jsonl SCHEMA FILE...  one JSON document per line ("-" reads stdin)
       validate.py --tree ROOT             every ROOT/examples/**/campaign.json (campaign schema)
                                           and ROOT/tasks/**/task.json (task schema)
       --invalid (with the first two)      inverts the verdict: every document must be rejected

SCHEMA is a name ("campaign", "task", "candidate", "result", "ledger-entry"), a path to a
schema file, or "auto" to pick the schema from each document's "schema" field
("kernelbrain.result/1" -> result). Parsing is as strict as the C side (common/src/jsonfile.c):
duplicate keys, NaN and Infinity, integers beyond 64 bits, reals that overflow, \\u0000 and
lone surrogates are errors.

Exit status: 0 when every document is valid; 1 when one is not, each error printed on stderr
as `FILE[:LINE]: "path": message`, with paths that read like the C messages
("budget.gpu_seconds", "tasks[2]"); 2 on usage errors. With --invalid: 0 when every document
is rejected, 1 naming each accepted one.

Runs with Debian's /usr/bin/python3 and python3-jsonschema (4.10).
"""
import glob
import json
import math
import os
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "schemas"))
# "schema" field values whose schema file is not simply <name>.schema.json
SCHEMA_FILES = {"ledger": "ledger-entry"}


class DocError(Exception):
    """A document that cannot be read or parsed."""


def _reject_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise DocError('duplicate key "%s"' % key)
        obj[key] = value
    return obj


def _reject_constant(name):
    raise DocError("%s is not JSON" % name)


def _int(text):
    value = int(text)
    if not -2**63 <= value < 2**63:
        raise DocError("integer %s does not fit in 64 bits" % text)
    return value


def _float(text):
    value = float(text)
    if math.isinf(value):
        raise DocError("real number %s overflows" % text)
    return value


def _check_strings(value):
    """Refuses what jansson refuses in strings: NUL and lone surrogates."""
    if isinstance(value, str):
        if "\0" in value:
            raise DocError("\\u0000 in a string")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise DocError("invalid unicode escape (a lone surrogate)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key)
            _check_strings(item)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)


def parse(text):
    """Parses one document as strictly as jansson with JSON_REJECT_DUPLICATES does."""
    try:
        doc = json.loads(text, object_pairs_hook=_reject_duplicates,
                         parse_constant=_reject_constant, parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as e:
        raise DocError("%d:%d: %s" % (e.lineno, e.colno, e.msg))
    _check_strings(doc)
    return doc


_validators = {}


def validator(name):
    """The Draft 2020-12 validator for a schema name or path (cached)."""
    if name not in _validators:
        path = name
        if not name.endswith(".json"):
            path = os.path.join(SCHEMA_DIR, SCHEMA_FILES.get(name, name) + ".schema.json")
        try:
            with open(path, encoding="utf-8") as f:
                schema = json.load(f)
        except OSError as e:
            raise DocError("cannot read schema %s: %s" % (path, e.strerror))
        jsonschema.Draft202012Validator.check_schema(schema)
        _validators[name] = jsonschema.Draft202012Validator(schema)
    return _validators[name]


def json_path(parts):
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += "[%d]" % p
        else:
            out += ("." if out else "") + str(p)
    return out


def check(schema_name, doc, where):
    """Prints every schema error of `doc`; returns the number of errors."""
    if schema_name == "auto":
        tag = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(tag, str) or not tag.startswith("kernelbrain.") or "/" not in tag:
            print('%s: "schema": missing or not a kernelbrain schema' % where, file=sys.stderr)
            return 1
        schema_name = tag[len("kernelbrain."):].split("/")[0]
    errors = sorted(validator(schema_name).iter_errors(doc),
                    key=lambda e: [str(p) for p in e.absolute_path])
    for e in errors:
        print('%s: "%s": %s' % (where, json_path(e.absolute_path), e.message), file=sys.stderr)
    return len(errors)


def read(path):
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def validate_files(schema_name, files, jsonl, invalid=False):
    """Returns the number of documents that failed (with `invalid`: that were accepted)."""
    bad = 0
    for path in files:
        try:
            text = read(path)
        except (OSError, UnicodeDecodeError) as e:
            print("%s: cannot read: %s" % (path, e), file=sys.stderr)
            bad += 1
            continue
        if not jsonl:
            docs = [(path, text)]
        else:
            docs = [("%s:%d" % (path, n), line) for n, line in enumerate(text.splitlines(), 1)
                    if line.strip()]
            if not docs:
                print("%s: no documents" % path, file=sys.stderr)
                bad += 1
        for where, doc_text in docs:
            if invalid:
                if accepts(schema_name, doc_text):
                    print("%s: accepted, but it must be invalid" % where, file=sys.stderr)
                    bad += 1
                continue
            try:
                doc = parse(doc_text)
            except DocError as e:
                print("%s: %s" % (where, e), file=sys.stderr)
                bad += 1
                continue
            if check(schema_name, doc, where):
                bad += 1
    return bad


def accepts(schema_name, doc_text):
    """1 when `doc_text` parses and is valid, quietly."""
    try:
        doc = parse(doc_text)
    except DocError:
        return 0
    saved = sys.stderr
    sys.stderr = open(os.devnull, "w")
    try:
        return 0 if check(schema_name, doc, "") else 1
    finally:
        sys.stderr.close()
        sys.stderr = saved


def validate_tree(root):
    campaigns = sorted(glob.glob(os.path.join(root, "examples", "**", "campaign.json"),
                                 recursive=True))
    tasks = sorted(glob.glob(os.path.join(root, "tasks", "**", "task.json"), recursive=True))
    if not campaigns:
        print("%s: no examples/**/campaign.json" % root, file=sys.stderr)
        return 1
    bad = validate_files("campaign", campaigns, False) + validate_files("task", tasks, False)
    print("checked %d campaign files and %d task files, %d invalid"
          % (len(campaigns), len(tasks), bad))
    return bad


def main(argv):
    args = argv[1:]
    if args and args[0] == "--tree":
        if len(args) != 2:
            print(__doc__, file=sys.stderr)
            return 2
        return 1 if validate_tree(args[1]) else 0
    jsonl = False
    invalid = False
    while args and args[0] in ("--jsonl", "--invalid"):
        jsonl = jsonl or args[0] == "--jsonl"
        invalid = invalid or args[0] == "--invalid"
        args = args[1:]
    if len(args) < 2 or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        bad = validate_files(args[0], args[1:], jsonl, invalid)
    except DocError as e:
        print("validate.py: %s" % e, file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
