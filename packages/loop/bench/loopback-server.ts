// The loopback server for the soak benchmark, in its own process so that what it records of each
// request is not counted in the benchmark's heap. Prints its base URL, then serves until killed.
import { startServer } from "@loopwright/testkit";

const server = await startServer({ replies: () => ({ content: "ok", usage: { prompt_tokens: 40 } }) });
// It keeps no record: the benchmark sends thousands of requests.
setInterval(() => {
  server.requests.length = 0;
  server.chatRequests.length = 0;
}, 1000);
console.log(server.baseUrl);
