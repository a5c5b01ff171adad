// The ranking rule in plain JavaScript, as the brief's TypeScript tool would run it: the Node
// reference bench/bench.py times `codescout rank` against (`node rank.mjs args.json`).
// It checks what the contract requires and prints the same pretty JSON; bench.py compares the
// two outputs before it trusts either time. Not a second implementation to maintain: it has no
// error messages beyond a first complaint, and no CLI options.
import { readFileSync } from "node:fs";

function fail(message) {
  process.stderr.write(`reference: ${message}\n`);
  process.exit(1);
}

const isCount = (value, least) => Number.isInteger(value) && value >= least;
const WHITESPACE_ONLY = /^\s*$/u;

const args = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (args === null || typeof args !== "object" || Array.isArray(args)) fail("arguments: not an object");
const { hits } = args;
const limit = args.limit === undefined ? 10 : args.limit;
if (!Array.isArray(hits) || hits.length === 0) fail("hits: not a non-empty array");
if (!isCount(limit, 1)) fail("limit: not an integer of at least 1");

const seen = new Set();
const scored = hits.map((hit, index) => {
  if (hit === null || typeof hit !== "object" || Array.isArray(hit)) fail(`hits[${index}]: not an object`);
  const { path, matches, last_modified_days: days, owner } = hit;
  if (typeof path !== "string" || path.length === 0) fail(`hits[${index}].path`);
  if (!isCount(matches, 1)) fail(`hits[${index}].matches`);
  if (!isCount(days, 0)) fail(`hits[${index}].last_modified_days`);
  if (owner !== undefined && typeof owner !== "string") fail(`hits[${index}].owner`);
  if (seen.has(path)) fail(`hits[${index}].path: duplicate`);
  seen.add(path);
  return { path, matches, days, owner, score: matches * 100 - days };
});

// Score high to low, then matches high to low, then younger first, then path by UTF-16 units.
scored.sort(
  (a, b) =>
    b.score - a.score || b.matches - a.matches || a.days - b.days || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
);
const results = scored.slice(0, limit).map((hit, index) => ({
  path: hit.path,
  matches: hit.matches,
  last_modified_days: hit.days,
  owner: typeof hit.owner === "string" && !WHITESPACE_ONLY.test(hit.owner) ? hit.owner : null,
  score: hit.score,
  rank: index + 1,
}));
process.stdout.write(
  `${JSON.stringify({ results, counts: { hits: hits.length, returned: results.length } }, null, 2)}\n`,
);
