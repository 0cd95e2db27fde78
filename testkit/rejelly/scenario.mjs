// The interop scenario of issue 18, as a real @rejelly/core 0.1.0 program: an orchestrator runs
// three workers in parallel (each asks the model once for two tool calls, then once for its
// answer), then a sub-agent that throws (caught), then asks the model for a summary.
//
// stdin: {"endpoint"?: review URL, "snapshot"?: AgentSnapshot to replay, "props"?: {...}}
// stdout: {"result", "error", "modelCalls", "events": every TraceEvent the run emitted}
import { createAgent, equipInstruction, equipMemory, equipTool, getGlobalEventBus, promptChat, runWith } from "@rejelly/core";
import { enableReview } from "@rejelly/core/debugger";
import { createMockModel } from "@rejelly/core/testing";
import { z } from "zod";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text || "{}"));
}));

const hasToolResult = (payload) => payload.messages.some((m) => m.role === "tool");
const model = createMockModel();
model.setDefaultUsage({ promptTokens: 12, completionTokens: 5 });
model.setCostCalculator((usage) => ({ micro_usd: usage.promptTokens * 2 + usage.completionTokens * 8 }));
for (const n of [0, 1, 2]) {
  model
    .when((p) => !hasToolResult(p) && p.userMessages.some((text) => text.includes(`worker ${n}`)))
    .thenCallTools([
      { id: `call_${n}a`, name: "lookup", arguments: { key: `k${n}a` } },
      { id: `call_${n}b`, name: "lookup", arguments: { key: `k${n}b` } },
    ]);
}
model.when((p) => p.userMessages.some((text) => text.includes("summarise"))).thenReturn("all workers done");
model.when(hasToolResult).thenReturn("worker done");

const lookup = {
  name: "lookup",
  description: "look a key up",
  parameters: z.object({ key: z.string() }),
  handler: async ({ key }) => ({ key, value: key.toUpperCase() }),
};

const worker = createAgent({
  id: "worker",
  model: model.adapter,
  handler: async (props) => {
    const [, setSeen] = equipMemory("seen", 0);
    equipInstruction(`worker ${props.n}`);
    equipTool(lookup);
    const answer = await promptChat();
    setSeen(props.n + 1);
    return answer.data;
  },
});
const flaky = createAgent({
  id: "flaky",
  model: model.adapter,
  handler: async () => {
    throw new Error("flaky sub-agent failed");
  },
});
const orchestrator = createAgent({
  id: "orchestrator",
  model: model.adapter,
  handler: async (props) => {
    const [, setTopic] = equipMemory("topic", "");
    setTopic(props.topic);
    const answers = await Promise.all([0, 1, 2].map((n) => worker({ n })));
    let failure = null;
    try {
      await flaky({});
    } catch (error) {
      failure = String(error.message);
    }
    equipInstruction("summarise the workers");
    const summary = await promptChat();
    return { answers, failure, summary: summary.data };
  },
});

const events = [];
getGlobalEventBus().subscribe("*", (event) => events.push(event));
const stopReview = input.endpoint
  ? enableReview({ endpoint: input.endpoint, batchSize: 20, flushInterval: 50, registerShutdown: false })
  : null;
let result = null;
let error = null;
try {
  result = await runWith(async (props) => orchestrator(props), {
    initialProps: input.props ?? { topic: "interop" },
    snapshot: input.snapshot,
    enableSnapshot: true,
  });
} catch (exc) {
  error = String(exc?.message ?? exc);
}
if (stopReview) await stopReview();
process.stdout.write(JSON.stringify({ result, error, modelCalls: model.calls.count(), events }));
