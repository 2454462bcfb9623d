#!/usr/bin/env python3
"""validate_schema.py SCHEMA JSON...: validates each JSON file against one of
docs/schemas/*.schema.json (Draft 2020-12), resolving $refs between them
locally by $id. Exit 0 when all are valid, 1 otherwise (with the reason)."""
import glob
import json
import os
import sys

import jsonschema


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    schemas_dir = os.path.join(here, "..", "..", "docs", "schemas")
    store = {}
    for path in glob.glob(os.path.join(schemas_dir, "*.schema.json")):
        with open(path, encoding="utf-8") as f:
            s = json.load(f)
        jsonschema.Draft202012Validator.check_schema(s)
        store[s["$id"]] = s
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    bad = 0
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:5]:
            print(f"{path}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
