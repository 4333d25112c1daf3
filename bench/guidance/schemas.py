"""A deterministic suite of JSON schemas for constrained decoding: objects, arrays, enums, consts,
nesting, $defs / $ref, anyOf, string formats and patterns, numeric bounds, additionalProperties
false. Strings and arrays are bounded so that a reply can end within a few hundred tokens.

    from schemas import make_schemas
    for name, prompt, schema in make_schemas(100, seed=1): ...
"""

import random

WORDS = ["city", "name", "title", "color", "score", "count", "tags", "owner", "price", "id", "status",
         "created", "email", "size", "level", "author", "items", "note", "rating", "kind"]
TOPICS = ["a book", "a city", "a user account", "a product", "a recipe", "a weather report", "a movie",
          "a bank transfer", "a music album", "a planet", "a football match", "a job offer"]


def leaf(rng, depth):
    kind = rng.choice(["string", "bounded_string", "pattern", "format", "integer", "number", "boolean",
                       "enum", "const", "nullable"])
    if kind == "string":
        return {"type": "string", "maxLength": rng.choice([8, 16, 32])}
    if kind == "bounded_string":
        lo = rng.randint(1, 4)
        return {"type": "string", "minLength": lo, "maxLength": lo + rng.randint(2, 20)}
    if kind == "pattern":
        return {"type": "string", "pattern": rng.choice(
            ["^[A-Z][a-z]{1,10}$", "^[0-9]{3}-[0-9]{4}$", "^[a-z]+(-[a-z]+){0,2}$", "^#[0-9a-f]{6}$"])}
    if kind == "format":
        return {"type": "string", "format": rng.choice(["date", "date-time", "email", "uuid", "ipv4", "time"])}
    if kind == "integer":
        lo = rng.randint(-50, 50)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(1, 1000)}
    if kind == "number":
        s = {"type": "number", "minimum": 0, "maximum": rng.choice([1, 10, 100, 1e6])}
        if rng.random() < 0.3:
            s = {"type": "number", "exclusiveMinimum": 0, "maximum": 5}
        return s
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "enum":
        return {"enum": rng.sample(["red", "green", "blue", "small", "large", "yes", "no", "pending", "done"],
                                   rng.randint(2, 4))}
    if kind == "const":
        return {"const": rng.choice(["v1", 42, True])}
    return {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 99}, {"type": "null"}]}


def node(rng, depth, defs):
    r = rng.random()
    if depth >= 2 or r < 0.45:
        return leaf(rng, depth)
    if r < 0.65:
        items = node(rng, depth + 1, defs)
        return {"type": "array", "items": items, "minItems": rng.randint(0, 1), "maxItems": rng.randint(1, 3)}
    if r < 0.75 and len(defs) < 2:
        name = f"def{len(defs)}"
        defs[name] = obj(rng, depth + 1, defs)
        return {"$ref": f"#/$defs/{name}"}
    if r < 0.85:
        return {"anyOf": [leaf(rng, depth), obj(rng, depth + 1, defs)]}
    return obj(rng, depth + 1, defs)


def obj(rng, depth, defs):
    keys = rng.sample(WORDS, rng.randint(1, 4 if depth else 5))
    props = {k: node(rng, depth, defs) for k in keys}
    s = {"type": "object", "properties": props}
    req = [k for k in keys if rng.random() < 0.8] or keys[:1]
    s["required"] = req
    s["additionalProperties"] = False  # OpenAI's strict mode: every object closed
    return s


def make_schemas(n, seed=1):
    """[(name, prompt, schema)] * n, the same for a seed everywhere."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        defs = {}
        s = obj(rng, 0, defs)
        if defs:
            s["$defs"] = defs
        topic = rng.choice(TOPICS)
        prompt = f"Describe {topic} as JSON with the fields {', '.join(s['properties'])}."
        out.append((f"s{i:03d}", prompt, s))
    return out


def format_checker():
    """Draft 2020-12's format checks (RFC 3339 times through rfc3339-validator, which must be
    installed), except that a year 0000, which RFC 3339's grammar allows, is judged as 2000: the
    validator checks the day against Python's calendar, which starts at year 1."""
    import jsonschema

    base = jsonschema.Draft202012Validator.FORMAT_CHECKER
    checker = jsonschema.FormatChecker()
    for name, (func, raises) in base.checkers.items():
        checker.checks(name, raises)(func)
    for name in ("date", "date-time"):
        func, raises = base.checkers[name]
        checker.checks(name, raises)(lambda v, f=func: f("2000" + v[4:] if isinstance(v, str) and v.startswith("0000") else v))
    return checker
