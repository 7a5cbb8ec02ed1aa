import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addFraudSignalsColumn } from "../../src/ledger/schema";
import { freshLedger, grantOf } from "../ledger/support";

const columns = (sql: SqlStorage) =>
	sql
		.exec<{ name: string }>("SELECT name FROM pragma_table_info('rewards')")
		.toArray()
		.map((c) => c.name);

describe("MIGRATION(issue-13): rewards.fraudsignals in the ledger", () => {
	it("adds the column to a ledger created before it, keeps its rewards (read as no signals), and is idempotent", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf({ fraudsignals: ["same_ip"] })]);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			// Back to the old shape, with a reward in it.
			sql.exec("ALTER TABLE rewards DROP COLUMN fraudsignals");
			expect(columns(sql)).not.toContain("fraudsignals");
			addFraudSignalsColumn(sql);
			addFraudSignalsColumn(sql);
			expect(columns(sql).filter((c) => c === "fraudsignals")).toHaveLength(1);
		});
		const [reward] = await stub.listRewards();
		expect(reward).toMatchObject({ reward: "10", fraudsignals: [] });
		await stub.grant(appid, userkey, [grantOf({ fraudsignals: ["velocity"] })]);
		expect((await stub.listRewards()).map((r) => r.fraudsignals)).toEqual([[], ["velocity"]]);
	});
});
