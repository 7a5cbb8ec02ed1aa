import { env } from "cloudflare:workers";
import { csrfOf, fetchPage } from "./dashboard";

/**
 * The invitation emails the service recorded for delivery (workerd tests):
 * the only place an invitation's link exists besides the person's mailbox.
 * Read from the outbox row itself, so a test does not wait for the queue.
 */
export async function invitationLinkFor(appid: string, email: string): Promise<string> {
	const row = await env.DB.prepare(
		`SELECT payload FROM outbox_events WHERE appid = ? AND type = 'email.invitation'
		 AND json_extract(payload, '$.to') = ? ORDER BY created_at DESC, eventid DESC LIMIT 1`,
	)
		.bind(appid, email)
		.first<{ payload: string }>();
	const text = row ? String((JSON.parse(row.payload) as { text: string }).text) : "";
	const link = /https?:\/\/\S+\/dashboard\/invitations\/inv_[0-9a-z]+/.exec(text)?.[0];
	if (!link) throw new Error(`no invitation email to ${email} for ${appid}`);
	return link;
}

const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0] ?? "";

/**
 * Accepts the person's invitation to `appid` from their mailbox as they
 * would: opens the link, posts the password (a new person repeats it).
 * Answers the response and the session cookie it set.
 */
export async function acceptFromMailbox(
	appid: string,
	email: string,
	password: string,
	headers: Record<string, string> = {},
	fields: Record<string, string> = {},
) {
	const path = new URL(await invitationLinkFor(appid, email)).pathname;
	const page = await fetchPage(path);
	const html = await page.text();
	const res = await fetchPage(path, {
		method: "POST",
		headers: { cookie: cookieOf(page, "dash_login"), ...headers },
		body: new URLSearchParams({ _csrf: csrfOf(html), password, password2: password, ...fields }),
	});
	return { res, cookie: cookieOf(res, "dash_session"), path };
}
