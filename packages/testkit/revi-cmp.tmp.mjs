import { readFileSync } from "node:fs";
import { startServer } from "@loopwright/testkit";
const dir = "recordings/llamacpp-live/";
const shape = (v) => Array.isArray(v) ? v.map(shape) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map(k => [k, shape(v[k])])) : typeof v;
function frames(text) {
  const body = !text.startsWith("HTTP/") ? text : text.includes("\r\n\r\n") || text.startsWith("HTTP/") ? text.slice(text.search(/\r?\n\r?\n/)).trim() : text;
  if (!body.startsWith("data:")) { try { return [JSON.parse(body)]; } catch { return [body]; } }
  return body.split(/\n\n/).map(f => f.replace(/^data: /, "").trim()).filter(Boolean).map(f => f === "[DONE]" ? f : JSON.parse(f));
}
for (const name of process.argv.slice(2)) {
  const req = JSON.parse(readFileSync(dir + name + ".request.json", "utf8"));
  const rec = readFileSync(dir + name + ".response.txt", "utf8");
  const recFrames = frames(rec);
  // Build a reply like the recording
  const s = await startServer({ personality: "llamacpp", scriptedModel: true });
  const res = await fetch(s.baseUrl + "/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(req) });
  const text = await res.text();
  console.log("=====", name, "status rec", rec.split("\n")[0], "sim", res.status);
  const hdrRec = rec.split(/\r?\n\r?\n/)[0].split("\n").slice(1).map(l=>l.trim()).join(" | ");
  console.log("rec headers:", hdrRec);
  console.log("sim headers:", [...res.headers].map(([k,v])=>`${k}: ${v}`).join(" | "));
  const simFrames = frames(text.trim().startsWith("data:") ? text.trim() : text);
  const sh = (fs) => fs.map(f => JSON.stringify(shape(f)));
  const a = sh(recFrames), b = sh(simFrames);
  console.log("rec frames", a.length, "sim", b.length);
  console.log("REC first/last:\n ", a[0], "\n ", a.at(-2), "\n ", a.at(-1));
  console.log("SIM first/last:\n ", b[0], "\n ", b.at(-2), "\n ", b.at(-1));
  console.log("SIM raw first:", JSON.stringify(simFrames[0]).slice(0,400));
  console.log("REC raw first:", JSON.stringify(recFrames[0]).slice(0,400));
  await s.close();
}
