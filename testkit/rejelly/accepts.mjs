// Whether @rejelly/core's runWith accepts snapshots: it validates one (zod) before it runs anything.
// stdin: an AgentSnapshot, or a JSON array of them
// stdout: {"accepted": bool, "error": string|null}, or an array of those
import { runWith } from "@rejelly/core";

let text = "";
for await (const chunk of process.stdin) text += chunk;
const input = JSON.parse(text);

async function check(snapshot) {
  try {
    await runWith(async () => 0, { snapshot, enableSnapshot: true });
    return { accepted: true, error: null };
  } catch (exc) {
    return { accepted: false, error: String(exc?.message ?? exc) };
  }
}

const answers = [];
for (const snapshot of Array.isArray(input) ? input : [input]) answers.push(await check(snapshot));
process.stdout.write(JSON.stringify(Array.isArray(input) ? answers : answers[0]));
