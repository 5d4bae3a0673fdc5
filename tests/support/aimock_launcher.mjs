// Runs aimock's CLI (argv: CLI path, then its arguments) and exits when stdin closes, so a
// test process that dies, even by SIGKILL, never leaves the server behind.
import { pathToFileURL } from "node:url";

const [cli, ...args] = process.argv.slice(2);
process.argv = [process.argv[0], cli, ...args];
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
await import(pathToFileURL(cli).href);
