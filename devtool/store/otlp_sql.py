"""OTLP JSON files as TraceEvents, in SQL: the mapping of `devtool.formats.otlp_map`, for bulk loads.

A file of the Collector's file exporter holds one `ExportTraceServiceRequest` a line. DuckDB reads
each line once (`from_json` with an explicit structure), flattens its resource, scope and span lists,
and writes each span's start and end event as JSON text, which then goes into `events` through the
same projection as every other event (`event_sql.insert_events`). No Python runs per span.
`devtool.formats.otlp_map` is the same mapping in Python (for batches posted to the server) and the
reference: its docstring has the table, `semconv` the names both use, `otlp_macros.py` the SQL twin of
each of its helpers, and `tests/test_store_otlp_sql.py` holds the two to equal events for equal input.

What SQL checks as Python does: ids (hex or base64, length, not all zeros), times (positive
integers, end not before start), attribute keys given twice, and the kind of each AnyValue field.
Where a field that should be an array or an object holds something else, DuckDB's reader takes it as
absent where Python refuses the span; a line either one refuses is not loaded.

Each stage below computes what the next uses as columns: a value a macro would compute twice is
computed once here. Event ids: the n-th event of line L is numbered `(L - 1) * LINE_STRIDE + n`, so
ids grow in file order without numbering the whole file in one window (which would hold every row in
memory); ids leave gaps, which nothing reads as counts. A line may hold up to `LINE_STRIDE / 2` spans.
"""

from __future__ import annotations

from devtool.formats import semconv as sc
from devtool.formats.native import EVENTS, MAX_CARRIED
from devtool.formats.otlp_values import SPAN_KINDS, STATUS_CODES
from devtool.store.otlp_macros import AV, fail, install_macros, names, q

__all__ = ["LINE_STRIDE", "REQUEST", "events_relation", "file_lines", "install_macros"]

LINE_STRIDE = 1 << 22

_ATTRS = f'[{{"key": "VARCHAR", "value": {AV}}}]'
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

_KINDS = names(SPAN_KINDS)
_STATUS = names(STATUS_CODES)
_OPERATIONS = "MAP {" + ", ".join(f"{q(k)}: {q(v)}" for k, v in sc.OPERATION_KINDS.items()) + "}"
_OPENINFERENCE = "MAP {" + ", ".join(f"{q(k)}: {q(v)}" for k, v in sc.OPENINFERENCE_KINDS.items()) + "}"
_PRICED_MODELS = ", ".join(f"otlp_text(m, {q(key)})" for key in sc.PRICED_MODEL)
_STRUCTURED = "CASE WHEN json_type({p}) IN ('OBJECT', 'ARRAY') THEN {p} ELSE {raw} END"


def file_lines(max_object_size: int) -> str:
    """The lines of the file `$path` (a parameter), each a request: `body` its text, `line` its number."""
    return (
        "(SELECT json AS body, ordinality AS line FROM read_json_objects($path, format='newline_delimited', "
        f"maximum_object_size={int(max_object_size)}) WITH ORDINALITY)"
    )


