// Token counts as OpenAI's o200k_base encoding gives them: one JSON string per line in, one count per line out.
import { getEncoding } from "js-tiktoken";
import { createInterface } from "node:readline";

const encoding = getEncoding("o200k_base");
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim()) process.stdout.write(`${encoding.encode(JSON.parse(line)).length}\n`);
}
