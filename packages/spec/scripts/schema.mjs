// Writes schema/agent.schema.json from the zod schema in src/schema.ts, so the JSON Schema that
// editors read is generated rather than kept by hand.
//   pnpm schema         regenerate it
//   pnpm schema:check   exit 1 when the committed file differs from what would be generated
// Run through tsx (the package scripts do), since it imports the TypeScript source.
import { readFileSync, writeFileSync } from "node:fs";
import { agentSpecJsonSchema } from "../src/schema.ts";

const target = new URL("../schema/agent.schema.json", import.meta.url);
const generated = `${JSON.stringify(agentSpecJsonSchema(), null, 2)}\n`;

if (process.argv.includes("--check")) {
  let committed = "";
  try {
    committed = readFileSync(target, "utf8");
  } catch {
    // missing reads as drift
  }
  if (committed !== generated) {
    console.error(
      "packages/spec/schema/agent.schema.json is out of date with src/schema.ts: run `pnpm --filter @loopwright/spec schema` and commit it.",
    );
    process.exit(1);
  }
  console.log("schema/agent.schema.json matches src/schema.ts");
} else {
  writeFileSync(target, generated);
  console.log("wrote schema/agent.schema.json");
}