def events_relation(lines: str) -> str:
    """The TraceEvents of the OTLP requests in `lines` (`body`: a request's JSON text, `line`: its number).

    Gives `body` (an event's JSON text) and `n` (its position: ids follow it), start before end.
    `install_macros` must have run on the connection.
    """
    return f"""(
    WITH parsed AS (
        SELECT line,
               CASE WHEN json_type(body) = 'OBJECT' THEN from_json(body, '{REQUEST}') ELSE {fail("request")} END AS req
        FROM {lines}
    ),
    -- Unnests in the select list: DuckDB runs these far faster than lateral UNNEST joins of nested lists.
    resources AS (
        SELECT line, unnest(req.resourceSpans) AS rs, unnest(range(len(req.resourceSpans))) AS ri,
               list_transform(req.resourceSpans,
                              lambda r: list_transform(r.scopeSpans, lambda s: len(s.spans))) AS sizes
        FROM parsed
    ),
    scopes AS (
        SELECT line, ri, sizes, otlp_map_json(otlp_map(rs.resource.attributes)) AS resource,
               unnest(rs.scopeSpans) AS ss, unnest(range(len(rs.scopeSpans))) AS si
        FROM resources
    ),
    items AS (
        SELECT line, resource, ss.scope AS scope, unnest(ss.spans) AS sp,
               -- the span's place on its line: the spans of the scopes before its own, then its index
               coalesce(list_sum(flatten(sizes[:ri])), 0) + coalesce(list_sum(sizes[ri + 1][:si]), 0)
                   + unnest(range(len(ss.spans))) + 1 AS k
        FROM scopes
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
               list_transform(sp.events, lambda e: {{
                   'name': coalesce(e.name, ''), 'ns': otlp_nanos(e.timeUnixNano),
                   'a': otlp_map(e.attributes)}}) AS evs,
               otlp_array(list_transform(sp.links, lambda l:
                   '{{"traceId":' || otlp_string(otlp_id(l.traceId, 16, false))
                   || ',"spanId":' || otlp_string(otlp_id(l.spanId, 8, false))
                   || ',"attributes":' || otlp_map_json(otlp_map(l.attributes)) || '}}')) AS links,
               coalesce(sp.traceState, '') AS trace_state
        FROM items
        WHERE CASE WHEN k > {LINE_STRIDE // 2} THEN {fail("line: too many spans")} ELSE true END
    ),
    -- otlp_map.span_kind
    kinds AS (
        SELECT *,
            CASE WHEN end_ns < start_ns THEN {fail("span: ends before it starts")}
                 WHEN otlp_text(m, {q(sc.OPERATION)}) IS NOT NULL
                 THEN coalesce({_OPERATIONS}[otlp_text(m, {q(sc.OPERATION)})], {q(sc.CUSTOM)})
                 WHEN otlp_text(m, {q(sc.OPENINFERENCE_KIND)}) IS NOT NULL
                 THEN coalesce({_OPENINFERENCE}[upper(otlp_text(m, {q(sc.OPENINFERENCE_KIND)}))], {q(sc.CUSTOM)})
                 WHEN otlp_first_text(m, {names(sc.MODEL_CALL_MARKERS)}) IS NOT NULL THEN 'turn'
                 ELSE {q(sc.CUSTOM)} END AS kind,
            otlp_ms(start_ns) AS start_ms, otlp_ms(end_ns) AS end_ms
        FROM spans
    ),
    -- the attributes each kind reads, looked up once
    lookups AS (
        SELECT *,
            coalesce(otlp_first_text(m, {names(sc.AGENT_NAME)}),
                     CASE WHEN kind = 'agent' THEN name ELSE '' END) AS agent_id,
            CASE kind WHEN 'tools:execute' THEN otlp_first(m, {names(sc.TOOL_ARGUMENTS)})
                      WHEN 'turn' THEN NULL ELSE otlp_first(m, {names(sc.INPUT)}) END AS in_raw,
            CASE kind WHEN 'tools:execute' THEN otlp_first(m, {names(sc.TOOL_RESULT)})
                      WHEN 'agent' THEN otlp_first(m, {names(sc.AGENT_OUTPUT)})
                      WHEN 'turn' THEN NULL ELSE otlp_first(m, {names(sc.OUTPUT)}) END AS out_raw,
            CASE WHEN kind IN ('agent', 'turn')
                 THEN otlp_json_text(otlp_attr(m, {q(sc.INPUT_MESSAGES)})) END AS in_json,
            CASE WHEN kind IN ('agent', 'turn')
                 THEN otlp_json_text(otlp_attr(m, {q(sc.OUTPUT_MESSAGES)})) END AS out_json,
            CASE WHEN kind = 'turn' THEN otlp_attr(m, {q(sc.SYSTEM_INSTRUCTIONS)}) END AS system_raw,
            CASE WHEN kind = 'turn' THEN [
                otlp_first_int(m, {names(sc.PROMPT_TOKENS)}), otlp_first_int(m, {names(sc.COMPLETION_TOKENS)}),
                otlp_first_int(m, {names(sc.TOTAL_TOKENS)}), otlp_first_int(m, {names(sc.CACHE_READ_TOKENS)}),
                otlp_first_int(m, {names(sc.CACHE_WRITE_TOKENS)})] END AS tokens
        FROM kinds
    ),
    parsed_values AS (
        SELECT *,
            CASE WHEN left(in_raw, 1) = '"' THEN otlp_parse(in_raw) END AS in_parsed,
            CASE WHEN left(out_raw, 1) = '"' THEN otlp_parse(out_raw) END AS out_parsed,
            otlp_json_text(system_raw) AS system_json,
            otlp_genai_messages(in_json) AS genai_in,
            otlp_genai_answer(out_json) AS genai_out,
            {_FAILED} AS failed
        FROM lookups
    ),
    mapped AS (
        SELECT line, k, trace_id, kind, start_ms, end_ms, agent_id, name, m, evs, genai_in, genai_out, links, tokens,
            CASE WHEN kind = 'turn' THEN otlp_cost(
                otlp_first_text(m, {names(sc.PROVIDER)}),
                list_filter([{_PRICED_MODELS}], lambda i: i IS NOT NULL),
                tokens) END AS costs,
            {_STRUCTURED.format(p="in_parsed", raw="in_raw")} AS input,
            {_STRUCTURED.format(p="out_parsed", raw="out_raw")} AS output,
            otlp_system(system_raw, system_json) AS system_message,
            to_json({{'traceId': trace_id, 'spanId': span_id, 'parentSpanId': parent_id}})::VARCHAR AS trace,
            CASE WHEN kind = 'turn' THEN nullif('{{' || ltrim(
                otlp_pair('id', otlp_string(otlp_first_text(m, {names(sc.MODEL)})))
                || otlp_pair('provider', otlp_string(otlp_first_text(m, {names(sc.PROVIDER)}))), ',')
                || '}}', '{{}}') END AS model,
            CASE WHEN kind = 'tools:execute' THEN coalesce(otlp_first_text(m, {names(sc.TOOL_NAME)}), name) END AS tool,
            to_json(end_ms - start_ms)::VARCHAR AS duration,
            CASE WHEN failed THEN 'false' ELSE 'true' END AS success,
            CASE WHEN failed THEN {_error()} END AS error,
            {_otel()} AS otel
        FROM parsed_values
    ),
    bodies AS (
        SELECT line, k, trace_id, otlp_text(m, {q(EVENTS)}) AS carried,
            '{{"schemaVersion":1' || otlp_pair('type', otlp_string(kind || ':start'))
                || otlp_pair('timestamp', to_json(start_ms)::VARCHAR) || otlp_pair('agentId', otlp_string(agent_id))
                || otlp_pair('trace', trace) || otlp_pair('name', otlp_string(name))
                || {_start_fields()} || otlp_pair('otel', otel) || '}}' AS start_body,
            '{{"schemaVersion":1' || otlp_pair('type', otlp_string(kind || ':end'))
                || otlp_pair('timestamp', to_json(end_ms)::VARCHAR) || otlp_pair('agentId', otlp_string(agent_id))
                || otlp_pair('trace', trace) || otlp_pair('name', otlp_string(name))
                || {_end_fields()} || '}}' AS end_body
        FROM mapped
    )
    -- a span carrying the events it was exported from is those events (`formats/native.py`)
    SELECT unnest(texts) AS body, (line - 1) * {LINE_STRIDE} + 2 * (k - 1) + unnest(range(1, len(texts) + 1)) AS n
    FROM (
        SELECT line, k,
            CASE WHEN carried IS NULL THEN [start_body, end_body] ELSE {_carried()} END AS texts
        FROM bodies
    )
    )"""


