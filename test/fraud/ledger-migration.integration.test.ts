import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrateLedger } from "../../src/ledger/migrate";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { freshLedger, grantOf } from "../ledger/support";

const columns = (sql: SqlStorage) =>
	sql
		.exec<{ name: string }>("SELECT name FROM pragma_table_info('rewards')")
		.toArray()
		.map((c) => c.name);

describe("ledger schema step 3: rewards.fraudsignals", () => {
	it("adds the column to a ledger at version 2, keeps its rewards (read as no signals), and runs once", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf({ fraudsignals: ["same_ip"] })]);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			// Back to the shape of version 2, with a reward in it.
			sql.exec("ALTER TABLE rewards DROP COLUMN fraudsignals");
			sql.exec("UPDATE meta SET value = '2' WHERE key = 'schema_version'");
			expect(columns(sql)).not.toContain("fraudsignals");
			// Steps up to 3 only: later steps were already applied to this object.
			expect(migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, 3))).toBe(3);
			expect(migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, 3))).toBe(3);
			expect(columns(sql).filter((c) => c === "fraudsignals")).toHaveLength(1);
		});
		const [reward] = await stub.listRewards();
		expect(reward).toMatchObject({ reward: "10", fraudsignals: [] });
		await stub.grant(appid, userkey, [grantOf({ fraudsignals: ["velocity"] })]);
		expect((await stub.listRewards()).map((r) => r.fraudsignals)).toEqual([[], ["velocity"]]);
	});
});
