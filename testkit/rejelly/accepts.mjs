// Whether @rejelly/core's runWith accepts a snapshot: it validates one (zod) before it runs anything.
// stdin: an AgentSnapshot; stdout: {"accepted": bool, "error": string|null}
import { runWith } from "@rejelly/core";

let text = "";
for await (const chunk of process.stdin) text += chunk;
try {
  await runWith(async () => 0, { snapshot: JSON.parse(text), enableSnapshot: true });
  process.stdout.write(JSON.stringify({ accepted: true, error: null }));
} catch (exc) {
  process.stdout.write(JSON.stringify({ accepted: false, error: String(exc?.message ?? exc) }));
}
