import { queueProjection } from "./outbox";

const CUSTOMER_ID = /\bcus_[A-Za-z0-9]+/g;

/** The comments of this ledger's rewards without the person's values or Stripe customer ids (a ledger holds one user's rewards). */
export function redactComments(sql: SqlStorage, values: string[]): void {
	const rows = sql.exec<{ seq: number; comment: string }>("SELECT seq, comment FROM rewards WHERE comment IS NOT NULL").toArray();
	for (const row of rows) {
		let comment = row.comment.replace(CUSTOMER_ID, "[redacted]");
		for (const value of values) if (value.length >= 3) comment = comment.split(value).join("[redacted]");
		if (comment === row.comment) continue;
		const { version } = sql
			.exec<{ version: number }>("UPDATE rewards SET comment = ?, version = version + 1 WHERE seq = ? RETURNING version", comment, row.seq)
			.one();
		// The projection (admin reads) takes the redacted comment on the next flush.
		queueProjection(sql, row.seq, version, Date.now());
	}
}
