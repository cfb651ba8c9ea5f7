// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): `startServer` reads an option that is `undefined` as
// absent, so a test helper can forward its own optional parameters. This was a TS2379 error before.
import { startServer, type TestServer } from "./index.js";

export function server(port?: number, prefixCache?: boolean): Promise<TestServer> {
  return startServer({ replies: [{ content: "hi", finishReason: undefined }], port, prefixCache });
}