def _carried() -> str:
    """The event texts a span carries, when they are at most two and of its own trace."""
    texts = "from_json(carried, '[\"VARCHAR\"]')"
    wrong = (
        f"list_bool_or(list_transform({texts}, lambda b: (b::JSON ->> '$.trace.traceId') IS DISTINCT FROM trace_id))"
    )
    refused = fail(f"span: {EVENTS} is not the texts of at most {MAX_CARRIED} events of the span's trace")
    bad = f"json_type(carried) <> 'ARRAY' OR len({texts}) > {MAX_CARRIED} OR {wrong}"
    return f"CASE WHEN {bad} THEN {refused} ELSE {texts} END"


# otlp_map._failed: status ERROR, or no status and a GenAI `error.type`.
_FAILED = f"(status_code = 2 OR (status_code = 0 AND otlp_text(m, {q(sc.ERROR_TYPE)}) IS NOT NULL))"


def _error() -> str:
    """otlp_map._error: the last exception event, `error.type`, the status message."""
    exception = f"list_last(list_filter(evs, lambda e: e.name = {q(sc.EXCEPTION_EVENT)})).a"
    name = f"coalesce(otlp_text({exception}, {q(sc.EXCEPTION_TYPE)}), otlp_text(m, {q(sc.ERROR_TYPE)}), 'Error')"
    message = f"coalesce(nullif(status_message, ''), otlp_text({exception}, {q(sc.EXCEPTION_MESSAGE)}), {name})"
    stack = f"otlp_text({exception}, {q(sc.EXCEPTION_STACK)})"
    return (
        f"""'{{"name":' || otlp_string({name}) || ',"message":' || otlp_string({message})"""
        f""" || otlp_pair('stack', otlp_string({stack})) || '}}'"""
    )


