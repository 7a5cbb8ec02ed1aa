import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { END, existingRows, latencyTable, START, withLatencyTable } from "../../bench/api-doc.mjs";

// Published limits (issue 51): docs/api.md's latency table is written by the
// bench (`BENCH_API_DOC=1 npm run bench`, bench/api-doc.mjs), never by hand.
const API_DOC = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
const machine = { nproc: 2, cpu: "Test CPU", memGiB: 4, node: "v24.0.0", wrangler: "4.0.0" };
const row = (id: string, title: string, p50: number, p99: number) => ({ id, title, p50, p99, rps: 100, errors: 0 });

describe("the latency table of docs/api.md", () => {
	it("is the bench's: the machine, the settings and one row per measured operation with p50 and p99", () => {
		const section = API_DOC.slice(API_DOC.indexOf(START), API_DOC.indexOf(END));
		expect(section).toMatch(/Measured by `BENCH_API_DOC=1 npm run bench`/);
		expect(section).toMatch(/under\n`wrangler dev` on one machine: \d+ × /);
		const rows = existingRows(API_DOC);
		for (const id of ["campaignterms", "register", "conversion", "balance-small", "friends-small", "redeem", "leaderboard"])
			expect(rows.get(id), id).toMatch(/^\| `\w+` +\| `[\w-]+` +\| +[\d.]+ \| +[\d.]+ \| +[\d.]+ \| +\d+ \| \d{4}-\d\d-\d\d \|$/);
	});

	it("is regenerated between its markers, a partial run keeping the other rows", () => {
		const doc = `# API\n\n${START}\nold\n${END}\n\nafter\n`;
		const first = withLatencyTable(
			doc,
			latencyTable([row("register", "register (new users)", 10.123, 40), row("redeem", "redeemrewards amount 0.01", 12, 50)], {
				machine,
				connections: 16,
				duration: 3,
				when: "2026-11-29T08:00:00Z",
			}),
		);
		expect(first).toContain("| `register` | `register` | 10.12 | 40 | 100 | 0 | 2026-11-29 |");
		expect(first).toContain("\nafter\n");
		const second = withLatencyTable(
			first,
			latencyTable([row("register", "register (new users)", 9, 30)], {
				machine,
				connections: 16,
				duration: 3,
				when: "2026-12-01T08:00:00Z",
				note: "A quiet machine.",
				previous: existingRows(first),
			}),
		);
		expect(second).toContain("| `register` | `register` | 9 | 30 | 100 | 0 | 2026-12-01 |");
		expect(second).toContain("| `redeemrewards` | `redeem` | 12 | 50 | 100 | 0 | 2026-11-29 |");
		expect(second).toContain("A quiet machine.");
		expect(() => withLatencyTable("# no markers", "x")).toThrow(/no <!-- bench:latency:start -->/);
	});
});
