"""OTLP JSON files as TraceEvents, in SQL: the mapping of `devtool.formats.otlp_map`, for bulk loads.

A file of the Collector's file exporter holds one `ExportTraceServiceRequest` a line. DuckDB reads
each line once (`from_json` with an explicit structure), flattens its resource, scope and span lists,
and builds each span's start and end event as JSON text, which then goes into `events` through the
same projection as every other event (`event_sql.insert_events`). No Python runs per span: a
million spans load at DuckDB's speed. `devtool.formats.otlp_map` is the same mapping in Python (for
batches posted to the server) and the reference: its docstring has the table, `semconv` the names
both use, and `tests/test_store_otlp_sql.py` holds the two to giving equal events for equal input.

What SQL checks as Python does: ids (hex or base64, length, not all zeros), times (positive
integers, end not before start), attribute keys given twice, and the kind of each AnyValue field.
Where a field that should be an array or an object holds something else, DuckDB's reader takes it as
absent where Python refuses the span; neither loads a line either one refuses.

Event ids: the n-th event of line L is numbered `(L - 1) * LINE_STRIDE + n`, so ids grow in file
order without numbering the whole file in one window (which would hold every row in memory); ids
leave gaps, which nothing reads as counts. A line may hold up to `LINE_STRIDE / 2` spans.
"""

from __future__ import annotations

import duckdb

from devtool.formats import semconv as sc
from devtool.formats.otlp_values import MAX_DEPTH, SPAN_KINDS, STATUS_CODES

LINE_STRIDE = 1 << 22
INVALID = "devtool: invalid OTLP"

_AV = (
    '{"stringValue": "JSON", "boolValue": "JSON", "intValue": "JSON", "doubleValue": "JSON", '
    '"arrayValue": "JSON", "kvlistValue": "JSON", "bytesValue": "JSON"}'
)
_ATTRS = f'[{{"key": "VARCHAR", "value": {_AV}}}]'
_SPAN = (
    '{"traceId": "VARCHAR", "spanId": "VARCHAR", "parentSpanId": "VARCHAR", "name": "VARCHAR", "kind": "JSON", '
    f'"startTimeUnixNano": "JSON", "endTimeUnixNano": "JSON", "traceState": "VARCHAR", "attributes": {_ATTRS}, '
    f'"events": [{{"name": "VARCHAR", "timeUnixNano": "JSON", "attributes": {_ATTRS}}}], '
    f'"links": [{{"traceId": "VARCHAR", "spanId": "VARCHAR", "attributes": {_ATTRS}}}], '
    '"status": {"code": "JSON", "message": "VARCHAR"}}'
)
REQUEST = (
    f'{{"resourceSpans": [{{"resource": {{"attributes": {_ATTRS}}}, '
    f'"scopeSpans": [{{"scope": {{"name": "VARCHAR", "version": "VARCHAR"}}, "spans": [{_SPAN}]}}]}}]}}'
)