def _otel() -> str:
    """otlp_map._otel: everything the span said. Written by concatenation: DuckDB slows down badly
    when a list of entries (`otlp_object`) holds expressions over the span's nested columns."""
    events = (
        """otlp_array(list_transform(evs, lambda e: '{"name":' || otlp_string(e.name) """
        """|| ',"timestamp":' || to_json(otlp_ms(e.ns)) || ',"attributes":' || otlp_map_json(e.a) || '}'))"""
    )
    return f"""'{{"name":' || otlp_string(name) || ',"kind":' || otlp_string({_KINDS}[kind_code + 1])
                || ',"status":{{"code":' || otlp_string({_STATUS}[status_code + 1])
                || ',"message":' || otlp_string(status_message) || '}}'
                || ',"scope":{{"name":' || otlp_string(coalesce(scope.name, ''))
                || ',"version":' || otlp_string(coalesce(scope.version, '')) || '}}'
                || ',"resource":' || resource || ',"attributes":' || otlp_map_json(m)
                || ',"events":' || {events} || ',"links":' || links
                || ',"traceState":' || otlp_string(trace_state) || '}}'"""


def _turn_messages() -> str:
    """otlp_map._turn_messages."""
    return f"""CASE WHEN system_message IS NOT NULL OR genai_in IS NOT NULL
            THEN otlp_array(list_concat(list_filter([system_message], lambda s: s IS NOT NULL), coalesce(genai_in, [])))
            ELSE nullif(otlp_array(coalesce(otlp_oi_messages(m, {q(sc.OI_INPUT)}), otlp_event_messages(evs))),
                        '[]') END"""


def _usage() -> str:
    """otlp_map._usage, over `tokens`: [prompt, completion, total, cache read, cache write]."""
    total = (
        "coalesce(tokens[3], CASE WHEN tokens[1] IS NOT NULL OR tokens[2] IS NOT NULL "
        "THEN coalesce(tokens[1], 0) + coalesce(tokens[2], 0) END)"
    )
    details = (
        "nullif(otlp_object([('cacheReadTokens', tokens[4]::VARCHAR), ('cacheWriteTokens', tokens[5]::VARCHAR)]), '{}')"
    )
    return (
        "nullif(otlp_object([('promptTokens', tokens[1]::VARCHAR), ('completionTokens', tokens[2]::VARCHAR), "
        f"('totalTokens', ({total})::VARCHAR), ('details', {details})]), '{{}}')"
    )


def _start_fields() -> str:
    """The fields of a start event past the common ones, by kind (`otlp_map.span_events`)."""
    return f"""CASE kind
            WHEN 'agent'
            THEN otlp_pair('props', coalesce(input, CASE WHEN genai_in IS NOT NULL THEN otlp_array(genai_in) END))
            WHEN 'turn' THEN otlp_pair('model', model) || otlp_pair('messages', {_turn_messages()})
            WHEN 'tools:execute' THEN otlp_pair('toolNames', otlp_array([otlp_string(tool)])) || ',"toolCallsCount":1'
            ELSE otlp_pair('props', input)
        END"""


def _end_fields() -> str:
    closing = "otlp_pair('duration', duration) || otlp_pair('success', success) || otlp_pair('error', error)"
    result = (
        """'[{"toolName":' || otlp_string(tool) """
        f"|| otlp_pair('toolCallId', otlp_string(otlp_first_text(m, {names(sc.TOOL_CALL_ID)}))) "
        f"|| otlp_pair('input', input) || otlp_pair('output', output) || {closing} || '}}]'"
    )
    answer = f"coalesce(genai_out, otlp_oi_messages(m, {q(sc.OI_OUTPUT)})[1], otlp_event_answer(evs))"
    return f"""CASE kind
            WHEN 'agent' THEN {closing} || otlp_pair('result', coalesce(output, genai_out))
            WHEN 'turn' THEN otlp_pair('model', model) || {closing} || otlp_pair('message', {answer})
                             || otlp_pair('usage', {_usage()}) || otlp_pair('costs', costs)
            WHEN 'tools:execute' THEN otlp_pair('toolNames', otlp_array([otlp_string(tool)])) || ',"toolCallsCount":1'
                                      || {closing} || otlp_pair('toolResults', {result})
            ELSE {closing} || otlp_pair('result', output)
        END"""
