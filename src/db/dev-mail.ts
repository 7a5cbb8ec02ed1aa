import { z } from "zod";
import { rowsOf } from "./rows";

/**
 * Local mail (migration 0020): in development every email the service sends
 * is also kept here, for GET /dev/mail and the dashboard's Mail page. A
 * deployed Worker never writes or reads it (http/dev-mail.ts answers 404).
 */

const devMailRow = z.object({ to: z.string(), subject: z.string(), text: z.string(), html: z.string(), sentat: z.string() });
export type DevMail = z.output<typeof devMailRow>;

export async function recordDevMail(db: D1Database, mail: { to: string; subject: string; text: string; html: string }, at: string) {
	await db
		.prepare("INSERT INTO dev_mail (to_address, subject, text, html, sent_at) VALUES (?, ?, ?, ?, ?)")
		.bind(mail.to, mail.subject, mail.text, mail.html, at)
		.run();
}

/** The newest `limit` emails, newest first (the primary key read backwards: a bounded range, local only). */
export async function listDevMail(db: D1Database, limit = 100): Promise<DevMail[]> {
	const result = await db
		.prepare('SELECT to_address AS "to", subject, text, html, sent_at AS sentat FROM dev_mail ORDER BY seq DESC LIMIT ?')
		.bind(limit)
		.all();
	return rowsOf<unknown>(result).map((row) => devMailRow.parse(row));
}