def _q(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _list(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(_q(name) for name in names) + "]"


def _fail(what: str) -> str:
    return f"error({_q(f'{INVALID} {what}')})"


def _value_macro(depth: int) -> str:
    """AnyValue (parsed to `_AV`) → JSON at nesting `depth`; arrays and kvlists past `MAX_DEPTH` are null."""
    nested = f"otlp_value_{depth + 1}(from_json(e, '{_AV}'))"
    shape = "left({x}, 1) = '{{' AND coalesce(json_type({x}, '$.values'), 'ARRAY') = 'ARRAY'"
    element = f"CASE WHEN left(e, 1) = '{{' THEN {nested} ELSE {_fail('AnyValue')} END"
    if depth < MAX_DEPTH:
        array = f"to_json(list_transform(json_extract(v.arrayValue, '$.values[*]'), lambda e: {element}))"
        entries = (
            "list_transform(json_extract(v.kvlistValue, '$.values[*]'), lambda e: CASE "
            "WHEN left(e, 1) = '{' AND json_type(e, '$.key') = 'VARCHAR' "
            "AND coalesce(json_type(e, '$.value'), 'NULL') IN ('OBJECT', 'NULL') "
            f"THEN {{'k': json_extract_string(e, '$.key'), 'v': otlp_value_{depth + 1}(from_json(e -> 'value', '{_AV}'))}} "
            f"ELSE {_fail('key-value')} END)"
        )
        # A key given twice in a kvlist: the last wins, as in a Python dict.
        kvlist = (
            f"to_json(map_from_entries(list_filter({entries}, lambda p, i: NOT list_contains("
            f"list_transform(list_slice({entries}, i + 1, 1 << 30), lambda q: q.k), p.k))))"
        )
    else:
        array = kvlist = "'null'::JSON"
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_value_{depth}(v) AS CASE
        WHEN v.stringValue IS NOT NULL THEN
            CASE WHEN left(v.stringValue, 1) = '"' THEN v.stringValue ELSE {_fail("stringValue")} END
        WHEN v.boolValue IS NOT NULL THEN
            CASE WHEN v.boolValue::VARCHAR IN ('true', 'false') THEN v.boolValue ELSE {_fail("boolValue")} END
        WHEN v.intValue IS NOT NULL THEN
            CASE WHEN regexp_full_match(v.intValue::VARCHAR, '"?-?[0-9]+"?')
                 THEN to_json(trim(v.intValue::VARCHAR, '"')::BIGINT) ELSE {_fail("intValue")} END
        WHEN v.doubleValue IS NOT NULL THEN
            CASE WHEN v.doubleValue::VARCHAR IN ('"NaN"', '"Infinity"', '"-Infinity"') THEN 'null'::JSON
                 WHEN regexp_full_match(v.doubleValue::VARCHAR, '-?[0-9][0-9.eE+-]*')
                 THEN to_json(v.doubleValue::VARCHAR::DOUBLE) ELSE {_fail("doubleValue")} END
        WHEN v.arrayValue IS NOT NULL THEN
            CASE WHEN {shape.format(x="v.arrayValue")} THEN {array} ELSE {_fail("arrayValue")} END
        WHEN v.kvlistValue IS NOT NULL THEN
            CASE WHEN {shape.format(x="v.kvlistValue")} THEN {kvlist} ELSE {_fail("kvlistValue")} END
        WHEN v.bytesValue IS NOT NULL THEN
            CASE WHEN left(v.bytesValue, 1) = '"' THEN v.bytesValue ELSE {_fail("bytesValue")} END
        ELSE 'null'::JSON
    END
    """


def _id_macro() -> str:
    hex_or_base64 = """
        CASE WHEN s IS NULL OR s = '' THEN NULL
             WHEN length(s) = 2 * size AND regexp_full_match(s, '[0-9a-fA-F]*') THEN lower(s)
             WHEN length(s) = (size + 2) // 3 * 4 AND regexp_full_match(s, '[A-Za-z0-9+/]*={0,2}')
             THEN lower(hex(from_base64(s)))
             ELSE '' END
    """
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_checked_id(h, size, optional) AS CASE
        WHEN h IS NULL AND optional THEN ''
        WHEN length(h) = 2 * size AND ltrim(h, '0') <> '' THEN h
        ELSE {_fail("id")} END;
    CREATE OR REPLACE TEMP MACRO otlp_id(s, size, optional) AS otlp_checked_id({hex_or_base64}, size, optional);
    """


# JSON helpers the mapping uses. `m` is a span's attributes as MAP(VARCHAR, JSON).
_HELPERS = f"""
CREATE OR REPLACE TEMP MACRO otlp_nanos(x) AS CASE
    WHEN regexp_full_match(x::VARCHAR, '"?[0-9]+"?') AND trim(x::VARCHAR, '"')::UBIGINT > 0
    THEN trim(x::VARCHAR, '"')::UBIGINT ELSE {_fail("time")} END;
CREATE OR REPLACE TEMP MACRO otlp_ms(ns) AS (ns // 1000)::DOUBLE / 1000.0;
CREATE OR REPLACE TEMP MACRO otlp_enum(x, names, prefix) AS CASE
    WHEN x IS NULL THEN 0
    WHEN regexp_full_match(x::VARCHAR, '[0-9]+') AND x::VARCHAR::INTEGER < len(names) THEN x::VARCHAR::INTEGER
    WHEN starts_with(x::VARCHAR, '"' || prefix) AND list_contains(names, lower(trim(x::VARCHAR, '"')[len(prefix) + 1:]))
    THEN list_position(names, lower(trim(x::VARCHAR, '"')[len(prefix) + 1:])) - 1
    ELSE {_fail("enum")} END;
CREATE OR REPLACE TEMP MACRO otlp_map(attributes) AS coalesce(
    map_from_entries(list_transform(attributes, lambda a: (a.key, otlp_value_1(a.value)))),
    MAP([]::VARCHAR[], []::JSON[]));
CREATE OR REPLACE TEMP MACRO otlp_object(entries) AS
    to_json(map_from_entries(list_filter(entries, lambda e: e[2] IS NOT NULL)));
CREATE OR REPLACE TEMP MACRO otlp_attr(m, k) AS nullif(m[k], 'null'::JSON);
CREATE OR REPLACE TEMP MACRO otlp_text(m, k) AS CASE WHEN left(m[k], 1) = '"' THEN m[k] ->> '$' END;
CREATE OR REPLACE TEMP MACRO otlp_int(m, k) AS
    CASE WHEN regexp_full_match(m[k]::VARCHAR, '-?[0-9]+') THEN m[k]::VARCHAR::BIGINT END;
CREATE OR REPLACE TEMP MACRO otlp_first_text(m, keys) AS list_first(list_filter(list_transform(keys, lambda k: otlp_text(m, k)), lambda t: t IS NOT NULL));
CREATE OR REPLACE TEMP MACRO otlp_first_int(m, keys) AS list_first(list_filter(list_transform(keys, lambda k: otlp_int(m, k)), lambda t: t IS NOT NULL));
CREATE OR REPLACE TEMP MACRO otlp_first(m, keys) AS list_first(list_filter(list_transform(keys, lambda k: otlp_attr(m, k)), lambda t: t IS NOT NULL));
CREATE OR REPLACE TEMP MACRO otlp_get(j, path) AS nullif(json_extract(j, path), 'null'::JSON);
CREATE OR REPLACE TEMP MACRO otlp_type(j) AS json_extract_string(j, '$.type');
CREATE OR REPLACE TEMP MACRO otlp_parse(s) AS CASE
    WHEN regexp_matches(s, {_q(sc.NON_JSON_WORDS)}) THEN NULL
    WHEN json_valid(s) THEN nullif(json(s), 'null'::JSON) END;
CREATE OR REPLACE TEMP MACRO otlp_json_text(v) AS CASE WHEN left(v, 1) = '"' THEN otlp_parse(v ->> '$') ELSE v END;
CREATE OR REPLACE TEMP MACRO otlp_structured_of(v, p) AS CASE WHEN json_type(p) IN ('OBJECT', 'ARRAY') THEN p ELSE v END;
CREATE OR REPLACE TEMP MACRO otlp_structured(v) AS otlp_structured_of(v, CASE WHEN left(v, 1) = '"' THEN otlp_parse(v ->> '$') END);
"""

# Messages: `messages.py`, one macro per function there.
_MESSAGES = """
CREATE OR REPLACE TEMP MACRO otlp_role(m) AS CASE WHEN json_type(m, '$.role') = 'VARCHAR' THEN json_extract(m, '$.role') END;
CREATE OR REPLACE TEMP MACRO otlp_parts(m) AS list_filter(json_extract(m, '$.parts[*]'), lambda p: json_type(p) = 'OBJECT');
CREATE OR REPLACE TEMP MACRO otlp_is_text(p) AS coalesce(otlp_type(p) = 'text' AND json_type(p, '$.content') = 'VARCHAR', false);
CREATE OR REPLACE TEMP MACRO otlp_content(others) AS CASE
    WHEN len(others) = 0 THEN NULL
    WHEN len(list_filter(others, lambda p: otlp_is_text(p))) = len(others)
    THEN to_json(array_to_string(list_transform(others, lambda p: json_extract_string(p, '$.content')), chr(10)))
    ELSE to_json(others) END;
CREATE OR REPLACE TEMP MACRO otlp_calls(calls) AS CASE WHEN len(calls) > 0 THEN to_json(list_transform(calls,
    lambda p: otlp_object([('id', otlp_get(p, '$.id')), ('name', otlp_get(p, '$.name')),
                           ('arguments', otlp_get(p, '$.arguments'))]))) END;
CREATE OR REPLACE TEMP MACRO otlp_base(m) AS CASE
    WHEN json_type(m, '$.parts') IS DISTINCT FROM 'ARRAY'
    THEN otlp_object([('role', otlp_role(m)), ('content', otlp_get(m, '$.content'))])
    ELSE otlp_object([
        ('role', otlp_role(m)),
        ('content', otlp_content(list_filter(otlp_parts(m), lambda p: otlp_type(p) IS DISTINCT FROM 'tool_call_response'
                                                                 AND otlp_type(p) IS DISTINCT FROM 'tool_call'))),
        ('tool_calls', otlp_calls(list_filter(otlp_parts(m), lambda p: otlp_type(p) = 'tool_call')))])
    END;
CREATE OR REPLACE TEMP MACRO otlp_split(m) AS CASE
    WHEN json_type(m, '$.parts') IS DISTINCT FROM 'ARRAY' THEN [otlp_base(m)]
    ELSE list_concat(
        list_transform(list_filter(otlp_parts(m), lambda p: otlp_type(p) = 'tool_call_response'),
            lambda p: otlp_object([('role', '"tool"'::JSON), ('tool_call_id', otlp_get(p, '$.id')),
                                   ('content', coalesce(otlp_get(p, '$.response'), otlp_get(p, '$.result')))])),
        CASE WHEN len(list_filter(otlp_parts(m), lambda p: otlp_type(p) = 'tool_call_response')) = len(otlp_parts(m))
                  AND len(otlp_parts(m)) > 0
             THEN [] ELSE [otlp_base(m)] END)
    END;
CREATE OR REPLACE TEMP MACRO otlp_objects(list) AS list_filter(json_extract(list, '$[*]'), lambda m: json_type(m) = 'OBJECT');
CREATE OR REPLACE TEMP MACRO otlp_genai_messages_of(x) AS CASE
    WHEN json_type(x) = 'ARRAY' THEN flatten(list_transform(otlp_objects(x), lambda m: otlp_split(m))) END;
CREATE OR REPLACE TEMP MACRO otlp_genai_messages(value) AS otlp_genai_messages_of(otlp_json_text(value));
CREATE OR REPLACE TEMP MACRO otlp_genai_answer_of(x) AS CASE
    WHEN json_type(x) = 'ARRAY' AND len(otlp_objects(x)) > 0 THEN otlp_base(otlp_objects(x)[1]) END;
CREATE OR REPLACE TEMP MACRO otlp_genai_answer(value) AS otlp_genai_answer_of(otlp_json_text(value));
CREATE OR REPLACE TEMP MACRO otlp_system_of(value, parts) AS CASE
    WHEN json_type(parts) = 'ARRAY' THEN otlp_base(json_object('role', 'system', 'parts', parts))
    WHEN left(value, 1) = '"' THEN otlp_object([('role', '"system"'::JSON), ('content', value)]) END;
CREATE OR REPLACE TEMP MACRO otlp_system(value) AS otlp_system_of(value, otlp_json_text(value));
"""


def _oi_macros() -> str:
    """OpenInference's flattened messages: `messages.openinference_messages`."""
    count = (
        "CREATE OR REPLACE TEMP MACRO otlp_count(m, prefix) AS coalesce(list_max(list_filter(list_transform("
        "list_filter(map_keys(m), lambda k: starts_with(k, prefix)), "
        "lambda k: TRY_CAST(regexp_extract(k[len(prefix) + 1:], '^([0-9]+)\\.', 1) AS BIGINT)), "
        f"lambda i: i <= {sc.MAX_INDEX})) + 1, 0);"
    )
    content = (
        f"coalesce(to_json(otlp_text(m, pre || {_q(sc.OI_CONTENT)})), otlp_join(list_filter("
        f"list_transform(range(otlp_count(m, pre || {_q(sc.OI_CONTENTS)})), "
        f"lambda j: otlp_text(m, pre || {_q(sc.OI_CONTENTS)} || j || '.' || {_q(sc.OI_CONTENT_TEXT)})), "
        "lambda t: t IS NOT NULL)))"
    )
    call = f"pre || {_q(sc.OI_TOOL_CALLS)} || k || '.'"
    calls = (
        f"to_json(nullif(list_transform(range(otlp_count(m, pre || {_q(sc.OI_TOOL_CALLS)})), lambda k: otlp_object(["
        f"('id', to_json(otlp_text(m, {call} || {_q(sc.OI_TOOL_CALL_ID)}))), "
        f"('name', to_json(otlp_text(m, {call} || {_q(sc.OI_TOOL_CALL_NAME)}))), "
        f"('arguments', otlp_structured(otlp_attr(m, {call} || {_q(sc.OI_TOOL_CALL_ARGUMENTS)})))])), []))"
    )
    return f"""
    {count}
    CREATE OR REPLACE TEMP MACRO otlp_join(texts) AS CASE WHEN len(texts) > 0 THEN to_json(array_to_string(texts, chr(10))) END;
    CREATE OR REPLACE TEMP MACRO otlp_oi_message(m, pre) AS otlp_object([
        ('role', to_json(otlp_text(m, pre || {_q(sc.OI_ROLE)}))),
        ('content', {content}),
        ('tool_calls', {calls}),
        ('tool_call_id', to_json(otlp_text(m, pre || {_q(sc.OI_MESSAGE_TOOL_CALL_ID)})))]);
    CREATE OR REPLACE TEMP MACRO otlp_oi_messages(m, prefix) AS CASE WHEN otlp_count(m, prefix) > 0
        THEN list_transform(range(otlp_count(m, prefix)), lambda i: otlp_oi_message(m, prefix || i || '.')) END;
    """


def _event_macros() -> str:
    """The older GenAI conventions' per-message events: `messages.event_messages`, `messages.event_answer`.

    `events` is a list of structs `{name, a}` with `a` the event's attributes as a map.
    """
    roles = "MAP {" + ", ".join(f"{_q(name)}: {_q(role)}" for name, role in sc.MESSAGE_EVENTS.items()) + "}"
    calls = (
        "CASE WHEN json_type(calls) = 'ARRAY' THEN to_json(nullif(list_transform("
        "list_filter(json_extract(calls, '$[*]'), lambda c: json_type(c) = 'OBJECT'), lambda c: otlp_object(["
        "('id', otlp_get(c, '$.id')), "
        "('name', CASE WHEN json_type(c, '$.function') = 'OBJECT' THEN otlp_get(c, '$.function.name') END), "
        "('arguments', CASE WHEN json_type(c, '$.function') = 'OBJECT' "
        "THEN otlp_structured(otlp_get(c, '$.function.arguments')) END)])), [])) END"
    )
    return f"""
    CREATE OR REPLACE TEMP MACRO otlp_legacy_of(a, role, calls) AS otlp_object([
        ('role', coalesce(to_json(otlp_text(a, 'role')), to_json(role))),
        ('content', otlp_attr(a, 'content')),
        ('tool_calls', {calls}),
        ('tool_call_id', to_json(otlp_text(a, 'id')))]);
CREATE OR REPLACE TEMP MACRO otlp_legacy(a, role) AS otlp_legacy_of(a, role, otlp_json_text(otlp_attr(a, 'tool_calls')));
        CREATE OR REPLACE TEMP MACRO otlp_event_messages(events) AS nullif(list_transform(
        list_filter(events, lambda e: {roles}[e.name] IS NOT NULL),
        lambda e: otlp_legacy(e.a, {roles}[e.name])), []);
    CREATE OR REPLACE TEMP MACRO otlp_choice_of(a, message) AS CASE
        WHEN a IS NULL THEN NULL
        WHEN json_type(message) = 'OBJECT' THEN otlp_legacy(from_json(message, '"MAP(VARCHAR, JSON)"'), 'assistant')
        ELSE otlp_legacy(a, 'assistant') END;
CREATE OR REPLACE TEMP MACRO otlp_choice(a) AS otlp_choice_of(a, otlp_json_text(otlp_attr(a, 'message')));
CREATE OR REPLACE TEMP MACRO otlp_event_answer(events) AS otlp_choice(list_first(list_filter(events,
        lambda e: e.name = {_q(sc.CHOICE_EVENT)})).a);
            """


def install_macros(conn: duckdb.DuckDBPyConnection) -> None:
    """Define the mapping's macros on `conn` (temporary: they live as long as the connection)."""
    statements = [_value_macro(depth) for depth in range(MAX_DEPTH, 0, -1)]
    statements += [_id_macro(), _HELPERS, _MESSAGES, _oi_macros(), _event_macros(), _TURN]
    for statement in statements:
        conn.execute(statement)


_KINDS = _list(SPAN_KINDS)
_STATUS = _list(STATUS_CODES)


def events_relation(lines: str) -> str:
    """The TraceEvents of the OTLP requests in `lines` (`body`: a request's JSON text, `line`: its number).

    Gives `body` (an event's JSON text) and `n` (its position: ids follow it), start before end.
    """
    operation = "MAP {" + ", ".join(f"{_q(k)}: {_q(v)}" for k, v in sc.OPERATION_KINDS.items()) + "}"
    openinference = "MAP {" + ", ".join(f"{_q(k)}: {_q(v)}" for k, v in sc.OPENINFERENCE_KINDS.items()) + "}"
    return f"""(
    WITH parsed AS (
        SELECT line, CASE WHEN json_type(body) = 'OBJECT' THEN from_json(body, '{REQUEST}') ELSE {_fail("request")} END AS req
        FROM {lines}
    ),
    resources AS (
        SELECT line, list_transform(coalesce(req.resourceSpans, []), lambda r: {{
            'resource': to_json(otlp_map(r.resource.attributes)), 'scopes': coalesce(r.scopeSpans, [])}}) AS rs
        FROM parsed
    ),
    items AS (
        SELECT line, u.x.sp AS sp, u.x.resource AS resource, u.x.scope AS scope, u.k AS k
        FROM resources, unnest(flatten(list_transform(rs, lambda r: flatten(list_transform(r.scopes,
            lambda s: list_transform(coalesce(s.spans, []), lambda sp: {{'sp': sp, 'resource': r.resource, 'scope': s.scope}})))))
        ) WITH ORDINALITY AS u(x, k)
    ),
    spans AS (
        SELECT line, k, resource, scope, sp,
               otlp_id(sp.traceId, 16, false) AS trace_id,
               otlp_id(sp.spanId, 8, false) AS span_id,
               otlp_id(sp.parentSpanId, 8, true) AS parent_id,
               coalesce(sp.name, '') AS name,
               otlp_enum(sp.kind, {_KINDS}, 'SPAN_KIND_') AS kind_code,
               otlp_enum(sp.status.code, {_STATUS}, 'STATUS_CODE_') AS status_code,
               coalesce(sp.status.message, '') AS status_message,
               otlp_nanos(sp.startTimeUnixNano) AS start_ns,
               otlp_nanos(sp.endTimeUnixNano) AS end_ns,
               otlp_map(sp.attributes) AS m,
               list_transform(coalesce(sp.events, []), lambda e: {{
                   'name': coalesce(e.name, ''), 'ns': otlp_nanos(e.timeUnixNano), 'a': otlp_map(e.attributes)}}) AS evs
        FROM items
        WHERE CASE WHEN k > {LINE_STRIDE // 2} THEN {_fail("line: too many spans")} ELSE true END
    ),
    kinds AS (
        SELECT *,
            CASE WHEN end_ns < start_ns THEN {_fail("span ends before it starts")}
                 WHEN otlp_text(m, {_q(sc.OPERATION)}) IS NOT NULL
                 THEN coalesce({operation}[otlp_text(m, {_q(sc.OPERATION)})], {_q(sc.CUSTOM)})
                 WHEN otlp_text(m, {_q(sc.OPENINFERENCE_KIND)}) IS NOT NULL
                 THEN coalesce({openinference}[upper(otlp_text(m, {_q(sc.OPENINFERENCE_KIND)}))], {_q(sc.CUSTOM)})
                 WHEN otlp_first_text(m, {_list(sc.MODEL_CALL_MARKERS)}) IS NOT NULL THEN 'turn'
                 ELSE {_q(sc.CUSTOM)} END AS kind,
            otlp_ms(start_ns) AS start_ms, otlp_ms(end_ns) AS end_ms
        FROM spans
    ),
    fields AS (
        SELECT *,
            coalesce(otlp_first_text(m, {_list(sc.AGENT_NAME)}), CASE WHEN kind = 'agent' THEN name ELSE '' END) AS agent_id,
            status_code = 2 AS failed,
            to_json({{'traceId': trace_id, 'spanId': span_id, 'parentSpanId': parent_id}}) AS trace,
            list_last(list_filter(evs, lambda e: e.name = {_q(sc.EXCEPTION_EVENT)})).a AS exc,
            otlp_first_text(m, {_list(sc.TOOL_NAME)}) AS tool_name
        FROM kinds
    ),
    mapped AS (
        SELECT line, k, kind, start_ms, end_ms, agent_id, trace, name, m, evs,
            CASE WHEN kind = 'turn' THEN nullif(otlp_object([
                ('id', to_json(otlp_first_text(m, {_list(sc.MODEL)}))),
                ('provider', to_json(otlp_first_text(m, {_list(sc.PROVIDER)})))]), '{{}}'::JSON) END AS model,
            CASE WHEN kind = 'tools:execute' THEN coalesce(tool_name, name) END AS tool,
            to_json(end_ms - start_ms) AS duration,
            to_json(NOT failed) AS success,
            CASE WHEN failed THEN otlp_error(m, exc, status_message) END AS error,
            to_json({{
                'name': name, 'kind': {_KINDS}[kind_code + 1],
                'status': {{'code': {_STATUS}[status_code + 1], 'message': status_message}},
                'scope': {{'name': coalesce(scope.name, ''), 'version': coalesce(scope.version, '')}},
                'resource': resource, 'attributes': to_json(m),
                'events': list_transform(evs, lambda e: {{'name': e.name, 'timestamp': otlp_ms(e.ns), 'attributes': to_json(e.a)}}),
                'links': list_transform(coalesce(sp.links, []), lambda l: {{
                    'traceId': otlp_id(l.traceId, 16, false), 'spanId': otlp_id(l.spanId, 8, false),
                    'attributes': to_json(otlp_map(l.attributes))}}),
                'traceState': coalesce(sp.traceState, '')}}) AS otel
        FROM fields
    ),
    bodies AS (
        SELECT line, k,
            otlp_object(list_concat([
                ('schemaVersion', '1'::JSON), ('type', to_json(kind || ':start')), ('timestamp', to_json(start_ms)),
                ('agentId', to_json(agent_id)), ('trace', trace), ('name', to_json(name))],
                {_start_fields()},
                [('otel', otel)])) AS start_body,
            otlp_object(list_concat([
                ('schemaVersion', '1'::JSON), ('type', to_json(kind || ':end')), ('timestamp', to_json(end_ms)),
                ('agentId', to_json(agent_id)), ('trace', trace), ('name', to_json(name))],
                {_end_fields()})) AS end_body
        FROM mapped
    )
    SELECT e.body, (line - 1) * {LINE_STRIDE} + 2 * (k - 1) + e.side AS n
    FROM bodies, unnest([start_body, end_body]) WITH ORDINALITY AS e(body, side)
    )"""


def _start_fields() -> str:
    """The fields of a start event past the common ones, by kind (`otlp_map.span_events`)."""
    return f"""CASE kind
        WHEN 'agent' THEN [
            ('props', coalesce(otlp_structured(otlp_first(m, {_list(sc.INPUT)})),
                               to_json(otlp_genai_messages(otlp_attr(m, {_q(sc.INPUT_MESSAGES)})))))]
        WHEN 'turn' THEN [('model', model), ('messages', to_json(otlp_turn_messages(m, evs)))]
        WHEN 'tools:execute' THEN [('toolNames', to_json([tool])), ('toolCallsCount', '1'::JSON)]
        ELSE [('props', otlp_structured(otlp_first(m, {_list(sc.INPUT)})))]
    END"""


def _end_fields() -> str:
    closing = "('duration', duration), ('success', success), ('error', error)"
    result = (
        "to_json([otlp_object(["
        f"('toolName', to_json(tool)), ('toolCallId', to_json(otlp_first_text(m, {_list(sc.TOOL_CALL_ID)}))), "
        f"('input', otlp_structured(otlp_first(m, {_list(sc.TOOL_ARGUMENTS)}))), "
        f"('output', otlp_structured(otlp_first(m, {_list(sc.TOOL_RESULT)}))), {closing}])])"
    )
    return f"""CASE kind
        WHEN 'agent' THEN [{closing},
            ('result', coalesce(otlp_structured(otlp_first(m, {_list(sc.AGENT_OUTPUT)})),
                                otlp_genai_answer(otlp_attr(m, {_q(sc.OUTPUT_MESSAGES)}))))]
        WHEN 'turn' THEN [('model', model), {closing}, ('message', otlp_turn_answer(m, evs)), ('usage', otlp_usage(m))]
        WHEN 'tools:execute' THEN [('toolNames', to_json([tool])), ('toolCallsCount', '1'::JSON), {closing},
            ('toolResults', {result})]
        ELSE [{closing}, ('result', otlp_structured(otlp_first(m, {_list(sc.OUTPUT)})))]
    END"""


_TURN = f"""
CREATE OR REPLACE TEMP MACRO otlp_turn_messages(m, evs) AS CASE
    WHEN otlp_system(otlp_attr(m, {_q(sc.SYSTEM_INSTRUCTIONS)})) IS NOT NULL OR otlp_genai_messages(otlp_attr(m, {_q(sc.INPUT_MESSAGES)})) IS NOT NULL
    THEN list_concat(
        list_filter([otlp_system(otlp_attr(m, {_q(sc.SYSTEM_INSTRUCTIONS)}))], lambda s: s IS NOT NULL),
        coalesce(otlp_genai_messages(otlp_attr(m, {_q(sc.INPUT_MESSAGES)})), []))
    ELSE coalesce(otlp_oi_messages(m, {_q(sc.OI_INPUT)}), otlp_event_messages(evs)) END;
CREATE OR REPLACE TEMP MACRO otlp_turn_answer(m, evs) AS coalesce(
    otlp_genai_answer(otlp_attr(m, {_q(sc.OUTPUT_MESSAGES)})),
    otlp_oi_messages(m, {_q(sc.OI_OUTPUT)})[1],
    otlp_event_answer(evs));
CREATE OR REPLACE TEMP MACRO otlp_usage_of(p, c, t) AS nullif(otlp_object([
    ('promptTokens', to_json(p)), ('completionTokens', to_json(c)),
    ('totalTokens', to_json(coalesce(t, CASE WHEN p IS NOT NULL OR c IS NOT NULL THEN coalesce(p, 0) + coalesce(c, 0) END)))]),
    '{{}}'::JSON);
CREATE OR REPLACE TEMP MACRO otlp_usage(m) AS otlp_usage_of(
    otlp_first_int(m, {_list(sc.PROMPT_TOKENS)}), otlp_first_int(m, {_list(sc.COMPLETION_TOKENS)}),
    otlp_first_int(m, {_list(sc.TOTAL_TOKENS)}));
CREATE OR REPLACE TEMP MACRO otlp_error_of(name, message, stack) AS otlp_object([
    ('name', to_json(name)), ('message', to_json(coalesce(message, name))), ('stack', to_json(stack))]);
CREATE OR REPLACE TEMP MACRO otlp_error(m, exc, status_message) AS otlp_error_of(
    coalesce(otlp_text(exc, {_q(sc.EXCEPTION_TYPE)}), otlp_text(m, {_q(sc.ERROR_TYPE)}), 'Error'),
    coalesce(nullif(status_message, ''), otlp_text(exc, {_q(sc.EXCEPTION_MESSAGE)})),
    otlp_text(exc, {_q(sc.EXCEPTION_STACK)}));
"""
