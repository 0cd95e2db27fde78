// @rejelly/core's own restoreSnapshot over a trace, with every warning it printed.
// stdin: {"events": [TraceEvent], "spanId"?: string, "anchor"?: "before"|"after"}
// stdout: {"snapshot": AgentSnapshot|null, "error": string|null, "warnings": [string]}
import { restoreSnapshot } from "@rejelly/core/debugger";

let text = "";
for await (const chunk of process.stdin) text += chunk;
const input = JSON.parse(text);
const warnings = [];
for (const level of ["warn", "error"]) {
  console[level] = (...args) => warnings.push(args.map(String).join(" "));
}
let snapshot = null;
let error = null;
try {
  snapshot = restoreSnapshot(input.events, { spanId: input.spanId, anchor: input.anchor });
} catch (exc) {
  error = String(exc?.message ?? exc);
}
process.stdout.write(JSON.stringify({ snapshot, error, warnings }));
