"""The SQL macros of the OTLP file mapping (`otlp_sql.py`): AnyValues, ids, times, and model messages.

Each macro mirrors a function of `devtool.formats` (named in its comment), so the two read alike.
Conventions that keep them fast:
- JSON built here is text (VARCHAR): objects and arrays are concatenated, never parsed again until
  the store reads the finished event;
- a value used twice is bound once, with `list_transform([value], lambda x: ...)[1]` (`_let`): a
  macro's argument is pasted wherever the macro names it, so it would be computed each time;
- so are DuckDB's own macros: lists are joined by `otlp_joined`, never `array_to_string` (it names its
  list twice), and a JSON string is decoded once for parsing (`otlp_parse`).
A macro is defined after those it calls (DuckDB binds names when a macro is created).
"""

from __future__ import annotations

import duckdb

from devtool.core.providers.pricing import PriceTable, default_price_table
from devtool.formats import semconv as sc
from devtool.formats.otlp_values import MAX_DEPTH

INVALID = "devtool: invalid OTLP"

AV = (
    '{"stringValue": "JSON", "boolValue": "JSON", "intValue": "JSON", "doubleValue": "JSON", '
    '"arrayValue": "JSON", "kvlistValue": "JSON", "bytesValue": "JSON"}'
)


def q(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def names(items: tuple[str, ...]) -> str:
    """A SQL list of string literals."""
    return "[" + ", ".join(q(item) for item in items) + "]"


def fail(what: str) -> str:
    return f"error({q(f'{INVALID} {what}')})"


def _let(name: str, value: str, body: str) -> str:
    return f"list_transform([{value}], lambda {name}: {body})[1]"


def _value_macro(depth: int) -> str:
    """`otlp_values.any_value` at nesting `depth`: an AnyValue (parsed to `AV`) as JSON text.

    An array's elements and a kvlist's values are read by one call a level down (`otlp_container_N`);
    DuckDB's time to bind nested lambdas grows about 2.5× a level, hence `MAX_DEPTH` 2.
    """
    container = "coalesce(v.arrayValue, v.kvlistValue)"
    shape = f"left({container}, 1) = '{{' AND coalesce(json_type({container}, '$.values'), 'ARRAY') = 'ARRAY'"
    if depth < MAX_DEPTH:
        read = f"otlp_container_{depth}(v.arrayValue IS NOT NULL, {container}::VARCHAR)"
    else:  # kept in its OTLP encoding (see otlp_values)
        read = (
            "CASE WHEN v.arrayValue IS NOT NULL THEN '{\"arrayValue\":' || v.arrayValue || '}' "
            "ELSE '{\"kvlistValue\":' || v.kvlistValue || '}' END"
        )
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_value_{depth}(v) AS CASE
        WHEN v.stringValue IS NOT NULL THEN
            CASE WHEN left(v.stringValue, 1) = '"' THEN v.stringValue::VARCHAR ELSE {fail("stringValue")} END
        WHEN v.boolValue IS NOT NULL THEN
            CASE WHEN v.boolValue::VARCHAR IN ('true', 'false') THEN v.boolValue::VARCHAR ELSE {fail("boolValue")} END
        WHEN v.intValue IS NOT NULL THEN
            CASE WHEN regexp_full_match(v.intValue::VARCHAR, '"?-?[0-9]+"?')
                 THEN trim(v.intValue::VARCHAR, '"')::BIGINT::VARCHAR ELSE {fail("intValue")} END
        WHEN v.doubleValue IS NOT NULL THEN
            CASE WHEN v.doubleValue::VARCHAR IN ('"NaN"', '"Infinity"', '"-Infinity"') THEN 'null'
                 WHEN regexp_full_match(v.doubleValue::VARCHAR, '-?[0-9][0-9.eE+-]*')
                 THEN to_json(v.doubleValue::VARCHAR::DOUBLE)::VARCHAR ELSE {fail("doubleValue")} END
        WHEN v.arrayValue IS NOT NULL OR v.kvlistValue IS NOT NULL THEN
            CASE WHEN {shape} THEN {read} ELSE {fail("arrayValue or kvlistValue")} END
        WHEN v.bytesValue IS NOT NULL THEN
            CASE WHEN left(v.bytesValue, 1) = '"' THEN v.bytesValue::VARCHAR ELSE {fail("bytesValue")} END
        ELSE 'null'
    END
    """


def _container_macro(depth: int) -> str:
    """An array's elements or a kvlist's entries (`x`: the `{"values": [...]}` text), read a level down.

    An element is an AnyValue or null; an entry a string key and an AnyValue or null value. A key
    given twice in a kvlist is an error, as in span attributes (OTLP: keys MUST be unique).
    """
    valid = (
        "CASE WHEN is_array THEN left(e, 1) = '{' OR e = 'null' "
        "ELSE left(e, 1) = '{' AND json_type(e, '$.key') = 'VARCHAR' "
        "AND coalesce(json_type(e, '$.value'), 'NULL') IN ('OBJECT', 'NULL') END"
    )
    # An AnyValue has no field "value", an entry's value is under it: this reads either without naming
    # `is_array` in the argument (a macro's argument is pasted where it is used, level into level).
    read = (
        f"CASE WHEN {valid} THEN otlp_value_{depth + 1}(from_json(coalesce(e -> 'value', e), '{AV}')) "
        f"ELSE {fail('array element or key-value')} END"
    )
    kvlist = _let(
        "keys",
        "list_transform(items, lambda e: json_extract_string(e, '$.key'))",
        f"CASE WHEN len(list_distinct(keys)) < len(keys) THEN {fail('kvlist: a key given twice')} "
        "ELSE '{' || array_to_string(list_transform(range(len(keys)), "
        "lambda i: to_json(keys[i + 1]) || ':' || vals[i + 1]), ',') || '}' END",
    )
    body = _let(
        "items",
        "json_extract(x, '$.values[*]')",
        _let(
            "vals",
            f"list_transform(items, lambda e: {read})",
            f"CASE WHEN is_array THEN '[' || array_to_string(vals, ',') || ']' ELSE {kvlist} END",
        ),
    )
    return f"CREATE OR REPLACE TEMP MACRO otlp_container_{depth}(is_array, x) AS {body}"


# messages.json_text of a JSON string `v`: its text decoded once (`otlp_parse(v ->> '$')` would decode it three
# times, for the regexp, json_valid and json), the regexp only when it may match.
_PARSE = _let(
    "s",
    "v ->> '$'",
    "CASE WHEN CASE WHEN contains(s, 'NaN') OR contains(s, 'Infinity') "
    f"THEN regexp_matches(s, {q(sc.NON_JSON_WORDS)}) ELSE false END THEN NULL "
    "WHEN json_valid(s) THEN nullif(json(s)::VARCHAR, 'null') END",
)

_STRUCTURED = _let(
    "w",
    "v",
    _let(
        "p",
        "CASE WHEN left(w, 1) = '\"' THEN otlp_parse(w) END",
        "CASE WHEN json_type(p) IN ('OBJECT', 'ARRAY') THEN p ELSE w END",
    ),
)

_SCALARS = f"""
-- `array_to_string` of a list of non-NULL texts, but for a NULL list (''). DuckDB's `array_to_string` is a
-- macro that names its list twice, so the expression that makes the list would run twice.
CREATE OR REPLACE TEMP MACRO otlp_joined(items, sep) AS coalesce(list_aggr(items, 'string_agg', sep), '');
-- otlp_values.hex_id: hex, or base64 (protobuf's generic JSON mapping), of the right length, not all zeros
CREATE OR REPLACE TEMP MACRO otlp_checked_id(h, size, optional) AS CASE
    WHEN h IS NULL AND optional THEN ''
    WHEN length(h) = 2 * size AND ltrim(h, '0') <> '' THEN h
    ELSE {fail("id")} END;
CREATE OR REPLACE TEMP MACRO otlp_id(s, size, optional) AS otlp_checked_id(CASE
    WHEN s IS NULL OR s = '' THEN NULL
    WHEN length(s) = 2 * size AND regexp_full_match(s, '[0-9a-fA-F]*') THEN lower(s)
    WHEN length(s) = (size + 2) // 3 * 4 AND regexp_full_match(s, '[A-Za-z0-9+/]*={{0,2}}')
    THEN lower(hex(from_base64(s)))
    ELSE '' END, size, optional);
-- otlp_values.nanos, otlp_values.ms
CREATE OR REPLACE TEMP MACRO otlp_nanos(x) AS CASE
    WHEN regexp_full_match(x::VARCHAR, '"?[0-9]+"?') AND trim(x::VARCHAR, '"')::UBIGINT > 0
    THEN trim(x::VARCHAR, '"')::UBIGINT ELSE {fail("time")} END;
CREATE OR REPLACE TEMP MACRO otlp_ms(ns) AS (ns // 1000)::DOUBLE / 1000.0;
-- otlp_values.enum_code
CREATE OR REPLACE TEMP MACRO otlp_enum(x, names, prefix) AS CASE
    WHEN x IS NULL THEN 0
    WHEN regexp_full_match(x::VARCHAR, '[0-9]+') AND x::VARCHAR::INTEGER < len(names) THEN x::VARCHAR::INTEGER
    WHEN starts_with(x::VARCHAR, '"' || prefix) AND list_contains(names, lower(trim(x::VARCHAR, '"')[len(prefix) + 1:]))
    THEN list_position(names, lower(trim(x::VARCHAR, '"')[len(prefix) + 1:])) - 1
    ELSE {fail("enum")} END;
-- otlp_values.key_values (span attributes: a key given twice fails, as `map_from_entries` does)
CREATE OR REPLACE TEMP MACRO otlp_map(attributes) AS coalesce(
    map_from_entries(list_transform(attributes, lambda a: (a.key, otlp_value_1(a.value)))),
    MAP([]::VARCHAR[], []::VARCHAR[]));
CREATE OR REPLACE TEMP MACRO otlp_map_json(m) AS
    '{{' || otlp_joined(list_transform(map_entries(m), lambda e: to_json(e.key) || ':' || e.value), ',') || '}}';
-- messages.clean: the fields that have a value, as a JSON object's text
CREATE OR REPLACE TEMP MACRO otlp_object(entries) AS '{{' || otlp_joined(list_transform(
    list_filter(entries, lambda e: e[2] IS NOT NULL), lambda e: '"' || e[1] || '":' || e[2]), ',') || '}}';
-- a NULL list too is '[]': where a missing list is no field, `nullif(otlp_array(list), '[]')`
CREATE OR REPLACE TEMP MACRO otlp_array(items) AS '[' || otlp_joined(items, ',') || ']';
CREATE OR REPLACE TEMP MACRO otlp_pair(name, value) AS coalesce(',"' || name || '":' || value, '');
CREATE OR REPLACE TEMP MACRO otlp_string(text) AS to_json(text)::VARCHAR;
-- lookups in a span's attributes (`m`, a MAP of JSON text): any value, a string, an integer
CREATE OR REPLACE TEMP MACRO otlp_attr(m, k) AS nullif(m[k], 'null');
CREATE OR REPLACE TEMP MACRO otlp_text(m, k) AS CASE WHEN left(m[k], 1) = '"' THEN m[k] ->> '$' END;
CREATE OR REPLACE TEMP MACRO otlp_int(m, k) AS
    CASE WHEN regexp_full_match(m[k], '-?[0-9]+') THEN m[k]::BIGINT END;
CREATE OR REPLACE TEMP MACRO otlp_first(m, keys) AS
    list_first(list_filter(list_transform(keys, lambda k: otlp_attr(m, k)), lambda t: t IS NOT NULL));
CREATE OR REPLACE TEMP MACRO otlp_first_text(m, keys) AS
    list_first(list_filter(list_transform(keys, lambda k: otlp_text(m, k)), lambda t: t IS NOT NULL));
CREATE OR REPLACE TEMP MACRO otlp_first_int(m, keys) AS
    list_first(list_filter(list_transform(keys, lambda k: otlp_int(m, k)), lambda t: t IS NOT NULL));
-- messages.json_text / messages.structured
CREATE OR REPLACE TEMP MACRO otlp_parse(v) AS {_PARSE};
CREATE OR REPLACE TEMP MACRO otlp_json_text(v) AS CASE WHEN left(v, 1) = '"' THEN otlp_parse(v) ELSE v END;
CREATE OR REPLACE TEMP MACRO otlp_structured(v) AS {_STRUCTURED};
CREATE OR REPLACE TEMP MACRO otlp_get(j, path) AS nullif(json_extract(j, path)::VARCHAR, 'null');
CREATE OR REPLACE TEMP MACRO otlp_type(j) AS json_extract_string(j, '$.type');
"""

_SPLIT = _let(
    "ps",
    "otlp_parts(m)",
    _let(
        "responses",
        "list_filter(ps, lambda p: p.t = 'tool_call_response')",
        "list_concat(list_transform(responses, lambda p: otlp_object([('role', '\"tool\"'), "
        "('tool_call_id', otlp_get(p.p, '$.id')), "
        "('content', coalesce(otlp_get(p.p, '$.response'), otlp_get(p.p, '$.result')))])), "
        "CASE WHEN len(responses) = len(ps) AND len(ps) > 0 THEN [] ELSE [otlp_base_of(otlp_role(m), ps)] END)",
    ),
)

_FIRST_MESSAGE = _let("ms", "otlp_objects(x)", "CASE WHEN len(ms) > 0 THEN otlp_base(ms[1]) END")

# messages.py's GenAI functions. `m` is one message's JSON text, `ps` its object parts, each read once
# for its type (`otlp_part`: `p` its text, `t` its type): a part's type was asked five times, and each
# `json_extract` reads the whole part again, its content with it (half the mapping of a chat span).
_GENAI = f"""
CREATE OR REPLACE TEMP MACRO otlp_role(m) AS
    CASE WHEN json_type(m, '$.role') = 'VARCHAR' THEN json_extract(m, '$.role')::VARCHAR END;
CREATE OR REPLACE TEMP MACRO otlp_part(p) AS {{'p': p, 't': otlp_type(p)}};
CREATE OR REPLACE TEMP MACRO otlp_parts(m) AS list_transform(
    list_filter(json_extract(m, '$.parts[*]'), lambda p: json_type(p) = 'OBJECT'), lambda p: otlp_part(p::VARCHAR));
CREATE OR REPLACE TEMP MACRO otlp_is_text(p) AS
    coalesce(p.t = 'text' AND json_type(p.p, '$.content') = 'VARCHAR', false);
CREATE OR REPLACE TEMP MACRO otlp_content(others) AS CASE
    WHEN len(others) = 0 THEN NULL
    WHEN len(list_filter(others, lambda p: otlp_is_text(p))) = len(others)
    THEN otlp_string(otlp_joined(list_transform(others, lambda p: json_extract_string(p.p, '$.content')), chr(10)))
    ELSE otlp_array(list_transform(others, lambda p: p.p)) END;
CREATE OR REPLACE TEMP MACRO otlp_calls(calls) AS CASE WHEN len(calls) > 0 THEN otlp_array(list_transform(calls,
    lambda p: otlp_object([('id', otlp_get(p.p, '$.id')), ('name', otlp_get(p.p, '$.name')),
                           ('arguments', otlp_get(p.p, '$.arguments'))]))) END;
-- messages._base, given the message's role and its parts
CREATE OR REPLACE TEMP MACRO otlp_base_of(role, ps) AS otlp_object([
    ('role', role),
    ('content', otlp_content(list_filter(ps, lambda p: p.t IS DISTINCT FROM 'tool_call_response'
                                                       AND p.t IS DISTINCT FROM 'tool_call'))),
    ('tool_calls', otlp_calls(list_filter(ps, lambda p: p.t = 'tool_call')))]);
CREATE OR REPLACE TEMP MACRO otlp_base(m) AS CASE
    WHEN json_type(m, '$.parts') IS DISTINCT FROM 'ARRAY'
    THEN otlp_object([('role', otlp_role(m)), ('content', otlp_get(m, '$.content'))])
    ELSE otlp_base_of(otlp_role(m), otlp_parts(m)) END;
-- messages._split
CREATE OR REPLACE TEMP MACRO otlp_split(m) AS CASE
    WHEN json_type(m, '$.parts') IS DISTINCT FROM 'ARRAY' THEN [otlp_base(m)]
    ELSE {_SPLIT}
    END;
CREATE OR REPLACE TEMP MACRO otlp_objects(list) AS
    list_transform(list_filter(json_extract(list, '$[*]'), lambda m: json_type(m) = 'OBJECT'), lambda m: m::VARCHAR);
-- messages.genai_messages, genai_answer, system_message, given the attribute read as JSON (`x`)
CREATE OR REPLACE TEMP MACRO otlp_genai_messages(x) AS CASE
    WHEN json_type(x) = 'ARRAY' THEN flatten(list_transform(otlp_objects(x), lambda m: otlp_split(m))) END;
CREATE OR REPLACE TEMP MACRO otlp_genai_answer(x) AS CASE
    WHEN json_type(x) = 'ARRAY' THEN {_FIRST_MESSAGE} END;
CREATE OR REPLACE TEMP MACRO otlp_system(value, parts) AS CASE
    WHEN json_type(parts) = 'ARRAY'
    THEN otlp_base_of('"system"', list_transform(otlp_objects(parts), lambda p: otlp_part(p)))
    WHEN left(value, 1) = '"' THEN otlp_object([('role', '"system"'), ('content', value)]) END;
"""


def _openinference() -> str:
    """messages.openinference_messages: the messages flattened under a prefix, by index."""
    call = f"pre || {q(sc.OI_TOOL_CALLS)} || k || '.'"
    texts = (
        f"list_filter(list_transform(range(otlp_count(m, pre || {q(sc.OI_CONTENTS)})), "
        f"lambda j: otlp_text(m, pre || {q(sc.OI_CONTENTS)} || j || '.' || {q(sc.OI_CONTENT_TEXT)})), "
        "lambda t: t IS NOT NULL)"
    )
    calls = (
        f"nullif(list_transform(range(otlp_count(m, pre || {q(sc.OI_TOOL_CALLS)})), lambda k: otlp_object(["
        f"('id', otlp_string(otlp_text(m, {call} || {q(sc.OI_TOOL_CALL_ID)}))), "
        f"('name', otlp_string(otlp_text(m, {call} || {q(sc.OI_TOOL_CALL_NAME)}))), "
        f"('arguments', otlp_structured(otlp_attr(m, {call} || {q(sc.OI_TOOL_CALL_ARGUMENTS)})))])), [])"
    )
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_count(m, prefix) AS coalesce(list_max(list_filter(list_transform(
        list_filter(map_keys(m), lambda k: starts_with(k, prefix)),
        lambda k: TRY_CAST(regexp_extract(k[len(prefix) + 1:], '^([0-9]+)\\.', 1) AS BIGINT)),
        lambda i: i <= {sc.MAX_INDEX})) + 1, 0);
    CREATE OR REPLACE TEMP MACRO otlp_join(texts) AS
        otlp_string(list_aggr(texts, 'string_agg', chr(10)));
    CREATE OR REPLACE TEMP MACRO otlp_oi_message(m, pre) AS otlp_object([
        ('role', otlp_string(otlp_text(m, pre || {q(sc.OI_ROLE)}))),
        ('content', coalesce(otlp_string(otlp_text(m, pre || {q(sc.OI_CONTENT)})), otlp_join({texts}))),
        ('tool_calls', nullif(otlp_array({calls}), '[]')),
        ('tool_call_id', otlp_string(otlp_text(m, pre || {q(sc.OI_MESSAGE_TOOL_CALL_ID)})))]);
    CREATE OR REPLACE TEMP MACRO otlp_oi_messages(m, prefix) AS {
        _let(
            "n",
            "otlp_count(m, prefix)",
            "CASE WHEN n > 0 THEN list_transform(range(n), lambda i: otlp_oi_message(m, prefix || i || '.')) END",
        )
    };
    """


def _older() -> str:
    """messages.event_messages and event_answer. `events` are structs `{name, a}`, `a` their attributes' map."""
    roles = "MAP {" + ", ".join(f"{q(name)}: {q(role)}" for name, role in sc.MESSAGE_EVENTS.items()) + "}"
    calls = _let(
        "calls",
        "otlp_json_text(otlp_attr(a, 'tool_calls'))",
        "CASE WHEN json_type(calls) = 'ARRAY' THEN nullif(otlp_array(list_transform("
        "otlp_objects(calls), lambda c: otlp_object(["
        "('id', otlp_get(c, '$.id')), "
        "('name', CASE WHEN json_type(c, '$.function') = 'OBJECT' THEN otlp_get(c, '$.function.name') END), "
        "('arguments', CASE WHEN json_type(c, '$.function') = 'OBJECT' "
        "THEN otlp_structured(otlp_get(c, '$.function.arguments')) END)]))), '[]') END",
    )
    # One call of `otlp_legacy` (a big macro) for either source: the message's fields, or the event's.
    choice = _let(
        "message",
        "otlp_json_text(otlp_attr(a, 'message'))",
        "otlp_legacy(CASE WHEN json_type(message) = 'OBJECT' "
        "THEN map_from_entries(list_transform(map_entries(from_json(message, '\"MAP(VARCHAR, JSON)\"')), "
        "lambda e: (e.key, e.value::VARCHAR))) ELSE a END, 'assistant')",
    )
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_legacy(a, role) AS otlp_object([
        ('role', coalesce(otlp_string(otlp_text(a, 'role')), otlp_string(role))),
        ('content', otlp_attr(a, 'content')),
        ('tool_calls', {calls}),
        ('tool_call_id', otlp_string(otlp_text(a, 'id')))]);
    CREATE OR REPLACE TEMP MACRO otlp_event_messages(events) AS nullif(list_transform(
        list_filter(events, lambda e: {roles}[e.name] IS NOT NULL), lambda e: otlp_legacy(e.a, {roles}[e.name])), []);
    CREATE OR REPLACE TEMP MACRO otlp_choice(a) AS CASE WHEN a IS NOT NULL THEN {choice} END;
    CREATE OR REPLACE TEMP MACRO otlp_event_answer(events) AS
        otlp_choice(list_first(list_filter(events, lambda e: e.name = {q(sc.CHOICE_EVENT)})).a);
    """


def _pricing(prices: PriceTable) -> str:
    """`PriceTable.cost`: the request's cost by `prices` (a literal here: the table is the loader's, as the
    Python mapping's is the server's), in micro-dollars rounded half to even, as Python's `round`."""
    entries = ", ".join(
        f"{q(name)}: {{'input': {_double(p.input)}, 'output': {_double(p.output)}, "
        f"'cached_input': {_double(p.cached_input)}, 'cache_write': {_double(p.cache_write)}}}"
        for name, p in sorted(prices.models.items())
    )
    empty = "MAP([]::VARCHAR[], []::STRUCT(input DOUBLE, output DOUBLE, cached_input DOUBLE, cache_write DOUBLE)[])"
    table = f"MAP {{{entries}}}" if entries else empty
    versioned = r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$"
    cost = _let(
        "p",
        "list_first(list_filter(list_transform(models, lambda i: otlp_price(provider, i)), lambda x: x IS NOT NULL))",
        """CASE WHEN p IS NOT NULL THEN '{"micro_usd":' || round_even("""
        "greatest(tokens[1] - coalesce(tokens[4], 0) - coalesce(tokens[5], 0), 0) * p.input"
        " + coalesce(tokens[4], 0) * coalesce(p.cached_input, p.input)"
        " + coalesce(tokens[5], 0) * coalesce(p.cache_write, p.input)"
        " + tokens[2] * p.output, 0)::BIGINT || '}' END",
    )
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_price(provider, model) AS coalesce(
        ({table})[provider || ':' || model],
        ({table})[provider || ':' || regexp_replace(model, '{versioned}', '')]);
    CREATE OR REPLACE TEMP MACRO otlp_cost(provider, models, tokens) AS CASE
        WHEN provider IS NOT NULL AND tokens[1] IS NOT NULL AND tokens[2] IS NOT NULL
             AND list_bool_and(list_transform(tokens[:2] || list_filter(tokens[4:5], lambda t: t IS NOT NULL),
                                              lambda t: t BETWEEN 0 AND {sc.MAX_TOKENS})) THEN {cost}
        END;
    """


def _double(value: float | None) -> str:
    return "NULL::DOUBLE" if value is None else f"'{float(value)!r}'::DOUBLE"


def install_macros(conn: duckdb.DuckDBPyConnection, prices: PriceTable | None = None) -> None:
    """Define the mapping's macros on `conn` (temporary: they live as long as the connection); costs by
    `prices` (default: the DevTool's price table)."""
    statements = [_value_macro(MAX_DEPTH)]
    for depth in range(MAX_DEPTH - 1, 0, -1):
        statements += [_container_macro(depth), _value_macro(depth)]
    statements += [_SCALARS, _GENAI, _openinference(), _older(), _pricing(prices or default_price_table())]
    for statement in statements:
        conn.execute(statement)
