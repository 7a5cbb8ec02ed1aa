// `BENCH_API_DOC=1 npm run bench`: writes the measured latency of each
// operation into docs/api.md ("Latency"), between the markers below, so the
// published figures are the bench's own and are regenerated, never typed.
// A run of some rows only (BENCH_ONLY) replaces those rows and keeps the
// others with the date they were measured.

export const START = "<!-- bench:latency:start -->";
export const END = "<!-- bench:latency:end -->";

/** What a bench row measures, as a reader of docs/api.md names it. */
function operationOf(row) {
	const first = row.title.split(" ")[0];
	return `\`${/^[a-z]+$/.test(first) ? first : row.title.replace(/ \(.*$/, "")}\``;
}

const fmt = (n) => (typeof n === "number" && Number.isFinite(n) ? String(Math.round(n * 100) / 100) : "-");

/** The rows of an existing table, by bench id: `| op | \`id\` | ... |`. */
export function existingRows(doc) {
	const at = doc.indexOf(START);
	const end = doc.indexOf(END);
	if (at < 0 || end < at) return new Map();
	const rows = new Map();
	for (const line of doc.slice(at, end).split("\n")) {
		// Biome aligns the table's columns after a run (bench/run.mjs), so cells may be padded.
		const id = /^\|[^|]+\|\s*`([\w-]+)`\s*\|/.exec(line)?.[1];
		if (id) rows.set(id, line);
	}
	return rows;
}

/** The section between the markers: how it was measured, then one row per bench row. */
export function latencyTable(rows, { machine, connections, duration, when, note, previous = new Map() }) {
	const day = when.slice(0, 10);
	const lines = new Map(previous);
	for (const row of rows) {
		if (!Number.isFinite(row.p50)) continue;
		lines.set(
			row.id,
			`| ${operationOf(row)} | \`${row.id}\` | ${fmt(row.p50)} | ${fmt(row.p99)} | ${fmt(row.rps)} | ${row.errors ?? 0} | ${day} |`,
		);
	}
	return [
		START,
		`Measured by \`BENCH_API_DOC=1 npm run bench\` (bench/run.mjs; bench/README.md says what each row does) under`,
		`\`wrangler dev\` on one machine: ${machine.nproc} × ${machine.cpu ?? "?"}, ${machine.memGiB} GiB, Node ${machine.node},`,
		`wrangler ${machine.wrangler ?? "?"}; ${connections} concurrent connections for ${duration} s per row (the latest run: ${day}).${note ? ` ${note}` : ""}`,
		"Latency is the client's, request to answer, with the load of the other connections; a deployed Worker",
		"runs nearer its D1 and Durable Objects, so read these as relative costs and an upper bound, not a promise.",
		"",
		"| operation | bench row | p50 ms | p99 ms | req/s | errors | measured |",
		"| --- | --- | ---: | ---: | ---: | ---: | --- |",
		...lines.values(),
		END,
	].join("\n");
}

/** docs/api.md with the section between the markers replaced. */
export function withLatencyTable(doc, table) {
	const at = doc.indexOf(START);
	const end = doc.indexOf(END);
	if (at < 0 || end < at) throw new Error(`docs/api.md has no ${START} ... ${END} section`);
	return doc.slice(0, at) + table + doc.slice(end + END.length);
}
