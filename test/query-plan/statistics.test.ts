import { describe, expect, it } from "vitest";
import { LARGE_ROWS, SMALL_ROWS, statsFor } from "./statistics";

/** The statistics the query-plan guard writes to make SQLite plan as for a large database (statistics.ts). */
describe("statsFor", () => {
	it("describes a growing table as large and narrows each index by its columns' kinds", () => {
		const rows = statsFor("users", true, [
			{ name: "users_app_email", unique: true, partial: false, columns: ["appid", "email"] },
			{ name: "users_app", unique: false, partial: false, columns: ["appid", "campaignid", "created_at"] },
			{ name: "users_referrer", unique: false, partial: false, columns: ["referrer_userid"] },
			{ name: "users_erased", unique: false, partial: true, columns: ["appid", "erased_at"] },
		]);
		expect(rows).toEqual([
			{ tbl: "users", idx: null, stat: String(LARGE_ROWS) },
			// An app's rows, then one per key of a unique index.
			{ tbl: "users", idx: "users_app_email", stat: "1000000 1000 1" },
			// An app's rows, a campaign's of them, then a time: nearly unique.
			{ tbl: "users", idx: "users_app", stat: "1000000 1000 100 1" },
			// A referrer's friends: some ten.
			{ tbl: "users", idx: "users_referrer", stat: "1000000 10" },
			// A partial index holds a hundredth of the rows.
			{ tbl: "users", idx: "users_erased", stat: "10000 10 1" },
		]);
	});

	it("describes a bounded table as a handful of rows, never fewer than one per key", () => {
		expect(statsFor("meta", false, [{ name: "meta_key", unique: true, partial: false, columns: ["key"] }])).toEqual([
			{ tbl: "meta", idx: null, stat: String(SMALL_ROWS) },
			{ tbl: "meta", idx: "meta_key", stat: "10 1" },
		]);
		expect(statsFor("w", false, [{ name: "w_kind", unique: false, partial: true, columns: ["kind", "state"] }])).toEqual([
			{ tbl: "w", idx: null, stat: "10" },
			{ tbl: "w", idx: "w_kind", stat: "1 1 1" },
		]);
	});
});
