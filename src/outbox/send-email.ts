import { recordDevMail } from "../db/dev-mail";
import { nowIso } from "../domain/dates";
import { headerText } from "./mail-headers";

/**
 * The one place the service sends an email (the outbox consumer's deliveries
 * and the dashboard's password resets): through the `EMAIL` binding and, in
 * local development (ENVIRONMENT=development, as http/admin-token.ts decides
 * it), also into the local mailbox read at GET /dev/mail.
 */
export interface OutgoingEmail {
	from: string;
	to: string;
	toName?: string | null;
	subject: string;
	text: string;
	html: string;
}

export async function sendEmail(env: Pick<Env, "EMAIL" | "DB"> & { ENVIRONMENT?: string }, email: OutgoingEmail): Promise<void> {
	// Again at sending: a payload stored before headerText existed must not add a header either.
	const toName = headerText(email.toName);
	const subject = headerText(email.subject) || "(no subject)";
	await env.EMAIL.send({
		from: email.from,
		to: toName ? { name: toName, email: email.to } : email.to,
		subject,
		text: email.text,
		html: email.html,
	});
	if (env.ENVIRONMENT === "development")
		await recordDevMail(env.DB, { to: email.to, subject, text: email.text, html: email.html }, nowIso());
}
