// Runs process-table's markedProcesses once for the token given as the argument and prints the
// pids it found as JSON: run by the tests under a low open-file limit (`ulimit -n`).
import { markedProcesses } from "../src/process-table.js";

const token = process.argv[2];
if (!token) throw new Error("usage: marked-host.mts <token>");
const found = await markedProcesses(token);
console.log(JSON.stringify(found.map((entry) => entry.pid).sort((a, b) => a - b)));
