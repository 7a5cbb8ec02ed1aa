// Preloaded (`node --import`) by tests of scripts that must not reach the
// network nor start a process (provision's --dry-run): every way out throws.
import childProcess from "node:child_process";
import dns from "node:dns";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

const refuse = (what) => () => {
	throw new Error(`no-network: ${what} called`);
};
for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"])
	childProcess[name] = refuse(`child_process.${name}`);
net.connect = net.createConnection = refuse("net.connect");
dns.lookup = refuse("dns.lookup");
globalThis.fetch = refuse("fetch");
syncBuiltinESMExports();
